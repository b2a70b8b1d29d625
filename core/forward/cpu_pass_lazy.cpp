// LazyLLM inside the forward pass (Fu et al. 2024): at a sequence's pruning
// layers, its last token's attention decides which tokens go on; the others
// skip the rest of this step, their hidden states kept in the aux cache.
// A later step whose last token wants such a token again resumes it from the
// aux cache at the layer after the one it stopped at, so no token is ever
// computed twice at one layer.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/forward/cpu_pass.h"
#include "core/lazyllm/lazy_prune.h"

namespace prepack {

void ForwardPass::ScoreLastQueries(const StepPlan& plan, int32_t layer) {
    const cpu::AttentionShape shape = LayerAttentionShape(model_.config(), layer);
    const cpu::PagedKv kv = pool_.Layer(layer);
    lazy_scores_.resize(plan.seqs.size());
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        if (!PruneCanChange(s, seq_rows_[k], layer)) continue;
        const int32_t horizon = row_slot_[seq_rows_[k].begin + seq_rows_[k].count - 1];
        lazy_scores_[k].resize(static_cast<size_t>(horizon) + 1);
        const LazyScoring& scoring = s.lazy->scoring();
        cpu::LastQueryScores(qkv_.data(), shape, spans_[k], kv, {scoring.window, scoring.head_max},
                             lazy_scores_[k].data());
    }
}

void ForwardPass::Prune(const StepPlan& plan, int32_t layer) {
    const int64_t d = model_.config().dim;
    PrunedRows next = PlanPrune(plan, layer, seq_rows_, row_pos_, row_slot_, lazy_scores_,
                                reinterpret_cast<const char*>(x_.data()), d * sizeof(float));
    if (next.unchanged) return;
    // Gather the new rows, then free the aux cells of revived tokens (their
    // states were read here).
    const int64_t t = static_cast<int64_t>(next.slot.size());
    x_next_.EnsureSize(std::max<int64_t>(t, 1) * d);
    for (int64_t r = 0; r < t; ++r) std::memcpy(x_next_.data() + r * d, next.source[r], d * sizeof(float));
    EraseRevived(plan, next);
    std::swap(x_, x_next_);   // x_ now holds the t new rows
    EnsureActivations(t);     // revived tokens can outnumber the rows a decode step began with
    row_pos_ = std::move(next.pos);
    row_slot_ = std::move(next.slot);
    seq_rows_ = std::move(next.seq_rows);
    PlanAttention(plan);
}

}  // namespace prepack
