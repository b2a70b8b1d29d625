// Nested (multi-level) prefix groups: a hand-worked two-level batch reaches
// the prefix tree's minimum; on random batches with nested sharing every
// node's prefix encloses what is under it, the token count recounts from the
// nodes and lies between the tree's minimum and the single-level grouping's;
// the queue order is depth first, every prefix before what shares it.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "core/batchllm/nested_groups.h"

namespace prepack {
namespace {

using Prompts = std::vector<std::vector<int32_t>>;
using Tokens = std::vector<int32_t>;

Tokens Random(std::mt19937_64& rng, int32_t n) {
    Tokens t(n);
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % 5000);
    return t;
}

Tokens Cat(Tokens a, const Tokens& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A system prompt for all but the last request, a document per group.
Prompts TwoLevelBatch(std::mt19937_64& rng, int groups, int members, int32_t sys_len, int32_t doc_len) {
    const Tokens sys = Random(rng, sys_len);
    Prompts p;
    for (int g = 0; g < groups; ++g) {
        const Tokens doc = Cat(sys, Random(rng, doc_len));
        for (int m = 0; m < members; ++m) p.push_back(Cat(doc, Random(rng, 10 + 7 * m)));
    }
    p.push_back(Cat(sys, Random(rng, 50)));   // shares the system prompt only
    p.push_back(Random(rng, 60));             // shares nothing
    return p;
}

// The prompt tokens a grouping computes, recounted from its nodes.
int64_t Recount(const NestedGrouping& ng, const Prompts& prompts) {
    auto enclosing = [&](int32_t node) { return node >= 0 ? ng.nodes[node].prefix_len : 0; };
    int64_t n = 0;
    for (const PrefixNode& node : ng.nodes) n += node.prefix_len - enclosing(node.parent);
    for (size_t i = 0; i < prompts.size(); ++i) n += int64_t(prompts[i].size()) - enclosing(ng.node_of[i]);
    return n;
}

// Every node's prefix is a proper prefix of every request under it and
// longer than its parent's; every node has at least two children.
void CheckNesting(const NestedGrouping& ng, const Prompts& prompts) {
    std::vector<int> children(ng.nodes.size(), 0);
    for (size_t k = 0; k < ng.nodes.size(); ++k) {
        const PrefixNode& node = ng.nodes[k];
        if (node.parent >= 0) {
            ++children[node.parent];
            EXPECT_GT(node.prefix_len, ng.nodes[node.parent].prefix_len) << "node " << k;
        }
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
        if (ng.node_of[i] >= 0) ++children[ng.node_of[i]];
        for (int32_t k = ng.node_of[i]; k >= 0; k = ng.nodes[k].parent) {
            const PrefixNode& node = ng.nodes[k];
            const Tokens& rep = prompts[node.rep];
            ASSERT_LT(node.prefix_len, int32_t(prompts[i].size())) << "request " << i << " node " << k;
            EXPECT_TRUE(std::equal(rep.begin(), rep.begin() + node.prefix_len, prompts[i].begin()))
                << "request " << i << " does not start with node " << k << "'s prefix";
        }
    }
    for (size_t k = 0; k < ng.nodes.size(); ++k) EXPECT_GE(children[k], 2) << "node " << k;
}

TEST(NestGroups, TwoLevelBatchComputesTheTreeMinimum) {
    std::mt19937_64 rng(1);
    const Prompts p = TwoLevelBatch(rng, 3, 4, 100, 300);
    const NestedGrouping ng = NestGroups(p);
    CheckNesting(ng, p);
    // One node for the system prompt, one per document under it.
    ASSERT_EQ(ng.nodes.size(), 4u);
    int32_t sys = -1;
    for (size_t k = 0; k < ng.nodes.size(); ++k) {
        if (ng.nodes[k].parent < 0) sys = static_cast<int32_t>(k);
    }
    ASSERT_GE(sys, 0);
    EXPECT_EQ(ng.nodes[sys].prefix_len, 100);
    for (size_t k = 0; k < ng.nodes.size(); ++k) {
        if (int32_t(k) == sys) continue;
        EXPECT_EQ(ng.nodes[k].parent, sys);
        EXPECT_EQ(ng.nodes[k].prefix_len, 400);
    }
    EXPECT_EQ(ng.node_of[12], sys) << "the request with only the system prompt in common";
    EXPECT_EQ(ng.node_of[13], -1) << "the request sharing nothing";
    EXPECT_EQ(ng.computed_tokens, Recount(ng, p));
    EXPECT_EQ(ng.computed_tokens, ng.optimal_tokens);
    // A single level computes the system prompt once per document.
    EXPECT_EQ(GroupByPrefix(p).computed_tokens - ng.computed_tokens, 3 * 100);
}

TEST(NestGroups, MinPrefixTokensAppliesAtEveryLevel) {
    std::mt19937_64 rng(2);
    const Prompts p = TwoLevelBatch(rng, 3, 4, 10, 300);
    GroupingOptions o;
    o.min_prefix_tokens = 16;
    const NestedGrouping ng = NestGroups(p, o);
    CheckNesting(ng, p);
    EXPECT_EQ(ng.nodes.size(), 3u) << "a 10-token system prompt is below the minimum";
    for (const PrefixNode& node : ng.nodes) EXPECT_EQ(node.parent, -1);
}

TEST(NestGroups, RandomNestedBatchesKeepTheInvariants) {
    std::mt19937_64 rng(3);
    for (int trial = 0; trial < 40; ++trial) {
        // Random trees of shared segments: each prompt picks a path down a
        // random three-level hierarchy and stops at a random depth.
        const int fan = 1 + int(rng() % 4);
        std::vector<Tokens> level1(fan), level2(fan * fan);
        for (auto& t : level1) t = Random(rng, 1 + int32_t(rng() % 60));
        for (auto& t : level2) t = Random(rng, 1 + int32_t(rng() % 60));
        Prompts p;
        const int n = 2 + int(rng() % 30);
        for (int i = 0; i < n; ++i) {
            const int a = int(rng() % fan), b = int(rng() % fan);
            Tokens t = level1[a];
            if (rng() % 3) t = Cat(t, level2[a * fan + b]);
            p.push_back(Cat(t, Random(rng, int32_t(rng() % 20))));
        }
        const NestedGrouping ng = NestGroups(p);
        CheckNesting(ng, p);
        EXPECT_EQ(ng.computed_tokens, Recount(ng, p)) << "trial " << trial;
        EXPECT_LE(ng.optimal_tokens, ng.computed_tokens) << "trial " << trial;
        EXPECT_LE(ng.computed_tokens, GroupByPrefix(p).computed_tokens) << "trial " << trial;

        // The order: each node and request once; a node before everything
        // under it; what is under a node is contiguous after it.
        std::vector<int32_t> max_tokens(p.size());
        for (auto& m : max_tokens) m = int32_t(rng() % 100);
        const std::vector<NestedItem> order = NestedOrder(ng, p, max_tokens);
        ASSERT_EQ(order.size(), ng.nodes.size() + p.size());
        std::vector<int> pos_node(ng.nodes.size(), -1), pos_req(p.size(), -1);
        for (size_t i = 0; i < order.size(); ++i) {
            if (order[i].node >= 0) {
                EXPECT_EQ(pos_node[order[i].node], -1);
                pos_node[order[i].node] = int(i);
            } else {
                EXPECT_EQ(pos_req[order[i].request], -1);
                pos_req[order[i].request] = int(i);
            }
        }
        for (size_t k = 0; k < ng.nodes.size(); ++k) {
            // Positions of everything under node k form one run right after it.
            std::vector<int> under;
            for (size_t j = 0; j < ng.nodes.size(); ++j) {
                for (int32_t a = ng.nodes[j].parent; a >= 0; a = ng.nodes[a].parent) {
                    if (a == int32_t(k)) under.push_back(pos_node[j]);
                }
            }
            for (size_t i = 0; i < p.size(); ++i) {
                for (int32_t a = ng.node_of[i]; a >= 0; a = ng.nodes[a].parent) {
                    if (a == int32_t(k)) under.push_back(pos_req[i]);
                }
            }
            std::sort(under.begin(), under.end());
            ASSERT_FALSE(under.empty());
            EXPECT_EQ(under.front(), pos_node[k] + 1) << "trial " << trial << " node " << k;
            EXPECT_EQ(under.back(), pos_node[k] + int(under.size())) << "trial " << trial << " node " << k;
        }
    }
}

TEST(NestedOrder, SiblingsByDecodeRatioHighestFirst) {
    // Two groups under no common prefix: the one with more decode per
    // computed prompt token goes first, and so do its members among themselves.
    Prompts p;
    std::mt19937_64 rng(4);
    const Tokens a = Random(rng, 100), b = Random(rng, 100);
    for (int m = 0; m < 3; ++m) p.push_back(Cat(a, Random(rng, 20)));
    for (int m = 0; m < 3; ++m) p.push_back(Cat(b, Random(rng, 20)));
    const std::vector<int32_t> max_tokens = {10, 30, 20, 100, 100, 300};
    const NestedGrouping ng = NestGroups(p);
    ASSERT_EQ(ng.nodes.size(), 2u);
    const std::vector<NestedItem> order = NestedOrder(ng, p, max_tokens);
    std::vector<int32_t> requests;
    for (const NestedItem& it : order) {
        if (it.request >= 0) requests.push_back(it.request);
    }
    EXPECT_EQ(requests, (std::vector<int32_t>{5, 3, 4, 1, 2, 0}));
    EXPECT_EQ(order[0].node, ng.node_of[5]);
}

// Ported from the single-level OrderByDecodeRatio tests this order replaced.
TEST(NestedOrder, HighestRatioFirstCreditingTheSharing) {
    // {A,B,C} share [1,2,3]: the node computes 3 + 2 + 2 + 1 = 8 prefill
    // tokens; D alone computes 2.
    const Prompts p = {{1, 2, 3, 4, 5}, {1, 2, 3, 4, 6}, {1, 2, 3, 7}, {9, 9}};
    const NestedGrouping ng = NestGroups(p);
    ASSERT_EQ(ng.nodes.size(), 1u);
    auto requests = [&](const std::vector<int32_t>& max_tokens) {
        std::vector<int32_t> r;
        for (const NestedItem& it : NestedOrder(ng, p, max_tokens)) r.push_back(it.node >= 0 ? -1 : it.request);
        return r;
    };
    // 30/8 = 3.75 vs 40/2 = 20: D first; then A, B (10/2 each) after C (10/1).
    EXPECT_EQ(requests({10, 10, 10, 40}), (std::vector<int32_t>{3, -1, 2, 0, 1}));
    // 300/8 = 37.5 vs 0.5: the group first.
    EXPECT_EQ(requests({100, 100, 100, 1}), (std::vector<int32_t>{-1, 2, 0, 1, 3}));
}

TEST(NestedOrder, TiesByLowestRequestAndMissingCountsAsZero) {
    const Prompts p = {{1, 2}, {3, 4, 5, 6}, {7, 8}};
    const NestedGrouping ng = NestGroups(p);
    ASSERT_TRUE(ng.nodes.empty());
    auto requests = [&](const std::vector<int32_t>& max_tokens) {
        std::vector<int32_t> r;
        for (const NestedItem& it : NestedOrder(ng, p, max_tokens)) r.push_back(it.request);
        return r;
    };
    EXPECT_EQ(requests({2, 4, 2}), (std::vector<int32_t>{0, 1, 2}));    // every ratio is 1
    EXPECT_EQ(requests({0, 1}), (std::vector<int32_t>{1, 0, 2}));       // request 2 has no max_tokens: 0
    EXPECT_EQ(requests({-5, 0, 3}), (std::vector<int32_t>{2, 0, 1}));   // negative counts as 0
}

}  // namespace
}  // namespace prepack
