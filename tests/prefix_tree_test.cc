// BatchLLM global prefix sharing: the radix tree against hand-worked trees
// and a distinct-prefix count, the single-level grouping against hand-worked
// optima and an exhaustive search over set partitions, invariants and the
// flattening loss on large batches, and build speed (the decode-ratio order
// is nested_groups_test's).
#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "core/batchllm/prefix_tree.h"

namespace prepack {
namespace {

using Prompts = std::vector<std::vector<int32_t>>;
using Tokens = std::vector<int32_t>;

// first, first+1, ..., first+n-1
Tokens Range(int32_t first, int32_t n) {
    Tokens t(n);
    for (int32_t i = 0; i < n; ++i) t[i] = first + i;
    return t;
}

Tokens Cat(Tokens a, const Tokens& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

Tokens Random(std::mt19937_64& rng, int32_t n, int32_t vocab) {
    Tokens t(n);
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % vocab);
    return t;
}

std::vector<std::vector<int32_t>> Members(const Grouping& g) {
    std::vector<std::vector<int32_t>> out;
    for (const PrefixGroup& grp : g.groups) out.push_back(grp.members);
    return out;
}

std::vector<int32_t> PrefixLens(const Grouping& g) {
    std::vector<int32_t> out;
    for (const PrefixGroup& grp : g.groups) out.push_back(grp.prefix_len);
    return out;
}

// Checks, independently of ValidateGrouping, that `g` is a single-level
// grouping of `prompts` under `options`, and returns the computed tokens
// recounted from its groups.
int64_t CheckGrouping(const Grouping& g, const Prompts& prompts, const GroupingOptions& options = {}) {
    std::vector<int> times(prompts.size(), 0);
    int64_t computed = 0, logical = 0;
    for (const Tokens& p : prompts) logical += static_cast<int64_t>(p.size());
    int32_t last_first = -1;
    for (const PrefixGroup& grp : g.groups) {
        EXPECT_FALSE(grp.members.empty());
        if (grp.members.empty()) continue;
        EXPECT_TRUE(std::is_sorted(grp.members.begin(), grp.members.end()));
        EXPECT_GT(grp.members[0], last_first) << "groups not ordered by first member";
        last_first = grp.members[0];
        computed += grp.prefix_len;
        if (grp.members.size() == 1) {
            EXPECT_EQ(grp.prefix_len, 0);
        }
        if (grp.prefix_len > 0) {
            EXPECT_EQ(grp.prefix_len % std::max(1, options.align), 0);
            EXPECT_GE(grp.prefix_len, options.min_prefix_tokens);
        }
        const Tokens& first = prompts[grp.members[0]];
        for (int32_t m : grp.members) {
            ++times[m];
            const Tokens& p = prompts[m];
            computed += static_cast<int64_t>(p.size()) - grp.prefix_len;
            if (grp.members.size() == 1) continue;
            EXPECT_LT(grp.prefix_len, static_cast<int32_t>(p.size())) << "member " << m << " computes no token";
            EXPECT_TRUE(std::equal(p.begin(), p.begin() + grp.prefix_len, first.begin()))
                << "prefix not shared by member " << m;
        }
    }
    for (size_t i = 0; i < times.size(); ++i) EXPECT_EQ(times[i], 1) << "request " << i;
    EXPECT_EQ(g.computed_tokens, computed);
    EXPECT_EQ(g.logical_tokens, logical);
    EXPECT_LE(g.optimal_tokens, g.computed_tokens);
    EXPECT_LE(g.computed_tokens, g.logical_tokens);
    EXPECT_TRUE(ValidateGrouping(g, prompts).ok()) << ValidateGrouping(g, prompts);
    return computed;
}

// ---------------------------------------------------------------------------
// Exhaustive reference: every set partition of the prompts, each block
// saving (|block| - 1) * usable prefix, written from the definition.

int64_t BlockSaving(const std::vector<int32_t>& block, const Prompts& prompts, const GroupingOptions& o) {
    if (block.size() < 2) return 0;
    const Tokens& first = prompts[block[0]];
    size_t lcp = first.size(), shortest = first.size();
    for (int32_t m : block) {
        const Tokens& p = prompts[m];
        size_t k = 0;
        while (k < lcp && k < p.size() && p[k] == first[k]) ++k;
        lcp = k;
        shortest = std::min(shortest, p.size());
    }
    int64_t common = std::min<int64_t>(lcp, static_cast<int64_t>(shortest) - 1);   // the one-token cap
    const int64_t align = std::max(1, o.align);
    common = common / align * align;
    if (common < std::max(1, o.min_prefix_tokens)) common = 0;
    return static_cast<int64_t>(block.size() - 1) * common;
}

int64_t BruteForceSaving(const Prompts& prompts, const GroupingOptions& o) {
    const int n = static_cast<int>(prompts.size());
    std::vector<int> block_of(n, 0);
    int64_t best = 0;
    // Restricted growth strings enumerate each set partition exactly once.
    std::function<void(int, int)> rec = [&](int i, int blocks) {
        if (i == n) {
            std::vector<std::vector<int32_t>> parts(blocks);
            for (int k = 0; k < n; ++k) parts[block_of[k]].push_back(k);
            int64_t s = 0;
            for (const auto& part : parts) s += BlockSaving(part, prompts, o);
            best = std::max(best, s);
            return;
        }
        for (int b = 0; b <= blocks; ++b) {
            block_of[i] = b;
            rec(i + 1, std::max(blocks, b + 1));
        }
    };
    rec(0, 0);
    return best;
}

// A small batch over a tiny alphabet where prefixes, duplicates and prompts
// that are prefixes of others are common.
Prompts SmallRandomBatch(std::mt19937_64& rng) {
    const int n = 3 + static_cast<int>(rng() % 6);
    const int32_t alphabet = 2 + static_cast<int32_t>(rng() % 2);
    Prompts prompts;
    for (int i = 0; i < n; ++i) {
        Tokens p;
        if (!prompts.empty() && rng() % 4 != 0) {
            const Tokens& base = prompts[rng() % prompts.size()];
            p.assign(base.begin(), base.begin() + static_cast<int64_t>(rng() % (base.size() + 1)));
        }
        p = Cat(p, Random(rng, static_cast<int32_t>(rng() % 5), alphabet));
        if (p.size() < 2) p = Cat(p, Random(rng, 2 + static_cast<int32_t>(rng() % 6), alphabet));
        p.resize(std::min<size_t>(p.size(), 10));
        prompts.push_back(p);
    }
    return prompts;
}

// ---------------------------------------------------------------------------
// The tree

// A=[1,2,3,4,5] B=[1,2,3,4,6] C=[1,2,3,7] D=[9,9]:
//   root -[1,2,3]-> X -[4]-> Y -[5]-> A
//                            Y -[6]-> B
//                   X -[7]-> C
//   root -[9,9]-> D
// Edges hold 3+1+1+1+1+2 = 9 tokens, the prompts 5+5+4+2 = 16.
const Prompts kFour = {{1, 2, 3, 4, 5}, {1, 2, 3, 4, 6}, {1, 2, 3, 7}, {9, 9}};

TEST(PrefixTree, HandWorkedStructure) {
    const PrefixTree t(kFour);
    EXPECT_EQ(t.NumPrompts(), 4);
    EXPECT_EQ(t.NumNodes(), 7);
    EXPECT_EQ(t.LogicalTokens(), 16);
    EXPECT_EQ(t.UniqueTokens(), 9);
    ASSERT_EQ(t.Children(PrefixTree::kRoot).size(), 2u);
    const int32_t x = t.Children(PrefixTree::kRoot)[0];
    const int32_t d = t.Children(PrefixTree::kRoot)[1];
    EXPECT_EQ(Tokens(t.Edge(x).begin(), t.Edge(x).end()), (Tokens{1, 2, 3}));
    EXPECT_EQ(Tokens(t.Edge(d).begin(), t.Edge(d).end()), (Tokens{9, 9}));
    EXPECT_EQ(t.Depth(x), 3);
    EXPECT_EQ(t.Parent(x), PrefixTree::kRoot);
    EXPECT_EQ(t.Parent(PrefixTree::kRoot), -1);
    EXPECT_EQ(t.FindChild(PrefixTree::kRoot, 1), x);
    EXPECT_EQ(t.FindChild(PrefixTree::kRoot, 9), d);
    EXPECT_EQ(t.FindChild(PrefixTree::kRoot, 2), -1);
    const int32_t y = t.FindChild(x, 4);
    ASSERT_GE(y, 0);
    EXPECT_EQ(t.Depth(y), 4);
    EXPECT_EQ(t.SubtreePrompts(PrefixTree::kRoot), 4);
    EXPECT_EQ(t.SubtreePrompts(x), 3);
    EXPECT_EQ(t.SubtreePrompts(y), 2);
    EXPECT_EQ(t.EndNode(3), d);
    EXPECT_EQ(t.Parent(t.EndNode(0)), y);
    EXPECT_EQ(t.Parent(t.EndNode(2)), x);
    EXPECT_EQ(Tokens(t.EndingPrompts(d).begin(), t.EndingPrompts(d).end()), (Tokens{3}));
    EXPECT_TRUE(t.EndingPrompts(x).empty());
}

TEST(PrefixTree, PromptsEndingInsideAndAtNodes) {
    // [1,2] ends inside the edge of [1,2,3,4] (split), [1,2,3,4] twice ends at
    // one leaf, and the empty prompt ends at the root.
    const Prompts p = {{1, 2, 3, 4}, {1, 2}, {1, 2, 3, 4}, {}};
    const PrefixTree t(p);
    EXPECT_EQ(t.UniqueTokens(), 4);
    EXPECT_EQ(t.LogicalTokens(), 10);
    EXPECT_EQ(t.EndNode(0), t.EndNode(2));
    EXPECT_EQ(t.Depth(t.EndNode(1)), 2);
    EXPECT_EQ(t.Parent(t.EndNode(0)), t.EndNode(1));
    EXPECT_EQ(t.EndNode(3), PrefixTree::kRoot);
    EXPECT_EQ(Tokens(t.EndingPrompts(t.EndNode(0)).begin(), t.EndingPrompts(t.EndNode(0)).end()),
              (Tokens{0, 2}));
}

// UniqueTokens is the number of distinct non-empty prefixes; every prompt is
// the concatenation of the edges down to its end node; the tree is
// compressed (no node other than the root has one child and no ending).
TEST(PrefixTree, MatchesDistinctPrefixesOnRandomBatches) {
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        Prompts prompts;
        const int n = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i) prompts.push_back(Random(rng, static_cast<int32_t>(rng() % 12), 3));
        const PrefixTree t(prompts);
        std::set<Tokens> prefixes;
        for (const Tokens& p : prompts) {
            for (size_t k = 1; k <= p.size(); ++k) prefixes.insert(Tokens(p.begin(), p.begin() + k));
        }
        ASSERT_EQ(t.UniqueTokens(), static_cast<int64_t>(prefixes.size()));
        for (int i = 0; i < n; ++i) {
            Tokens path;
            for (int32_t x = t.EndNode(i); x != PrefixTree::kRoot; x = t.Parent(x)) {
                path.insert(path.begin(), t.Edge(x).begin(), t.Edge(x).end());
            }
            ASSERT_EQ(path, prompts[i]);
        }
        int32_t counted = 0;
        for (int32_t x = 0; x < t.NumNodes(); ++x) {
            counted += static_cast<int32_t>(t.EndingPrompts(x).size());
            if (x != PrefixTree::kRoot) {
                EXPECT_FALSE(t.Children(x).size() == 1 && t.EndingPrompts(x).empty());
                EXPECT_EQ(t.Depth(x), t.Depth(t.Parent(x)) + static_cast<int32_t>(t.Edge(x).size()));
            }
        }
        EXPECT_EQ(counted, n);
    }
}

