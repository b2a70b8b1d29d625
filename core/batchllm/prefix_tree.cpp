#include "core/batchllm/prefix_tree.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

namespace prepack {

// ---------------------------------------------------------------------------
// PrefixTree

// Child lookup while inserting. A hash map keyed by (node, first token) keeps
// insertion O(1) per edge even at a root with tens of thousands of children;
// Finalize() then stores children sorted, so the finished tree needs no map.
struct PrefixTree::BuildIndex {
    std::unordered_map<uint64_t, int32_t> child;

    static uint64_t Key(int32_t node, int32_t token) {
        return (uint64_t(uint32_t(node)) << 32) | uint32_t(token);
    }
};

PrefixTree::PrefixTree(const std::vector<std::vector<int32_t>>& prompts) : prompts_(&prompts) {
    BuildIndex index;
    index.child.reserve(2 * prompts.size() + 1);
    NewNode(/*parent=*/-1, /*depth=*/0, /*rep=*/-1);
    end_node_.assign(prompts.size(), kRoot);
    for (size_t i = 0; i < prompts.size(); ++i) Insert(static_cast<int32_t>(i), index);
    Finalize();
}

int32_t PrefixTree::NewNode(int32_t parent, int32_t depth, int32_t rep) {
    parent_.push_back(parent);
    depth_.push_back(depth);
    rep_.push_back(rep);
    return NumNodes() - 1;
}

// Walks prompt `i` down from the root. Each step either follows a whole edge,
// splits an edge where the prompt diverges from it or ends inside it, or
// hangs the rest of the prompt below as a new leaf. Every token of the prompt
// is compared at most once, so building is O(total tokens).
void PrefixTree::Insert(int32_t i, BuildIndex& index) {
    const std::vector<int32_t>& p = (*prompts_)[i];
    const int32_t len = static_cast<int32_t>(p.size());
    logical_tokens_ += len;
    int32_t node = kRoot;
    int32_t pos = 0;   // always depth_[node]
    while (pos < len) {
        const auto it = index.child.find(BuildIndex::Key(node, p[pos]));
        if (it == index.child.end()) {
            const int32_t leaf = NewNode(node, len, i);
            index.child.emplace(BuildIndex::Key(node, p[pos]), leaf);
            unique_tokens_ += len - pos;
            node = leaf;
            break;
        }
        const int32_t child = it->second;
        const int32_t* edge = (*prompts_)[rep_[child]].data();   // indexed by depth
        const int32_t stop = std::min(depth_[child], len);
        int32_t k = pos + 1;   // the first token matched through the key
        while (k < stop && edge[k] == p[k]) ++k;
        if (k < depth_[child]) {
            // The prompt leaves (or ends inside) the edge at depth k: split it.
            const int32_t mid = NewNode(node, k, rep_[child]);
            it->second = mid;   // before emplace, which may rehash
            parent_[child] = mid;
            index.child.emplace(BuildIndex::Key(mid, edge[k]), child);
            node = mid;
        } else {
            node = child;
        }
        pos = k;
    }
    end_node_[i] = node;
}

// Children and ending prompts as sorted CSR arrays, and prompt counts per
// subtree (nodes were created in no particular tree order, so walk it).
void PrefixTree::Finalize() {
    const int32_t n = NumNodes();
    auto first_token = [&](int32_t x) { return (*prompts_)[rep_[x]][depth_[parent_[x]]]; };

    child_begin_.assign(n + 1, 0);
    for (int32_t x = 1; x < n; ++x) ++child_begin_[parent_[x] + 1];
    for (int32_t x = 0; x < n; ++x) child_begin_[x + 1] += child_begin_[x];
    children_.assign(n > 0 ? n - 1 : 0, 0);
    std::vector<int32_t> fill(child_begin_.begin(), child_begin_.end() - 1);
    for (int32_t x = 1; x < n; ++x) children_[fill[parent_[x]]++] = x;
    for (int32_t x = 0; x < n; ++x) {
        std::sort(children_.begin() + child_begin_[x], children_.begin() + child_begin_[x + 1],
                  [&](int32_t a, int32_t b) { return first_token(a) < first_token(b); });
    }

    end_begin_.assign(n + 1, 0);
    for (int32_t node : end_node_) ++end_begin_[node + 1];
    for (int32_t x = 0; x < n; ++x) end_begin_[x + 1] += end_begin_[x];
    ends_.assign(end_node_.size(), 0);
    fill.assign(end_begin_.begin(), end_begin_.end() - 1);
    for (size_t i = 0; i < end_node_.size(); ++i) ends_[fill[end_node_[i]]++] = static_cast<int32_t>(i);

    // Breadth-first order puts parents before children; sum in reverse.
    std::vector<int32_t> order = {kRoot};
    for (size_t q = 0; q < order.size(); ++q) {
        for (int32_t c : Children(order[q])) order.push_back(c);
    }
    subtree_prompts_.assign(n, 0);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        subtree_prompts_[*it] += static_cast<int32_t>(EndingPrompts(*it).size());
        if (*it != kRoot) subtree_prompts_[parent_[*it]] += subtree_prompts_[*it];
    }
}

