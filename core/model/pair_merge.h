// The merge loop that both vocabulary kinds share: start from one symbol per
// piece, repeatedly merge the adjacent pair with the best priority (leftmost
// on ties), until no adjacent pair merges. SentencePiece ranks a pair by the
// score of the merged piece (highest first, llama2.c's `encode`), byte-level
// BPE by its merge rank (lowest first, llama.cpp's llm_tokenizer_bpe); the
// caller says which pairs merge and how well.
//
// llama2.c rescans every pair after every merge (O(n^2)); here the candidate
// pairs wait in a priority queue over a linked list of symbols, and a
// candidate that an earlier merge made stale is dropped when popped, which
// gives the same merges in O(n log n).
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace prepack {

// What a pair of adjacent symbols merges into, and how urgently.
struct PairMerge {
    double  priority;   // higher merges first
    int32_t merged;     // the symbol the pair becomes
};

// `merge(left, right)` returns the pair's PairMerge, or nullopt when the
// two symbols do not merge. Returns the symbols left at the end, in order.
template <typename MergeFn>
std::vector<int32_t> MergeAdjacentPairs(const std::vector<int32_t>& initial, const MergeFn& merge) {
    struct Symbol {
        int32_t id, prev, next;   // prev/next: indices, -1 at the ends
        bool    alive;
    };
    // A mergeable pair as it was when queued.
    struct Candidate {
        double  priority;
        int32_t left, right, left_id, right_id, merged;
        // priority_queue pops the greatest: best priority, then leftmost.
        bool operator<(const Candidate& o) const {
            return priority != o.priority ? priority < o.priority : left > o.left;
        }
    };
    const auto n = static_cast<int32_t>(initial.size());
    std::vector<Symbol> sym(initial.size());
    for (int32_t i = 0; i < n; ++i) sym[i] = Symbol{initial[i], i - 1, i + 1 < n ? i + 1 : -1, true};
    std::vector<Candidate> storage;
    storage.reserve(initial.size());
    std::priority_queue<Candidate> queue(std::less<Candidate>{}, std::move(storage));
    auto consider = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const std::optional<PairMerge> m = merge(sym[left].id, sym[right].id);
        if (m) queue.push(Candidate{m->priority, left, right, sym[left].id, sym[right].id, m->merged});
    };
    for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& l = sym[c.left];
        Symbol& r = sym[c.right];
        // Stale if either side died or was rewritten by another merge since
        // this pair was queued; its current form (if mergeable) is queued too.
        if (!l.alive || !r.alive || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;
        l.id = c.merged;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = c.left;
        r.alive = false;
        consider(l.prev, c.left);
        consider(c.left, l.next);
    }
    std::vector<int32_t> out;
    out.reserve(initial.size());
    // Symbol 0 heads the list for good: a merge always keeps its left symbol.
    for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
    return out;
}

}  // namespace prepack