// ---------------------------------------------------------------------------
// Grouping: hand-worked cases

TEST(GroupByPrefix, HandWorkedFourPrompts) {
    // {A,B,C} at [1,2,3] saves 2*3 = 6; {A,B} at [1,2,3,4] saves only 4 and
    // leaves C alone. D shares nothing. Computed 16 - 6 = 10 against the tree's
    // 9: single-level sharing recomputes the [4] that A and B also share.
    const Grouping g = GroupByPrefix(kFour);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0, 1, 2}, {3}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{3, 0}));
    EXPECT_EQ(g.computed_tokens, 10);
    EXPECT_EQ(g.logical_tokens, 16);
    EXPECT_EQ(g.optimal_tokens, 9);
    EXPECT_EQ(g.saved_tokens(), 6);
    EXPECT_DOUBLE_EQ(g.saving_ratio(), 1.0 - 10.0 / 16.0);
    EXPECT_DOUBLE_EQ(g.optimal_saving_ratio(), 1.0 - 9.0 / 16.0);
    EXPECT_EQ(CheckGrouping(g, kFour), 10);
}

TEST(GroupByPrefix, SplittingDeeperBeatsGroupingHigher) {
    // All four share [1]; two pairs share 8 tokens each. One group at depth 1
    // saves 3, the two pairs 8 + 8 = 16.
    const Tokens a = Range(1, 8), b = Cat({1}, Range(20, 7));
    const Prompts p = {Cat(a, {100}), Cat(a, {101}), Cat(b, {102}), Cat(b, {103})};
    const Grouping g = GroupByPrefix(p);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0, 1}, {2, 3}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{8, 8}));
    EXPECT_EQ(g.computed_tokens, 36 - 16);
    EXPECT_EQ(g.optimal_tokens, 1 + 7 + 7 + 4);
    CheckGrouping(g, p);
}