std::span<const int32_t> PrefixTree::Edge(int32_t node) const {
    if (node == kRoot) return {};
    const int32_t from = depth_[parent_[node]];
    return std::span<const int32_t>((*prompts_)[rep_[node]]).subspan(from, depth_[node] - from);
}

std::span<const int32_t> PrefixTree::Children(int32_t node) const {
    return std::span<const int32_t>(children_).subspan(child_begin_[node],
                                                       child_begin_[node + 1] - child_begin_[node]);
}

int32_t PrefixTree::FindChild(int32_t node, int32_t token) const {
    const std::span<const int32_t> kids = Children(node);
    const int32_t from = depth_[node];
    const auto it = std::lower_bound(kids.begin(), kids.end(), token,
                                     [&](int32_t c, int32_t t) { return (*prompts_)[rep_[c]][from] < t; });
    return it != kids.end() && (*prompts_)[rep_[*it]][from] == token ? *it : -1;
}

std::span<const int32_t> PrefixTree::EndingPrompts(int32_t node) const {
    return std::span<const int32_t>(ends_).subspan(end_begin_[node], end_begin_[node + 1] - end_begin_[node]);
}

// ---------------------------------------------------------------------------
// Grouping

namespace {

// u(x) from the header: the prefix a group can share when its members have
// x tokens in common (the one-token cap already applied by the caller).
int32_t Usable(int32_t common, const GroupingOptions& options) {
    const int32_t align = std::max(1, options.align);
    const int32_t aligned = common - common % align;
    return aligned >= std::max(1, options.min_prefix_tokens) ? aligned : 0;
}

// The two candidate positions of one radix node (see the header). A width w
// of 0 means no candidate: sharing 0 tokens can never gain anything.
struct Candidates {
    int32_t base = 0;         // stack index of the first of them
    int32_t w_above = 0;      // depth D-1, takes the prompts ending here too
    int32_t w_at = 0;         // depth D, only prompts continuing below
    int32_t thr_above = -1;   // used iff the nearest used index above is <= thr
    int32_t thr_at = -1;
};

// The exact single-level MaximizeReuse DP over a built tree.
class GroupingDp {
public:
    GroupingDp(const PrefixTree& tree, const GroupingOptions& options)
        : tree_(tree), options_(options), cand_(tree.NumNodes()) {}

    // Bottom-up pass: F per subtree and the thresholds. Returns the saving.
    int64_t Solve();
    // Top-down pass: the position each prompt joins (2*node for "above",
    // 2*node+1 for "at"), or -1 for none.
    std::vector<int32_t> Assign() const;
    int32_t Width(int32_t position) const {
        const Candidates& c = cand_[position / 2];
        return position % 2 == 0 ? c.w_above : c.w_at;
    }

private:
    struct Frame {
        int32_t node;
        int32_t heavy;              // index in Children(node) of the child visited first
        int32_t next = 0;           // children visited so far
        std::vector<int64_t> acc;   // sum of finished children's F; empty until the first
    };

    void Enter(int32_t node);
    int32_t ChildInOrder(const Frame& f) const;
    std::vector<int64_t> Finish(Frame& f);
    // "Use this position" value, and its threshold over vals[0, n).
    static int32_t Threshold(const std::vector<int64_t>& vals, size_t n, int64_t use);

