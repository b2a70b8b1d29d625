#include "core/batchllm/nested_groups.h"

#include <algorithm>
#include <functional>

namespace prepack {

NestedGrouping NestGroups(const std::vector<std::vector<int32_t>>& prompts, const GroupingOptions& options) {
    const int32_t n = static_cast<int32_t>(prompts.size());
    NestedGrouping out;
    out.node_of.assign(n, -1);
    // What one level groups: a node's prefix or an ungrouped request's prompt.
    struct Unit {
        int32_t node = -1, request = -1;
    };
    std::vector<Unit> units(n);
    std::vector<std::vector<int32_t>> seqs = prompts;
    for (int32_t i = 0; i < n; ++i) units[i].request = i;
    while (true) {
        const Grouping level = GroupByPrefix(seqs, options);
        std::vector<Unit> next_units;
        std::vector<std::vector<int32_t>> next_seqs;
        bool grouped = false;
        for (const PrefixGroup& g : level.groups) {
            if (g.prefix_len == 0) {   // goes up to the next level as it is
                for (int32_t m : g.members) {
                    next_units.push_back(units[m]);
                    next_seqs.push_back(std::move(seqs[m]));
                }
                continue;
            }
            grouped = true;
            const int32_t id = static_cast<int32_t>(out.nodes.size());
            const Unit& first = units[g.members[0]];
            out.nodes.push_back({g.prefix_len, -1, first.request >= 0 ? first.request : out.nodes[first.node].rep});
            for (int32_t m : g.members) {
                if (units[m].node >= 0) {
                    out.nodes[units[m].node].parent = id;
                } else {
                    out.node_of[units[m].request] = id;
                }
            }
            std::vector<int32_t>& s = seqs[g.members[0]];
            s.resize(g.prefix_len);
            next_units.push_back({id, -1});
            next_seqs.push_back(std::move(s));
        }
        if (!grouped) break;
        units = std::move(next_units);
        seqs = std::move(next_seqs);
    }

    const PrefixTree tree(prompts);
    out.logical_tokens = tree.LogicalTokens();
    out.optimal_tokens = tree.UniqueTokens();
    auto enclosing = [&](int32_t node) { return node >= 0 ? out.nodes[node].prefix_len : 0; };
    for (const PrefixNode& node : out.nodes) out.computed_tokens += node.prefix_len - enclosing(node.parent);
    for (int32_t i = 0; i < n; ++i) {
        out.computed_tokens += static_cast<int64_t>(prompts[i].size()) - enclosing(out.node_of[i]);
    }
    return out;
}

std::vector<NestedItem> NestedOrder(const NestedGrouping& grouping, const std::vector<std::vector<int32_t>>& prompts,
                                    const std::vector<int32_t>& max_tokens) {
    const std::vector<PrefixNode>& nodes = grouping.nodes;
    const int32_t n = static_cast<int32_t>(prompts.size());
    auto enclosing = [&](int32_t node) { return node >= 0 ? nodes[node].prefix_len : 0; };
    auto out_tokens = [&](int32_t i) { return i < static_cast<int32_t>(max_tokens.size()) ? std::max(0, max_tokens[i]) : 0; };
    // Decode and computed prefill tokens under each node; a node is made
    // after the nodes it encloses, so ascending ids visit children first.
    std::vector<int64_t> decode(nodes.size(), 0), prefill(nodes.size(), 0);
    std::vector<std::vector<NestedItem>> children(nodes.size());
    std::vector<NestedItem> top;
    for (size_t k = 0; k < nodes.size(); ++k) prefill[k] = nodes[k].prefix_len - enclosing(nodes[k].parent);
    for (int32_t i = 0; i < n; ++i) {
        const int32_t at = grouping.node_of[i];
        (at >= 0 ? children[at] : top).push_back({-1, i});
        if (at < 0) continue;
        decode[at] += out_tokens(i);
        prefill[at] += static_cast<int64_t>(prompts[i].size()) - enclosing(at);
    }
    for (size_t k = 0; k < nodes.size(); ++k) {
        const int32_t p = nodes[k].parent;
        (p >= 0 ? children[p] : top).push_back({static_cast<int32_t>(k), -1});
        if (p < 0) continue;
        decode[p] += decode[k];
        prefill[p] += prefill[k];
    }
    auto ratio = [&](const NestedItem& item) {
        if (item.node >= 0) return double(decode[item.node]) / double(std::max<int64_t>(prefill[item.node], 1));
        const int64_t own = static_cast<int64_t>(prompts[item.request].size()) - enclosing(grouping.node_of[item.request]);
        return double(out_tokens(item.request)) / double(std::max<int64_t>(own, 1));
    };
    // Ties go by the lowest request under the item, so the order is the
    // same however the nodes were numbered.
    auto first_request = [&](const NestedItem& item) { return item.node >= 0 ? nodes[item.node].rep : item.request; };
    std::vector<NestedItem> order;
    std::function<void(std::vector<NestedItem>&)> emit = [&](std::vector<NestedItem>& items) {
        std::vector<std::pair<double, NestedItem>> keyed;
        for (const NestedItem& it : items) keyed.push_back({ratio(it), it});
        std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
            return a.first > b.first || (a.first == b.first && first_request(a.second) < first_request(b.second));
        });
        for (const auto& [r, it] : keyed) {
            order.push_back(it);
            if (it.node >= 0) emit(children[it.node]);
        }
    };
    emit(top);
    return order;
}

}  // namespace prepack