TEST(GroupByPrefix, GroupingHigherBeatsSplitting) {
    // All four share 6 tokens, a pair shares 8. All at 6 saves 3*6 = 18; the
    // pair at 8 plus the other two at 6 saves 8 + 6 = 14.
    const Tokens s = Range(1, 6);
    const Prompts p = {Cat(s, {7, 8, 100}), Cat(s, {7, 8, 101}), Cat(s, {50}), Cat(s, {60})};
    const Grouping g = GroupByPrefix(p);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0, 1, 2, 3}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{6}));
    EXPECT_EQ(g.computed_tokens, 32 - 18);
    CheckGrouping(g, p);
}

TEST(GroupByPrefix, MixedDepthsBeatBothAllOrNothing) {
    // Five prompts share 4 tokens; two of them share 12. "All at 4" saves
    // 4*4 = 16 and "the pair only" 12, but the pair at 12 plus the other
    // three at 4 saves 12 + 2*4 = 20: a node-level choice between grouping
    // everything and deferring to the children cannot find this.
    const Tokens s = Range(1, 4), deep = Cat(s, Range(5, 8));
    const Prompts p = {Cat(deep, {100}), Cat(deep, {101}), Cat(s, {200}), Cat(s, {201}), Cat(s, {202})};
    const Grouping g = GroupByPrefix(p);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0, 1}, {2, 3, 4}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{12, 4}));
    EXPECT_EQ(g.saved_tokens(), 20);
    EXPECT_EQ(BruteForceSaving(p, {}), 20);
    CheckGrouping(g, p);
}

