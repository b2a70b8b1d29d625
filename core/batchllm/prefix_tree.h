// Global prefix sharing for a large offline batch, as in BatchLLM (Zheng et
// al. 2024): a token-level radix tree over every prompt of the batch, and
// its collapse into SINGLE-LEVEL prefix-sharing groups. Each group is one
// shared prefix plus the requests whose prompts start with it; the prefix's
// KV is computed once and every member computes only its own suffix on top.
//
// Token accounting (all counts are prefill tokens):
//   logical   = sum of all prompt lengths (what is needed without sharing);
//   computed  = per group, prefix_len once + sum over members of
//               (prompt_len - prefix_len);
//   optimal   = tokens on all edges of the radix tree = the number of distinct
//               non-empty prefixes of the prompts: what multi-level sharing
//               (every tree node computed once) would compute;
//   saving ratio R = 1 - computed / logical, optimal R = 1 - optimal / logical.
// optimal <= computed <= logical always holds. The optimum ignores the
// one-token cap below, so e.g. two identical prompts have optimal = their
// length while the best grouping computes length + 1.
//
// The one-token cap. Every member must compute at least one token of its own
// prompt, because its next-token logits come from its last prompt position.
// So a group's prefix is at most (shortest member prompt length - 1) even
// when one member's prompt IS the common prefix (a prompt that is a prefix of
// another, or identical prompts).
//
// Options. prefix_len is rounded DOWN to a multiple of `align` (the engine may
// share only whole KV blocks), and a prefix shorter than `min_prefix_tokens`
// after that counts as no sharing. So a set of prompts G, with longest common
// prefix LCP(G) and shortest length m(G), can share
//   usable(G) = u(min(LCP(G), m(G) - 1)),  u(x) = a if a >= max(1, min_prefix_tokens) else 0,
//                                          a = x - x % align,
// and a group saves (|G| - 1) * usable(G) tokens. Groups that would share
// nothing are split into singletons (prefix_len 0).
//
// The grouping (GroupByPrefix) maximises total saved tokens over all
// partitions of the batch. BatchLLM's MaximizeReuse chooses between "one
// group at this node" and "let the children decide", which misses mixed
// solutions: a node at depth 10 with a child pair sharing 100 tokens and
// three more prompts branching right at the node is best served by the pair
// at depth 100 AND the other three at depth 10 (100 + 20 saved, versus 40
// for all five at 10 or 100 for the pair alone). The DP here is exact:
//
//   Positions. Call a trie position p (a point at depth d on some path) with
//   S(p) = prompts that pass through p and continue past it. A group G can
//   be placed at p iff G is a subset of S(p); it saves (|G|-1) * w(p), with
//   w(p) = u(d). The deepest position holding G has depth
//   min(LCP(G), m(G) - 1), so each group sits at the radix node where its
//   members' paths split (depth LCP) or one token above the node where its
//   shortest member ends. Positions inside a compressed edge have the same
//   S as the edge's last interior point and a smaller w, so only two
//   candidates per radix node x remain: "at x" (depth D(x), members continue
//   past x) and "above x" (depth D(x) - 1, also takes the prompts ending at
//   x; only when some prompt ends at x and the point lies inside the edge).
//
//   Exchange. Given the set U of positions that hold groups, moving a member
//   to a deeper used position on its path never lowers the saving (w is
//   monotone in depth), so an optimum exists where every prompt sits at the
//   deepest used position it passes through, or alone if there is none.
//   Saving(U) = sum over p in U of (members(p) - 1) * w(p).
//
//   DP. Deeper choices interact with the groups above only through how many
//   prompts they leave "free" to join the nearest used ancestor position,
//   worth e = that position's w each (e = 0: no group above). So for every
//   subtree we compute F(e) = max over its choices of (saving inside +
//   e * free prompts), at every e the subtree can see: the w of each
//   candidate position above it. With E prompts ending exactly at node x and
//   C(e) = sum over the children of F_child(e):
//       F_at(e)    = E * e + max(C(e), C(w_at) - w_at)
//       F_above(e) = max(F_at(e), F_at(w_above) - w_above)
//   where the second term of each max is "use this position": everything the
//   subtree leaves free joins it, so its value is the children's F at this
//   position's own w, minus w for the one copy of the prefix that is computed.
//   The answer is F_root(0). F is nondecreasing in e, and the widths of the
//   candidates above a node grow with depth, so "use this position" holds exactly
//   for the nearest-used-ancestor indices up to a threshold; a second,
//   top-down pass replays these choices and assigns the members.
//
// Cost: building the tree is O(total tokens) time, O(nodes) memory beyond
// the prompts (edges are spans into them; nodes <= 2 * prompts + 1). The DP
// does O(number of candidate positions above) work per node, i.e.
// O(sum of node depths) <= O(nodes * longest prompt); it visits the child
// with the most prompts first so that at most O(log n) partial sums of
// size O(depth) are alive at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/base/status.h"

