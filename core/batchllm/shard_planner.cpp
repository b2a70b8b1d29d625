#include "core/batchllm/shard_planner.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "core/batchllm/nested_groups.h"

namespace prepack {
namespace {

int64_t OutputOf(const std::vector<int32_t>& output_tokens, size_t i) {
    return i < output_tokens.size() ? std::max<int32_t>(0, output_tokens[i]) : 0;
}

// The nested grouping of the whole batch as a forest, the requests laid out
// depth first, and the cost of any contiguous run of that layout.
class GroupForest {
public:
    GroupForest(const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& output_tokens,
                const NestedGrouping& nested, const ShardPlanOptions& options)
        : nested_(nested), options_(options), stamp_(nested.nodes.size(), 0) {
        const int32_t n = static_cast<int32_t>(prompts.size());
        const int32_t m = static_cast<int32_t>(nested.nodes.size());
        auto enclosing = [&](int32_t node) { return node >= 0 ? nested.nodes[node].prefix_len : 0; };
        node_tokens_.resize(m);
        for (int32_t k = 0; k < m; ++k) node_tokens_[k] = nested.nodes[k].prefix_len - enclosing(nested.nodes[k].parent);
        own_tokens_.resize(n);
        outputs_.resize(n);
        for (int32_t i = 0; i < n; ++i) {
            own_tokens_[i] = static_cast<int64_t>(prompts[i].size()) - enclosing(nested.node_of[i]);
            outputs_[i] = OutputOf(output_tokens, i);
        }

        // Children of each node: its requests and inner nodes, ordered by the
        // lowest request under each (nodes are made after the nodes they
        // enclose, so ascending ids see children first).
        std::vector<int32_t> lowest(m, n);
        for (int32_t i = n - 1; i >= 0; --i) {
            if (nested.node_of[i] >= 0) lowest[nested.node_of[i]] = i;
        }
        for (int32_t k = 0; k < m; ++k) {
            const int32_t p = nested.nodes[k].parent;
            if (p >= 0) lowest[p] = std::min(lowest[p], lowest[k]);
        }
        struct Item {
            int32_t key, node, request;
        };
        std::vector<std::vector<Item>> children(m);
        std::vector<Item> top;
        for (int32_t i = 0; i < n; ++i) {
            const int32_t at = nested.node_of[i];
            (at >= 0 ? children[at] : top).push_back({i, -1, i});
        }
        for (int32_t k = 0; k < m; ++k) {
            const int32_t p = nested.nodes[k].parent;
            (p >= 0 ? children[p] : top).push_back({lowest[k], k, -1});
        }
        auto by_key = [](const Item& a, const Item& b) { return a.key < b.key; };
        for (auto& c : children) std::sort(c.begin(), c.end(), by_key);
        std::sort(top.begin(), top.end(), by_key);

        order_.reserve(n);
        for (const Item& t : top) {
            const int32_t lo = static_cast<int32_t>(order_.size());
            std::vector<Item> stack = {t};
            while (!stack.empty()) {
                const Item it = stack.back();
                stack.pop_back();
                if (it.request >= 0) {
                    order_.push_back(it.request);
                    continue;
                }
                const std::vector<Item>& kids = children[it.node];
                for (auto k = kids.rbegin(); k != kids.rend(); ++k) stack.push_back(*k);
            }
            units_.push_back({lo, static_cast<int32_t>(order_.size())});
        }
    }

    struct Range {
        int32_t lo, hi;
    };
    const std::vector<Range>& units() const { return units_; }
    // Prompt tokens every request of unit `u` shares (its top node's), so
    // any cut through it computes them again.
    int64_t RootTokens(size_t u) const {
        int32_t k = nested_.node_of[order_[units_[u].lo]];
        if (k < 0) return 0;
        while (nested_.nodes[k].parent >= 0) k = nested_.nodes[k].parent;
        return node_tokens_[k];
    }
    int32_t request_at(int32_t pos) const { return order_[pos]; }

    struct Cost {
        int64_t prompt = 0, output = 0;
    };
    double Work(const Cost& c) const {
        return options_.prefill_weight * double(c.prompt) + options_.decode_weight * double(c.output);
    }

    // Cost of the run order_[lo, hi): every request's own tokens and output,
    // and each node on their paths once.
    Cost RangeCost(int32_t lo, int32_t hi) {
        Cost c;
        NewStamp();
        for (int32_t pos = lo; pos < hi; ++pos) Add(order_[pos], c);
        return c;
    }