TEST(GroupByPrefix, IdenticalPrompts) {
    // Three copies of 4 tokens: the cap leaves each copy its last token, so
    // the group shares 3 and computes 3 + 3*1 = 6; the tree holds 4.
    const Prompts p(3, Tokens{5, 6, 7, 8});
    const Grouping g = GroupByPrefix(p);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0, 1, 2}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{3}));
    EXPECT_EQ(g.computed_tokens, 6);
    EXPECT_EQ(g.optimal_tokens, 4);
    CheckGrouping(g, p);
    // Identical one-token prompts have nothing to share under the cap.
    const Prompts ones = {{7}, {7}};
    const Grouping g1 = GroupByPrefix(ones);
    EXPECT_EQ(Members(g1), (std::vector<std::vector<int32_t>>{{0}, {1}}));
    EXPECT_EQ(g1.computed_tokens, 2);
    EXPECT_EQ(g1.optimal_tokens, 1);
}

TEST(GroupByPrefix, NoSharingGivesSingletons) {
    const Prompts p = {{1, 2, 3}, {2, 3, 4}, {3}, {4, 1, 1, 1}};
    const Grouping g = GroupByPrefix(p);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0}, {1}, {2}, {3}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{0, 0, 0, 0}));
    EXPECT_EQ(g.computed_tokens, g.logical_tokens);
    EXPECT_EQ(g.optimal_tokens, g.logical_tokens);
    EXPECT_EQ(g.saving_ratio(), 0.0);
    CheckGrouping(g, p);
}

