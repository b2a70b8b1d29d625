// LazyLLM inside the forward pass (Fu et al. 2024): at a sequence's pruning
// layers, its last token's attention decides which tokens go on; the others
// skip the rest of this step, their hidden states kept in the aux cache.
// A later step whose last token wants such a token again resumes it from the
// aux cache at the layer after the one it stopped at, so no token is ever
// computed twice at one layer.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/forward.h"
#include "core/lazy_state.h"

namespace prepack {
namespace {

// The keep fraction of `lazy`'s schedule after `layer`, or a negative value
// when it does not prune there.
float KeepAfter(const LazyState& lazy, int32_t layer) {
    for (const LazyPoint& p : lazy.schedule()) {
        if (p.layer == layer) return p.keep;
    }
    return -1.0f;
}

}  // namespace

bool ForwardPass::PrunesAfter(const StepPlan& plan, int32_t layer) const {
    if (layer >= model_.config().n_layers - 1) return false;   // nothing left to skip
    for (const SeqStep& s : plan.seqs) {
        if (s.lazy != nullptr && KeepAfter(*s.lazy, layer) > 0.0f) return true;
    }
    return false;
}

void ForwardPass::ScoreLastQueries(const StepPlan& plan, int32_t layer) {
    const ModelConfig& c = model_.config();
    const cpu::AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim, c.qkv_dim(), c.q_dim()};
    const cpu::PagedKv kv = pool_.Layer(layer);
    lazy_scores_.resize(plan.seqs.size());
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        if (s.lazy == nullptr || KeepAfter(*s.lazy, layer) <= 0.0f) continue;
        const int32_t horizon = row_slot_[seq_rows_[k].begin + seq_rows_[k].count - 1];
        lazy_scores_[k].resize(static_cast<size_t>(horizon) + 1);
        cpu::LastQueryScores(qkv_.data(), shape, spans_[k], kv, lazy_scores_[k].data());
    }
}

void ForwardPass::Prune(const StepPlan& plan, int32_t layer) {
    const int64_t d = model_.config().dim;
    // The new row order: per sequence, its surviving and revived rows by token index.
    std::vector<int32_t> new_pos, new_slot;
    std::vector<SeqRows> new_seq_rows;
    std::vector<const float*> source;   // where each new row's hidden state comes from
    std::vector<uint8_t> selected, active;
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const SeqRows rows = seq_rows_[k];
        const int64_t begin = static_cast<int64_t>(new_slot.size());
        const float keep = s.lazy ? KeepAfter(*s.lazy, layer) : -1.0f;
        if (keep <= 0.0f) {
            for (int32_t i = 0; i < rows.count; ++i) {
                new_pos.push_back(row_pos_[rows.begin + i]);
                new_slot.push_back(row_slot_[rows.begin + i]);
                source.push_back(x_.data() + (rows.begin + i) * d);
            }
            new_seq_rows.push_back({begin, rows.count});
            continue;
        }
        LazyState& lazy = *s.lazy;
        const std::vector<float>& score = lazy_scores_[k];
        const int32_t last = row_slot_[rows.begin + rows.count - 1];
        // Candidates: every token this layer holds. Keep the best
        // ceil(keep * context) of them; the last token always stays.
        std::vector<int32_t> cand;
        for (int32_t j = 0; j < last; ++j) {
            if (lazy.depth(j) >= layer) cand.push_back(j);
        }
        const int32_t want = std::max<int32_t>(1, static_cast<int32_t>(std::ceil(keep * (last + 1)))) - 1;
        if (static_cast<int32_t>(cand.size()) > want) {
            std::nth_element(cand.begin(), cand.begin() + want, cand.end(), [&](int32_t a, int32_t b) {
                return score[a] > score[b] || (score[a] == score[b] && a > b);   // ties: the more recent token
            });
            cand.resize(want);
        }
        selected.assign(static_cast<size_t>(last) + 1, 0);
        for (int32_t j : cand) selected[j] = 1;
        selected[last] = 1;
        active.assign(static_cast<size_t>(last) + 1, 0);
        for (int32_t i = 0; i < rows.count; ++i) active[row_slot_[rows.begin + i]] = 1;

        // Walk tokens in order: active ones stay if selected (or if the aux
        // cache cannot take them); selected inactive ones that stopped at
        // exactly this layer come back from the aux cache.
        int32_t next_active = 0;
        for (int32_t j = 0; j <= last; ++j) {
            if (active[j]) {
                const float* h = x_.data() + (rows.begin + next_active) * d;
                ++next_active;
                if (!selected[j] && lazy.aux().Put(j, h)) continue;   // pruned: resumes from here if wanted later
                new_pos.push_back(j);
                new_slot.push_back(j);
                source.push_back(h);
            } else if (selected[j] && lazy.depth(j) == layer) {
                const float* h = lazy.aux().Get(j);
                if (h == nullptr) continue;   // cannot happen while the invariant holds
                new_pos.push_back(j);
                new_slot.push_back(j);
                source.push_back(h);
            }
        }
        new_seq_rows.push_back({begin, static_cast<int32_t>(new_slot.size() - begin)});
    }
    // Nothing dropped or brought back (keep fractions of 1.0): the rows stay.
    const bool same_rows = std::equal(new_seq_rows.begin(), new_seq_rows.end(), seq_rows_.begin(), seq_rows_.end(),
                                      [](const SeqRows& a, const SeqRows& b) { return a.count == b.count; });
    if (same_rows && new_slot == row_slot_) return;
    // Gather the new rows, then free the aux cells of revived tokens (their
    // states were read above; a later pruning stores them afresh).
    const int64_t t = static_cast<int64_t>(new_slot.size());
    x_next_.EnsureSize(std::max<int64_t>(t, 1) * d);
    for (int64_t r = 0; r < t; ++r) std::memcpy(x_next_.data() + r * d, source[r], d * sizeof(float));
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        LazyState* lazy = plan.seqs[k].lazy;
        if (lazy == nullptr) continue;
        for (int32_t i = 0; i < new_seq_rows[k].count; ++i) lazy->aux().Erase(new_slot[new_seq_rows[k].begin + i]);
    }
    std::swap(x_, x_next_);   // x_ now holds the t new rows
    EnsureActivations(t);     // revived tokens can outnumber the rows a decode step began with
    row_pos_ = std::move(new_pos);
    row_slot_ = std::move(new_slot);
    seq_rows_ = std::move(new_seq_rows);
    PlanAttention(plan);
}

}  // namespace prepack
