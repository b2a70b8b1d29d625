#include "core/lazyllm/lazy_prune.h"

#include "core/kv/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <deque>

namespace prepack {

void BeginLazyStep(const StepPlan& plan) {
    for (const SeqStep& s : plan.seqs) {
        if (s.lazy == nullptr) continue;
        s.lazy->Reserve(s.kv->num_tokens() + s.n_tokens);
        s.lazy->BeginStep();
    }
}

float KeepAfter(const LazyState& lazy, int32_t layer) {
    for (const LazyPoint& p : lazy.schedule()) {
        if (p.layer == layer) return p.keep;
    }
    return -1.0f;
}

bool PruneCanChange(const SeqStep& s, SeqRows rows, int32_t layer) {
    if (s.lazy == nullptr || layer >= s.lazy->n_layers() - 1 || KeepAfter(*s.lazy, layer) <= 0.0f) return false;
    return rows.count > 1 ||
           (s.lazy->revive_room(layer) > 0 && s.lazy->HasStoppedAt(layer, s.kv->num_tokens() + s.n_tokens));
}

bool PrunesAfter(const StepPlan& plan, const std::vector<SeqRows>& seq_rows, int32_t layer) {
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        if (PruneCanChange(plan.seqs[k], seq_rows[k], layer)) return true;
    }
    return false;
}

const std::vector<float>& PooledScores(const std::vector<float>& score, int32_t n, int32_t radius,
                                       std::vector<float>* out) {
    if (radius <= 0) return score;
    out->resize(n);
    // A deque of indices with falling scores gives each window's maximum in O(n).
    std::deque<int32_t> q;
    for (int32_t j = 0, next = 0; j < n; ++j) {
        for (; next < n && next <= j + radius; ++next) {
            while (!q.empty() && score[q.back()] <= score[next]) q.pop_back();
            q.push_back(next);
        }
        while (q.front() < j - radius) q.pop_front();
        (*out)[j] = score[q.front()];
    }
    return *out;
}

PrunedRows PlanPrune(const StepPlan& plan, int32_t layer, const std::vector<SeqRows>& seq_rows,
                     const std::vector<int32_t>& row_pos, const std::vector<int32_t>& row_slot,
                     const std::vector<std::vector<float>>& scores, const char* x, size_t row_bytes) {
    PrunedRows out;
    auto row = [&](int64_t r) { return static_cast<const void*>(x + r * static_cast<int64_t>(row_bytes)); };
    std::vector<uint8_t> selected, active;
    std::vector<float>   pooled;
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const SeqRows rows = seq_rows[k];
        const int64_t begin = static_cast<int64_t>(out.slot.size());
        if (!PruneCanChange(s, rows, layer)) {
            for (int32_t i = 0; i < rows.count; ++i) {
                out.pos.push_back(row_pos[rows.begin + i]);
                out.slot.push_back(row_slot[rows.begin + i]);
                out.source.push_back(row(rows.begin + i));
            }
            out.seq_rows.push_back({begin, rows.count});
            continue;
        }
        LazyState& lazy = *s.lazy;
        const float keep = KeepAfter(lazy, layer);
        const LazyScoring& scoring = lazy.scoring();
        const int32_t last = row_slot[rows.begin + rows.count - 1];
        const std::vector<float>& score = PooledScores(scores[k], last + 1, scoring.pool, &pooled);
        // Candidates: every token this layer holds. Keep the best
        // ceil(keep * context) of them, the protected ones (the first
        // `sinks` and last `recent` tokens) first; the last token always stays.
        auto is_protected = [&](int32_t j) { return j < scoring.sinks || j > last - scoring.recent; };
        std::vector<int32_t> cand;
        for (int32_t j = 0; j < last; ++j) {
            if (lazy.depth(j) >= layer) cand.push_back(j);
        }
        const int32_t want = std::max<int32_t>(1, static_cast<int32_t>(std::ceil(keep * (last + 1)))) - 1;
        if (static_cast<int32_t>(cand.size()) > want) {
            std::nth_element(cand.begin(), cand.begin() + want, cand.end(), [&](int32_t a, int32_t b) {
                const bool pa = is_protected(a), pb = is_protected(b);
                if (pa != pb) return pa;
                return score[a] > score[b] || (score[a] == score[b] && a > b);   // ties: the more recent token
            });
            // Protected tokens beyond the budget stay too.
            cand.erase(std::partition(cand.begin() + want, cand.end(), is_protected), cand.end());
        }
        selected.assign(static_cast<size_t>(last) + 1, 0);
        for (int32_t j : cand) selected[j] = 1;
        selected[last] = 1;
        active.assign(static_cast<size_t>(last) + 1, 0);
        for (int32_t i = 0; i < rows.count; ++i) active[row_slot[rows.begin + i]] = 1;
        // Selected tokens that stopped at exactly this layer may come back,
        // the best of them while the step's revival bound allows.
        std::vector<int32_t> back;
        for (int32_t j : cand) {
            if (!active[j] && lazy.depth(j) == layer && lazy.aux().Get(j) != nullptr) back.push_back(j);
        }
        const int32_t room = lazy.revive_room(layer);
        if (static_cast<int32_t>(back.size()) > room) {
            std::nth_element(back.begin(), back.begin() + room, back.end(), [&](int32_t a, int32_t b) {
                return score[a] > score[b] || (score[a] == score[b] && a > b);
            });
            for (size_t i = room; i < back.size(); ++i) selected[back[i]] = 0;   // stays where it stopped
            back.resize(room);
        }
        lazy.Revived(static_cast<int32_t>(back.size()), layer);

        // Walk tokens in order: active ones stay if selected (or if the aux
        // cache cannot take them); the tokens of `back` come back from it.
        int32_t next_active = 0;
        for (int32_t j = 0; j <= last; ++j) {
            if (active[j]) {
                const void* h = row(rows.begin + next_active);
                ++next_active;
                if (!selected[j] && lazy.aux().Put(j, h, row_bytes)) {
                    lazy.Stopped(layer);   // resumes from here if wanted later
                    continue;
                }
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