TEST(GroupByPrefix, OneTokenCapWhenAPromptIsAPrefixOfAnother) {
    // [1,2,3] is a prefix of [1,2,3,4,5]: they can share 2 tokens, not 3.
    const Prompts a = {{1, 2, 3}, {1, 2, 3, 4, 5}};
    const Grouping ga = GroupByPrefix(a);
    EXPECT_EQ(Members(ga), (std::vector<std::vector<int32_t>>{{0, 1}}));
    EXPECT_EQ(PrefixLens(ga), (std::vector<int32_t>{2}));
    EXPECT_EQ(ga.computed_tokens, 2 + 1 + 3);
    // The capped prompt still pays off inside the group: all three at 2 save
    // 4, the two longer ones at 3 only 3.
    const Prompts b = {{1, 2, 3}, {1, 2, 3, 4}, {1, 2, 3, 5}};
    const Grouping gb = GroupByPrefix(b);
    EXPECT_EQ(Members(gb), (std::vector<std::vector<int32_t>>{{0, 1, 2}}));
    EXPECT_EQ(PrefixLens(gb), (std::vector<int32_t>{2}));
    // ...unless the cap costs too much: [1,2] could share only 1 token, so
    // the long pair shares 5 without it.
    const Prompts c = {{1, 2}, {1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 7}};
    const Grouping gc = GroupByPrefix(c);
    EXPECT_EQ(Members(gc), (std::vector<std::vector<int32_t>>{{0}, {1, 2}}));
    EXPECT_EQ(PrefixLens(gc), (std::vector<int32_t>{0, 5}));
    for (const Prompts* p : {&a, &b, &c}) CheckGrouping(GroupByPrefix(*p), *p);
}

TEST(GroupByPrefix, MinPrefixTokens) {
    const Prompts p = {{1, 2, 3, 10}, {1, 2, 3, 11}};
    EXPECT_EQ(PrefixLens(GroupByPrefix(p, {.min_prefix_tokens = 3})), (std::vector<int32_t>{3}));
    const Grouping none = GroupByPrefix(p, {.min_prefix_tokens = 4});
    EXPECT_EQ(Members(none), (std::vector<std::vector<int32_t>>{{0}, {1}}));
    EXPECT_EQ(none.computed_tokens, none.logical_tokens);
    // All four share 3, a pair shares 5: by default all at 3 (saves 9 > 5 + 3);
    // with a 4-token minimum only the pair can share.
    const Tokens s = {1, 2, 3};
    const Prompts q = {Cat(s, {4, 5, 10}), Cat(s, {4, 5, 11}), Cat(s, {12}), Cat(s, {13})};
    EXPECT_EQ(Members(GroupByPrefix(q)), (std::vector<std::vector<int32_t>>{{0, 1, 2, 3}}));
    const GroupingOptions o{.min_prefix_tokens = 4};
    const Grouping g = GroupByPrefix(q, o);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0, 1}, {2}, {3}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{5, 0, 0}));
    CheckGrouping(g, q, o);
}

TEST(GroupByPrefix, AlignRoundsPrefixDown) {
    const Tokens s = Range(1, 7);
    const Prompts p = {Cat(s, {10}), Cat(s, {11})};   // share 7
    EXPECT_EQ(PrefixLens(GroupByPrefix(p, {.align = 4})), (std::vector<int32_t>{4}));
    EXPECT_EQ(PrefixLens(GroupByPrefix(p, {.align = 7})), (std::vector<int32_t>{7}));
    EXPECT_EQ(Members(GroupByPrefix(p, {.align = 8})), (std::vector<std::vector<int32_t>>{{0}, {1}}));
    // Cap first, then align: common 8, capped to 7, aligned to 4.
    const Prompts c = {Range(1, 8), Cat(Range(1, 8), {9, 10})};
    EXPECT_EQ(PrefixLens(GroupByPrefix(c, {.align = 4})), (std::vector<int32_t>{4}));
    // Alignment changes the best structure: all share 3, a pair shares 5.
    // With blocks of 4 only the pair can share (4 tokens); 3 rounds to 0.
    const Tokens t = {1, 2, 3};
    const Prompts q = {Cat(t, {4, 5, 10}), Cat(t, {4, 5, 11}), Cat(t, {12}), Cat(t, {13})};
    const GroupingOptions o{.align = 4};
    const Grouping g = GroupByPrefix(q, o);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0, 1}, {2}, {3}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{4, 0, 0}));
    CheckGrouping(g, q, o);
    // Alignment combined with a minimum: 4-aligned, at least 8.
    EXPECT_EQ(Members(GroupByPrefix(q, {.min_prefix_tokens = 8, .align = 4})),
              (std::vector<std::vector<int32_t>>{{0}, {1}, {2}, {3}}));
}

