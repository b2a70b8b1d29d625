#include "core/lazyllm/lazy_prune.h"

#include "core/kv/kv_cache.h"

#include <algorithm>
#include <cmath>

namespace prepack {

void ReserveLazyDepths(const StepPlan& plan) {
    for (const SeqStep& s : plan.seqs) {
        if (s.lazy != nullptr) s.lazy->Reserve(s.kv->num_tokens() + s.n_tokens);
    }
}

float KeepAfter(const LazyState& lazy, int32_t layer) {
    for (const LazyPoint& p : lazy.schedule()) {
        if (p.layer == layer) return p.keep;
    }
    return -1.0f;
}

bool PrunesAfter(const StepPlan& plan, int32_t layer, int32_t n_layers) {
    if (layer >= n_layers - 1) return false;   // nothing left to skip
    for (const SeqStep& s : plan.seqs) {
        if (s.lazy != nullptr && KeepAfter(*s.lazy, layer) > 0.0f) return true;
    }
    return false;
}

PrunedRows PlanPrune(const StepPlan& plan, int32_t layer, const std::vector<SeqRows>& seq_rows,
                     const std::vector<int32_t>& row_pos, const std::vector<int32_t>& row_slot,
                     const std::vector<std::vector<float>>& scores, const char* x, size_t row_bytes) {
    PrunedRows out;
    auto row = [&](int64_t r) { return static_cast<const void*>(x + r * static_cast<int64_t>(row_bytes)); };
    std::vector<uint8_t> selected, active;
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const SeqRows rows = seq_rows[k];
        const int64_t begin = static_cast<int64_t>(out.slot.size());
        const float keep = s.lazy ? KeepAfter(*s.lazy, layer) : -1.0f;
        if (keep <= 0.0f) {
            for (int32_t i = 0; i < rows.count; ++i) {
                out.pos.push_back(row_pos[rows.begin + i]);
                out.slot.push_back(row_slot[rows.begin + i]);
                out.source.push_back(row(rows.begin + i));
            }
            out.seq_rows.push_back({begin, rows.count});
            continue;
        }
        LazyState& lazy = *s.lazy;
        const std::vector<float>& score = scores[k];
        const int32_t last = row_slot[rows.begin + rows.count - 1];
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
        for (int32_t i = 0; i < rows.count; ++i) active[row_slot[rows.begin + i]] = 1;

        // Walk tokens in order: active ones stay if selected (or if the aux
        // cache cannot take them); selected inactive ones that stopped at
        // exactly this layer come back from the aux cache.
        int32_t next_active = 0;
        for (int32_t j = 0; j <= last; ++j) {
            if (active[j]) {
                const void* h = row(rows.begin + next_active);
                ++next_active;
                if (!selected[j] && lazy.aux().Put(j, h, row_bytes)) continue;   // resumes from here if wanted later
                out.pos.push_back(j);
                out.slot.push_back(j);
                out.source.push_back(h);
            } else if (selected[j] && lazy.depth(j) == layer) {
                const void* h = lazy.aux().Get(j);
                if (h == nullptr) continue;   // cannot happen while the invariant holds
                out.pos.push_back(j);
                out.slot.push_back(j);
                out.source.push_back(h);
            }
        }
        out.seq_rows.push_back({begin, static_cast<int32_t>(out.slot.size() - begin)});
    }
    // Nothing dropped or brought back (keep fractions of 1.0): the rows stay.
    out.unchanged = std::equal(out.seq_rows.begin(), out.seq_rows.end(), seq_rows.begin(), seq_rows.end(),
                               [](const SeqRows& a, const SeqRows& b) { return a.count == b.count; }) &&
                    out.slot == row_slot;
    return out;
}

void EraseRevived(const StepPlan& plan, const PrunedRows& rows) {
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        LazyState* lazy = plan.seqs[k].lazy;
        if (lazy == nullptr) continue;
        for (int32_t i = 0; i < rows.seq_rows[k].count; ++i) lazy->aux().Erase(rows.slot[rows.seq_rows[k].begin + i]);
    }
}

}  // namespace prepack