    // Where to cut the run [lo, hi) (lo < cut < hi) so that the head
    // [lo, cut) costs about `budget`: the cut that minimises its distance
    // from the budget plus the work of the prefix tokens both sides then
    // compute (the nodes the requests either side of the cut share), so a
    // cut moves to a group boundary when that costs less than the prefix
    // it would compute again.
    int32_t Cut(int32_t lo, int32_t hi, double budget) {
        NewStamp();
        Cost head;
        int32_t best = lo + 1;
        double best_score = INFINITY;
        for (int32_t cut = lo + 1; cut < hi; ++cut) {
            Add(order_[cut - 1], head);
            const double over = Work(head) - budget;
            if (over >= best_score) break;   // every later cut is at least this far off
            const double score = std::abs(over) + options_.prefill_weight * double(SharedTokens(order_[cut - 1], order_[cut]));
            if (score < best_score) {
                best = cut;
                best_score = score;
            }
        }
        return best;
    }

private:
    void NewStamp() {
        if (++stamp_id_ == 0) {   // wrapped: clear
            std::fill(stamp_.begin(), stamp_.end(), 0);
            stamp_id_ = 1;
        }
    }
    void Add(int32_t r, Cost& c) {
        c.prompt += own_tokens_[r];
        c.output += outputs_[r];
        for (int32_t k = nested_.node_of[r]; k >= 0 && stamp_[k] != stamp_id_; k = nested_.nodes[k].parent) {
            stamp_[k] = stamp_id_;
            c.prompt += node_tokens_[k];
        }
    }
    // Prompt tokens on the nodes that both requests are under.
    int64_t SharedTokens(int32_t a, int32_t b) const {
        int64_t shared = 0;
        // Node chains are short (one node per nesting level): compare directly.
        for (int32_t x = nested_.node_of[a]; x >= 0; x = nested_.nodes[x].parent) {
            for (int32_t y = nested_.node_of[b]; y >= 0; y = nested_.nodes[y].parent) {
                if (x == y) {
                    for (int32_t z = x; z >= 0; z = nested_.nodes[z].parent) shared += node_tokens_[z];
                    return shared;
                }
            }
        }
        return 0;
    }