TEST(GroupByPrefix, OptionsBelowOneActAsOne) {
    const Grouping a = GroupByPrefix(kFour, {.min_prefix_tokens = 0, .align = 0});
    const Grouping b = GroupByPrefix(kFour, {.min_prefix_tokens = -3, .align = -2});
    EXPECT_EQ(Members(a), Members(GroupByPrefix(kFour)));
    EXPECT_EQ(Members(b), Members(GroupByPrefix(kFour)));
    EXPECT_EQ(a.computed_tokens, 10);
    EXPECT_EQ(b.computed_tokens, 10);
}

TEST(GroupByPrefix, EmptyBatchAndEmptyPrompts) {
    const Grouping empty = GroupByPrefix(Prompts{});
    EXPECT_TRUE(empty.groups.empty());
    EXPECT_EQ(empty.computed_tokens, 0);
    EXPECT_EQ(empty.saving_ratio(), 0.0);
    const Prompts p = {{}, {1, 2, 3}, {}, {1, 2, 4}};
    const Grouping g = GroupByPrefix(p);
    EXPECT_EQ(Members(g), (std::vector<std::vector<int32_t>>{{0}, {1, 3}, {2}}));
    EXPECT_EQ(PrefixLens(g), (std::vector<int32_t>{0, 2, 0}));
    EXPECT_EQ(g.computed_tokens, 4);
    CheckGrouping(g, p);
}

TEST(GroupByPrefix, SameResultFromABuiltTree) {
    const PrefixTree t(kFour);
    const Grouping a = GroupByPrefix(t);
    const Grouping b = GroupByPrefix(kFour);
    EXPECT_EQ(Members(a), Members(b));
    EXPECT_EQ(PrefixLens(a), PrefixLens(b));
    EXPECT_EQ(a.computed_tokens, b.computed_tokens);
}

// ---------------------------------------------------------------------------
// Grouping: exact optimum

TEST(GroupByPrefix, EqualsBruteForceOnSmallRandomBatches) {
    std::mt19937_64 rng(20241203);
    int with_sharing = 0, multi_depth = 0;
    for (int trial = 0; trial < 400; ++trial) {
        const Prompts p = SmallRandomBatch(rng);
        GroupingOptions o;
        if (trial % 4 == 1) o.align = 2 + static_cast<int32_t>(rng() % 2);
        if (trial % 4 == 2) o.min_prefix_tokens = 2 + static_cast<int32_t>(rng() % 2);
        if (trial % 4 == 3) o = {.min_prefix_tokens = 3, .align = 2};
        const Grouping g = GroupByPrefix(p, o);
        const int64_t best = BruteForceSaving(p, o);
        ASSERT_EQ(g.saved_tokens(), best) << "trial " << trial << " align " << o.align << " min "
                                          << o.min_prefix_tokens;
        CheckGrouping(g, p, o);
        // The reported groups really save what they claim.
        int64_t claimed = 0;
        for (const PrefixGroup& grp : g.groups) {
            claimed += static_cast<int64_t>(grp.members.size() - 1) * grp.prefix_len;
            EXPECT_LE(static_cast<int64_t>(grp.members.size() - 1) * grp.prefix_len,
                      BlockSaving(grp.members, p, o));
        }
        EXPECT_EQ(claimed, best);
        with_sharing += best > 0;
        std::set<int32_t> depths;
        for (const PrefixGroup& grp : g.groups) {
            if (grp.prefix_len > 0) depths.insert(grp.prefix_len);
        }
        multi_depth += depths.size() > 1;
    }
    // The instances are not trivially unshared, and often need groups at
    // several depths at once.
    EXPECT_GT(with_sharing, 250);
    EXPECT_GT(multi_depth, 50);
}

// ---------------------------------------------------------------------------
// Large batches

struct Workload {
    Prompts prompts;
    std::vector<int32_t> system_of;   // which system prompt a request starts with, -1 for none
    Prompts systems;
};