namespace prepack {

// A token-level radix tree over a batch of prompts (compressed edges). The
// tree keeps spans into `prompts`, which must outlive it. Empty prompts end
// at the root. Node 0 is the root; every other node is where paths branch,
// where a prompt ends, or both.
class PrefixTree {
public:
    static constexpr int32_t kRoot = 0;

    explicit PrefixTree(const std::vector<std::vector<int32_t>>& prompts);
    // The tree refers into the prompts; a temporary would dangle.
    explicit PrefixTree(std::vector<std::vector<int32_t>>&&) = delete;

    int32_t NumPrompts() const { return static_cast<int32_t>(prompts_->size()); }
    int32_t NumNodes() const { return static_cast<int32_t>(parent_.size()); }
    const std::vector<int32_t>& Prompt(int32_t i) const { return (*prompts_)[i]; }

    int64_t LogicalTokens() const { return logical_tokens_; }   // sum of prompt lengths
    // Tokens on all edges: the multi-level optimum of computed prefill tokens.
    int64_t UniqueTokens() const { return unique_tokens_; }

    // Tokens from the root to the end of `node`'s incoming edge.
    int32_t Depth(int32_t node) const { return depth_[node]; }
    int32_t Parent(int32_t node) const { return parent_[node]; }   // -1 for the root
    // The tokens of `node`'s incoming edge (empty for the root).
    std::span<const int32_t> Edge(int32_t node) const;
    // Children in ascending order of their edge's first token.
    std::span<const int32_t> Children(int32_t node) const;
    // The child whose edge starts with `token`, or -1.
    int32_t FindChild(int32_t node, int32_t token) const;
    // Prompts that end exactly at `node`, ascending.
    std::span<const int32_t> EndingPrompts(int32_t node) const;
    // Prompts that end at `node` or below it.
    int32_t SubtreePrompts(int32_t node) const { return subtree_prompts_[node]; }
    // The node where prompt `i` ends (its whole prompt is the path to it).
    int32_t EndNode(int32_t i) const { return end_node_[i]; }

private:
    struct BuildIndex;   // (node, first token) -> child, only while building

    int32_t NewNode(int32_t parent, int32_t depth, int32_t rep);
    void Insert(int32_t prompt, BuildIndex& index);
    void Finalize();

    const std::vector<std::vector<int32_t>>* prompts_;
    // Node arrays. A node's edge covers tokens [Depth(parent), Depth(node))
    // of any prompt through it; rep_ names one such prompt.
    std::vector<int32_t> parent_, depth_, rep_;
    std::vector<int32_t> child_begin_, children_;   // CSR, sorted by first token
    std::vector<int32_t> end_begin_, ends_;         // CSR, prompts ascending
    std::vector<int32_t> subtree_prompts_;
    std::vector<int32_t> end_node_;
    int64_t logical_tokens_ = 0;
    int64_t unique_tokens_ = 0;
};

struct GroupingOptions {
    // Shared prefixes shorter than this (after alignment) count as no sharing.
    // Values below 1 act as 1.
    int32_t min_prefix_tokens = 1;
    // prefix_len is rounded down to a multiple of this, e.g. the KV block size
    // when only whole blocks can be shared. Values below 1 act as 1.
    int32_t align = 1;
};

struct PrefixGroup {
    // Shared prefix tokens, 0 = no sharing (always 0 for a single member).
    // The prefix is prompts[members[0]][0, prefix_len); it is a prefix of every
    // member's prompt and shorter than each of them.
    int32_t prefix_len = 0;
    std::vector<int32_t> members;   // request indices, ascending
};

struct Grouping {
    std::vector<PrefixGroup> groups;
    int64_t computed_tokens = 0;    // prefix once per group + every member's suffix
    int64_t logical_tokens = 0;     // sum of prompt lengths
    int64_t optimal_tokens = 0;     // PrefixTree::UniqueTokens(): multi-level sharing

    int64_t saved_tokens() const { return logical_tokens - computed_tokens; }
    double saving_ratio() const {
        return logical_tokens ? 1.0 - double(computed_tokens) / double(logical_tokens) : 0.0;
    }
    double optimal_saving_ratio() const {
        return logical_tokens ? 1.0 - double(optimal_tokens) / double(logical_tokens) : 0.0;
    }
};

// The single-level grouping that saves the most tokens (see the top of this
// file). Every prompt is in exactly one group; groups are ordered by their
// first member. Ties are broken deterministically: a position shares only
// when that strictly increases the saving. Empty prompts become singletons.
Grouping GroupByPrefix(const std::vector<std::vector<int32_t>>& prompts, const GroupingOptions& options = {});
// The same over a tree already built for the batch.
Grouping GroupByPrefix(const PrefixTree& tree, const GroupingOptions& options = {});

// INVALID_ARGUMENT unless `grouping` is a valid single-level grouping of
// `prompts`: every request in exactly one group, members ascending, each
// group's prefix a common prefix shorter than every member's prompt
// (0 for singletons), and the token counts consistent with the groups.
absl::Status ValidateGrouping(const Grouping& grouping, const std::vector<std::vector<int32_t>>& prompts);

}  // namespace prepack