    const NestedGrouping& nested_;
    const ShardPlanOptions& options_;
    std::vector<int64_t> node_tokens_;   // a node's own prefix tokens (beyond its enclosing node's)
    std::vector<int64_t> own_tokens_;    // a request's tokens beyond its innermost node
    std::vector<int64_t> outputs_;
    std::vector<int32_t> order_;         // requests, depth first
    std::vector<Range>   units_;         // top-level units as runs of order_
    std::vector<uint32_t> stamp_;
    uint32_t stamp_id_ = 0;
};

uint64_t Fnv1a64(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

}  // namespace

std::vector<int32_t> ContiguousSplit(int32_t n, int32_t shards) {
    std::vector<int32_t> shard_of(std::max(0, n));
    for (int32_t i = 0; i < n; ++i) shard_of[i] = static_cast<int32_t>(int64_t(i) * shards / n);
    return shard_of;
}

std::vector<int32_t> HashedSplit(const std::vector<std::string>& ids, int32_t shards) {
    std::vector<int32_t> shard_of;
    shard_of.reserve(ids.size());
    for (const std::string& id : ids) shard_of.push_back(static_cast<int32_t>(Fnv1a64(id) % uint64_t(shards)));
    return shard_of;
}

SplitFigures EvaluateSplit(const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& output_tokens,
                           const std::vector<int32_t>& shard_of, const ShardPlanOptions& options) {
    SplitFigures out;
    out.shards.resize(std::max(1, options.shards));
    for (size_t i = 0; i < prompts.size(); ++i) out.shards[shard_of[i]].requests.push_back(static_cast<int32_t>(i));
    double total = 0.0;
    for (ShardFigures& s : out.shards) {
        std::vector<std::vector<int32_t>> mine;
        mine.reserve(s.requests.size());
        for (int32_t r : s.requests) {
            mine.push_back(prompts[r]);
            s.prompt_tokens += static_cast<int64_t>(prompts[r].size());
            s.output_tokens += OutputOf(output_tokens, r);
        }
        s.prompt_tokens_computed = mine.empty() ? 0 : NestGroups(mine, options.grouping).computed_tokens;
        s.work = options.prefill_weight * double(s.prompt_tokens_computed) + options.decode_weight * double(s.output_tokens);
        out.prompt_tokens_computed += s.prompt_tokens_computed;
        total += s.work;
    }
    out.mean_work = total / double(out.shards.size());
    out.max_work = out.min_work = out.shards[0].work;
    for (const ShardFigures& s : out.shards) {
        out.max_work = std::max(out.max_work, s.work);
        out.min_work = std::min(out.min_work, s.work);
    }
    return out;
}

absl::StatusOr<ShardPlan> PlanShards(const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<int32_t>& output_tokens, const std::vector<std::string>& ids,
                                     const ShardPlanOptions& options) {
    const int32_t n = static_cast<int32_t>(prompts.size());
    const int32_t shards = options.shards;
    if (shards < 1) return absl::InvalidArgumentError(absl::StrCat("shards must be at least 1, not ", shards));
    if (output_tokens.size() != prompts.size()) {
        return absl::InvalidArgumentError(absl::StrCat(output_tokens.size(), " output counts for ", n, " prompts"));
    }
    if (!ids.empty() && ids.size() != prompts.size()) {
        return absl::InvalidArgumentError(absl::StrCat(ids.size(), " ids for ", n, " prompts"));
    }
    if (!(options.prefill_weight >= 0) || !(options.decode_weight >= 0) || !(options.tolerance >= 0)) {
        return absl::InvalidArgumentError("work weights and tolerance must be non-negative numbers");
    }

    ShardPlan plan;
    const NestedGrouping nested = NestGroups(prompts, options.grouping);
    plan.prompt_tokens = nested.logical_tokens;
    plan.unique_prompt_tokens = nested.optimal_tokens;
    plan.single_machine_tokens = nested.computed_tokens;
    for (int32_t i = 0; i < n; ++i) plan.output_tokens += OutputOf(output_tokens, i);

    GroupForest forest(prompts, output_tokens, nested, options);
    plan.groups = static_cast<int32_t>(forest.units().size());

    // LPT with splitting (steps 2 and 3 of the header).
    struct Unit {
        int32_t lo, hi, origin;   // a run of the depth-first layout, and the unit it came from
        GroupForest::Cost cost;
        double work;
        bool piece;               // what is left of a unit already split
    };
    auto larger = [](const Unit& a, const Unit& b) {   // the heap's "less": smaller work, then later runs
        return a.work < b.work || (a.work == b.work && a.lo > b.lo);
    };
    std::priority_queue<Unit, std::vector<Unit>, decltype(larger)> queue(larger);
    double total = 0.0;
    for (size_t u = 0; u < forest.units().size(); ++u) {
        const auto [lo, hi] = forest.units()[u];
        const GroupForest::Cost c = forest.RangeCost(lo, hi);
        queue.push({lo, hi, static_cast<int32_t>(u), c, forest.Work(c), false});
        total += forest.Work(c);
    }
    std::vector<double> load(shards, 0.0);
    std::vector<int32_t> shard_at(n, 0);                 // by layout position
    std::vector<int32_t> first_shard(plan.groups, -1);   // per unit: -1, a shard, or -2 for several
    auto place = [&](int32_t lo, int32_t hi, int32_t origin, int32_t s, double work) {
        for (int32_t pos = lo; pos < hi; ++pos) shard_at[pos] = s;
        load[s] += work;
        int32_t& f = first_shard[origin];
        f = f == -1 || f == s ? s : -2;
    };
    while (!queue.empty()) {
        const Unit u = queue.top();
        queue.pop();
        const int32_t s = static_cast<int32_t>(std::min_element(load.begin(), load.end()) - load.begin());
        // A cut computes at least the unit's top prefix again; the shares
        // grow by that much.
        const double again = options.prefill_weight * double(forest.RootTokens(u.origin));
        const double fair = (total + again) / shards;
        const double cap = fair * (1.0 + options.tolerance);
        const double over = load[s] + u.work - fair;
        // Step 3 of the header: a unit that alone exceeds the share, or a
        // whole unit that would leave this shard over the tolerance by at
        // least what the cut repeats, when the room left pays for that;
        // never what is left of a split unit unless it alone is too big
        // (that would only cascade into more cuts).
        const bool split = u.hi - u.lo > 1 && fair - load[s] > 0 && fair - load[s] >= again &&
                           (u.work > cap || (!u.piece && load[s] + u.work > cap && over >= again));
        if (split) {
            const int32_t cut = forest.Cut(u.lo, u.hi, fair - load[s]);
            const GroupForest::Cost head = forest.RangeCost(u.lo, cut);
            const GroupForest::Cost tail = forest.RangeCost(cut, u.hi);
            plan.split_prefix_tokens += head.prompt + tail.prompt - u.cost.prompt;
            ++plan.cuts;
            total += forest.Work(head) + forest.Work(tail) - u.work;
            place(u.lo, cut, u.origin, s, forest.Work(head));
            queue.push({cut, u.hi, u.origin, tail, forest.Work(tail), true});
            continue;
        }
        place(u.lo, u.hi, u.origin, s, u.work);
    }
    for (int32_t f : first_shard) plan.split_groups += f == -2;

    plan.shard_of.assign(n, 0);
    for (int32_t pos = 0; pos < n; ++pos) plan.shard_of[forest.request_at(pos)] = shard_at[pos];
    plan.plan = EvaluateSplit(prompts, output_tokens, plan.shard_of, options);
    plan.contiguous = EvaluateSplit(prompts, output_tokens, ContiguousSplit(n, shards), options);
    std::vector<std::string> keys = ids;
    if (keys.empty()) {
        for (int32_t i = 0; i < n; ++i) keys.push_back(std::to_string(i));
    }
    plan.hashed = EvaluateSplit(prompts, output_tokens, HashedSplit(keys, shards), options);
    return plan;
}

}  // namespace prepack