    const PrefixTree& tree_;
    const GroupingOptions options_;
    std::vector<Candidates> cand_;
    std::vector<int64_t> stack_w_;   // widths of the candidates above; [0] = 0 is "no group"
    std::vector<Frame> frames_;
};

void GroupingDp::Enter(int32_t node) {
    Candidates& c = cand_[node];
    c.base = static_cast<int32_t>(stack_w_.size());
    if (node != PrefixTree::kRoot) {
        const int32_t d = tree_.Depth(node);
        // "Above" differs from the parent's "at" only inside the edge, and
        // only prompts ending here can make it better than "at".
        if (!tree_.EndingPrompts(node).empty() && d - 1 > tree_.Depth(tree_.Parent(node))) {
            c.w_above = Usable(d - 1, options_);
        }
        if (!tree_.Children(node).empty()) c.w_at = Usable(d, options_);
    }
    if (c.w_above > 0) stack_w_.push_back(c.w_above);
    if (c.w_at > 0) stack_w_.push_back(c.w_at);

    // The child with the most prompts goes first: a node holds partial sums
    // only while a lighter child is open, which halves the prompts each
    // time, so O(log n) vectors of O(depth) are alive at once.
    const std::span<const int32_t> kids = tree_.Children(node);
    int32_t heavy = 0;
    for (size_t i = 1; i < kids.size(); ++i) {
        if (tree_.SubtreePrompts(kids[i]) > tree_.SubtreePrompts(kids[heavy])) heavy = static_cast<int32_t>(i);
    }
    frames_.push_back(Frame{node, heavy, 0, {}});
}

int32_t GroupingDp::ChildInOrder(const Frame& f) const {
    const std::span<const int32_t> kids = tree_.Children(f.node);
    if (f.next == 0) return kids[f.heavy];
    return kids[f.next <= f.heavy ? f.next - 1 : f.next];
}

int32_t GroupingDp::Threshold(const std::vector<int64_t>& vals, size_t n, int64_t use) {
    // vals is nondecreasing (F is, and so are the widths up the stack), so
    // the contexts where using the position strictly wins form a prefix.
    const auto end = std::partition_point(vals.begin(), vals.begin() + n, [&](int64_t v) { return v < use; });
    return static_cast<int32_t>(end - vals.begin()) - 1;
}

// Turns the children's sum C into this node's F over the stack below it.
std::vector<int64_t> GroupingDp::Finish(Frame& f) {
    Candidates& c = cand_[f.node];
    std::vector<int64_t> vals = std::move(f.acc);
    if (vals.empty()) vals.assign(stack_w_.size(), 0);   // a leaf: no children
    if (c.w_at > 0) {
        // F_at(e) = E*e + max(C(e), C(w_at) - w_at); the E*e comes below.
        const size_t i_at = vals.size() - 1;
        const int64_t use = vals[i_at] - c.w_at;
        c.thr_at = Threshold(vals, i_at, use);
        vals.resize(i_at);
        for (int64_t& v : vals) v = std::max(v, use);
    }
    const int64_t ends = static_cast<int64_t>(tree_.EndingPrompts(f.node).size());
    for (size_t j = 0; j < vals.size(); ++j) vals[j] += ends * stack_w_[j];
    if (c.w_above > 0) {
        // F_above(e) = max(F_at(e), F_at(w_above) - w_above).
        const size_t i_above = c.base;
        const int64_t use = vals[i_above] - c.w_above;
        c.thr_above = Threshold(vals, i_above, use);
        vals.resize(i_above);
        for (int64_t& v : vals) v = std::max(v, use);
    }
    stack_w_.resize(c.base);
    return vals;
}

int64_t GroupingDp::Solve() {
    stack_w_ = {0};
    Enter(PrefixTree::kRoot);
    for (;;) {
        Frame& f = frames_.back();
        if (f.next < static_cast<int32_t>(tree_.Children(f.node).size())) {
            const int32_t child = ChildInOrder(f);
            ++f.next;
            Enter(child);   // invalidates f
            continue;
        }
        std::vector<int64_t> vals = Finish(f);
        frames_.pop_back();
        if (frames_.empty()) return vals[0];
        std::vector<int64_t>& acc = frames_.back().acc;
        if (acc.empty()) {
            acc = std::move(vals);
        } else {
            for (size_t j = 0; j < acc.size(); ++j) acc[j] += vals[j];
        }
    }
}

std::vector<int32_t> GroupingDp::Assign() const {
    std::vector<int32_t> position(tree_.NumPrompts(), -1);
    struct Item {
        int32_t node, ctx, pos;   // ctx: stack index of the nearest used candidate above
    };
    std::vector<Item> todo = {{PrefixTree::kRoot, 0, -1}};
    while (!todo.empty()) {
        Item it = todo.back();
        todo.pop_back();
        const Candidates& c = cand_[it.node];
        if (c.w_above > 0 && it.ctx <= c.thr_above) it = {it.node, c.base, 2 * it.node};
        for (int32_t i : tree_.EndingPrompts(it.node)) position[i] = it.pos;
        if (c.w_at > 0 && it.ctx <= c.thr_at) it = {it.node, c.base + (c.w_above > 0), 2 * it.node + 1};
        for (int32_t child : tree_.Children(it.node)) todo.push_back({child, it.ctx, it.pos});
    }
    return position;
}

int64_t ComputedTokens(const std::vector<PrefixGroup>& groups, const std::vector<std::vector<int32_t>>& prompts) {
    int64_t computed = 0;
    for (const PrefixGroup& g : groups) {
        computed += g.prefix_len;
        for (int32_t m : g.members) computed += static_cast<int64_t>(prompts[m].size()) - g.prefix_len;
    }
    return computed;
}

}  // namespace