// System prompts in families with shared preambles; requests are a system
// prompt plus a suffix (sometimes empty), duplicates of earlier requests,
// truncations of earlier requests, or unrelated text.
Workload LargeBatch(std::mt19937_64& rng, int n) {
    Workload w;
    Prompts preambles;
    for (int f = 0; f < 5; ++f) preambles.push_back(Random(rng, 10 + static_cast<int32_t>(rng() % 40), 32000));
    for (int s = 0; s < 30; ++s) {
        w.systems.push_back(Cat(preambles[rng() % preambles.size()],
                                Random(rng, 10 + static_cast<int32_t>(rng() % 250), 32000)));
    }
    for (int i = 0; i < n; ++i) {
        const uint64_t kind = rng() % 10;
        if (kind == 0 && !w.prompts.empty()) {
            const size_t j = rng() % w.prompts.size();
            w.prompts.push_back(w.prompts[j]);
            w.system_of.push_back(w.system_of[j]);
        } else if (kind == 1 && !w.prompts.empty()) {
            const Tokens& base = w.prompts[rng() % w.prompts.size()];
            w.prompts.push_back(Tokens(base.begin(), base.begin() + 1 + static_cast<int64_t>(rng() % base.size())));
            w.system_of.push_back(-1);
        } else if (kind == 2) {
            w.prompts.push_back(Random(rng, 1 + static_cast<int32_t>(rng() % 300), 32000));
            w.system_of.push_back(-1);
        } else {
            const int32_t s = static_cast<int32_t>(rng() % w.systems.size());
            const int32_t suffix = rng() % 8 == 0 ? 0 : 1 + static_cast<int32_t>(rng() % 100);
            w.prompts.push_back(Cat(w.systems[s], Random(rng, suffix, 32000)));
            w.system_of.push_back(s);
        }
    }
    return w;
}

// Saving of the obvious grouping "one group per system prompt", which the
// optimum must match or beat.
int64_t PerSystemPromptSaving(const Workload& w, const GroupingOptions& o) {
    std::vector<std::vector<int32_t>> by_system(w.systems.size());
    for (size_t i = 0; i < w.prompts.size(); ++i) {
        if (w.system_of[i] >= 0) by_system[w.system_of[i]].push_back(static_cast<int32_t>(i));
    }
    int64_t saving = 0;
    for (const auto& block : by_system) saving += BlockSaving(block, w.prompts, o);
    return saving;
}

TEST(GroupByPrefix, InvariantsOnLargeRandomBatches) {
    std::mt19937_64 rng(99);
    for (const GroupingOptions& o : {GroupingOptions{}, GroupingOptions{.align = 16},
                                     GroupingOptions{.min_prefix_tokens = 32, .align = 8}}) {
        const Workload w = LargeBatch(rng, 3000);
        const Grouping g = GroupByPrefix(w.prompts, o);
        CheckGrouping(g, w.prompts, o);
        EXPECT_GE(g.saved_tokens(), PerSystemPromptSaving(w, o));
        EXPECT_LT(g.optimal_tokens, g.computed_tokens);   // the families' preambles are shared only in the tree
        EXPECT_GT(g.saving_ratio(), 0.5);
        EXPECT_LE(g.saving_ratio(), g.optimal_saving_ratio());
    }
}

TEST(GroupByPrefix, FlatteningLossIsSmallForEightSystemPrompts) {
    // 8 system prompts of 256 tokens (an 8-token preamble in common) x 8
    // requests with 64-token suffixes. One group per system prompt computes
    // 8*256 + 64*64 = 6144 tokens; the tree shares the preamble too: 6088.
    std::mt19937_64 rng(5);
    const Tokens preamble = Random(rng, 8, 32000);
    Prompts prompts;
    for (int s = 0; s < 8; ++s) {
        const Tokens system = Cat(preamble, Cat({40000 + s}, Random(rng, 247, 32000)));
        for (int r = 0; r < 8; ++r) prompts.push_back(Cat(system, Cat({50000 + r}, Random(rng, 63, 32000))));
    }
    const Grouping g = GroupByPrefix(prompts);
    ASSERT_EQ(g.groups.size(), 8u);
    for (const PrefixGroup& grp : g.groups) {
        EXPECT_EQ(grp.members.size(), 8u);
        EXPECT_EQ(grp.prefix_len, 256);
    }
    EXPECT_EQ(g.logical_tokens, 64 * 320);
    EXPECT_EQ(g.computed_tokens, 6144);
    EXPECT_EQ(g.optimal_tokens, 6088);
    EXPECT_LE(double(g.computed_tokens), 1.02 * double(g.optimal_tokens));
    EXPECT_NEAR(g.saving_ratio(), g.optimal_saving_ratio(), 0.01);
    CheckGrouping(g, prompts);
}