Grouping GroupByPrefix(const std::vector<std::vector<int32_t>>& prompts, const GroupingOptions& options) {
    return GroupByPrefix(PrefixTree(prompts), options);
}

Grouping GroupByPrefix(const PrefixTree& tree, const GroupingOptions& options) {
    GroupingDp dp(tree, options);
    [[maybe_unused]] const int64_t saving = dp.Solve();
    const std::vector<int32_t> position = dp.Assign();

    // Walking the prompts in order creates groups in order of their first
    // member, with members ascending.
    Grouping out;
    std::unordered_map<int32_t, size_t> group_of;
    for (int32_t i = 0; i < tree.NumPrompts(); ++i) {
        const int32_t pos = position[i];
        if (pos < 0) {
            out.groups.push_back(PrefixGroup{0, {i}});
            continue;
        }
        const auto [it, inserted] = group_of.emplace(pos, out.groups.size());
        if (inserted) out.groups.push_back(PrefixGroup{dp.Width(pos), {}});
        out.groups[it->second].members.push_back(i);
    }
    // The DP never uses a position for fewer than two prompts (that cannot
    // strictly gain); keep the singleton convention regardless.
    for (PrefixGroup& g : out.groups) {
        if (g.members.size() < 2) g.prefix_len = 0;
    }

    out.logical_tokens = tree.LogicalTokens();
    out.optimal_tokens = tree.UniqueTokens();
    out.computed_tokens = 0;
    for (const PrefixGroup& g : out.groups) {
        out.computed_tokens += g.prefix_len;
        for (int32_t m : g.members) out.computed_tokens += static_cast<int64_t>(tree.Prompt(m).size()) - g.prefix_len;
    }
    assert(out.logical_tokens - out.computed_tokens == saving);
    return out;
}

absl::Status ValidateGrouping(const Grouping& grouping, const std::vector<std::vector<int32_t>>& prompts) {
    std::vector<bool> seen(prompts.size(), false);
    int64_t logical = 0;
    for (const std::vector<int32_t>& p : prompts) logical += static_cast<int64_t>(p.size());
    for (size_t gi = 0; gi < grouping.groups.size(); ++gi) {
        const PrefixGroup& g = grouping.groups[gi];
        if (g.members.empty()) return absl::InvalidArgumentError(absl::StrCat("group ", gi, " has no members"));
        if (g.members.size() == 1 && g.prefix_len != 0) {
            return absl::InvalidArgumentError(absl::StrCat("singleton group ", gi, " has prefix_len ", g.prefix_len));
        }
        for (size_t k = 0; k < g.members.size(); ++k) {
            const int32_t m = g.members[k];
            if (m < 0 || m >= static_cast<int32_t>(prompts.size())) {
                return absl::InvalidArgumentError(absl::StrCat("group ", gi, " names request ", m, ", out of range"));
            }
            if (k > 0 && m <= g.members[k - 1]) {
                return absl::InvalidArgumentError(absl::StrCat("group ", gi, " members are not strictly ascending"));
            }
            if (seen[m]) return absl::InvalidArgumentError(absl::StrCat("request ", m, " is in two groups"));
            seen[m] = true;
            if (g.members.size() == 1) continue;
            const std::vector<int32_t>& p = prompts[m];
            const std::vector<int32_t>& first = prompts[g.members[0]];
            if (g.prefix_len < 0 || g.prefix_len >= static_cast<int32_t>(p.size()) ||
                !std::equal(p.begin(), p.begin() + g.prefix_len, first.begin())) {
                return absl::InvalidArgumentError(absl::StrCat("group ", gi, " prefix of ", g.prefix_len,
                                                               " tokens is not a proper prefix of request ", m));
            }
        }
    }
    for (size_t i = 0; i < seen.size(); ++i) {
        if (!seen[i]) return absl::InvalidArgumentError(absl::StrCat("request ", i, " is in no group"));
    }
    const int64_t computed = ComputedTokens(grouping.groups, prompts);
    if (grouping.computed_tokens != computed || grouping.logical_tokens != logical) {
        return absl::InvalidArgumentError(absl::StrCat("token counts ", grouping.computed_tokens, "/",
                                                       grouping.logical_tokens, " disagree with the groups: ",
                                                       computed, "/", logical));
    }
    if (grouping.optimal_tokens > computed) {
        return absl::InvalidArgumentError(absl::StrCat("optimal_tokens ", grouping.optimal_tokens,
                                                       " exceeds computed_tokens ", computed));
    }
    return absl::OkStatus();
}

}  // namespace prepack