// ---------------------------------------------------------------------------
// Validation

TEST(ValidateGrouping, RejectsBrokenGroupings) {
    const Grouping good = GroupByPrefix(kFour);
    ASSERT_TRUE(ValidateGrouping(good, kFour).ok());
    auto expect_invalid = [&](const std::function<void(Grouping&)>& corrupt) {
        Grouping g = good;
        corrupt(g);
        EXPECT_EQ(ValidateGrouping(g, kFour).code(), absl::StatusCode::kInvalidArgument);
    };
    expect_invalid([](Grouping& g) { g.groups[1].members.push_back(0); });   // twice
    expect_invalid([](Grouping& g) { g.groups.pop_back(); });                // missing
    expect_invalid([](Grouping& g) { g.groups[0].members = {2, 1, 0}; });    // not ascending
    expect_invalid([](Grouping& g) { g.groups[1].members = {7}; });          // out of range
    expect_invalid([](Grouping& g) { g.groups[0].prefix_len = 4; });         // not common (C has 7)
    expect_invalid([](Grouping& g) { g.groups[1].prefix_len = 1; });         // singleton sharing
    expect_invalid([](Grouping& g) { g.groups.push_back({}); });             // empty group
    expect_invalid([](Grouping& g) { g.computed_tokens += 1; });             // miscounted
    expect_invalid([](Grouping& g) { g.optimal_tokens = 11; });              // above computed
    // A prefix covering a whole member's prompt leaves it nothing to compute.
    const Prompts p = {{1, 2, 3}, {1, 2, 3, 4}};
    Grouping g = GroupByPrefix(p);
    g.groups[0].prefix_len = 3;
    g.computed_tokens = 3 + 0 + 1;
    EXPECT_EQ(ValidateGrouping(g, p).code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Scale

TEST(GroupByPrefix, TwentyThousandPromptsOfTwoHundredTokens) {
    std::mt19937_64 rng(3);
    Prompts systems;
    // Distinct first tokens keep the tree's size exact: 100 system prompts of
    // 120 tokens, then 80 tokens of each request's own.
    for (int s = 0; s < 100; ++s) systems.push_back(Cat({40000 + s}, Random(rng, 119, 32000)));
    Prompts prompts;
    prompts.reserve(20000);
    for (int i = 0; i < 20000; ++i) {
        prompts.push_back(Cat(systems[rng() % systems.size()], Cat({100000 + i}, Random(rng, 79, 32000))));
    }
    const auto start = std::chrono::steady_clock::now();
    const Grouping g = GroupByPrefix(prompts, {.align = 16});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 20.0);
    EXPECT_EQ(g.groups.size(), 100u);
    for (const PrefixGroup& grp : g.groups) EXPECT_EQ(grp.prefix_len, 112);   // 120 rounded down to 16s
    EXPECT_EQ(g.optimal_tokens, 100 * 120 + 20000 * 80);
    EXPECT_TRUE(ValidateGrouping(g, prompts).ok());
}

TEST(GroupByPrefix, DeeplyNestedPrompts) {
    // Every prefix of one 2000-token text: a chain 2000 nodes deep, the DP's
    // worst shape (work grows with the square of the depth).
    std::mt19937_64 rng(11);
    const Tokens text = Random(rng, 2000, 32000);
    Prompts prompts;
    for (int32_t len = 2000; len >= 1; --len) prompts.push_back(Tokens(text.begin(), text.begin() + len));
    const auto start = std::chrono::steady_clock::now();
    const Grouping g = GroupByPrefix(prompts);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 20.0);
    EXPECT_EQ(g.optimal_tokens, 2000);
    CheckGrouping(g, prompts);
    // Sharing the first half among the longer half alone already saves
    // 999 * 1000; the optimum does at least as well.
    EXPECT_GE(g.saved_tokens(), 999 * 1000);
}

}  // namespace
}  // namespace prepack
