#include "core/batchllm/batchllm_scheduler.h"

#include <algorithm>
#include <unordered_set>

#include "core/base/runtime.h"
#include "core/batchllm/nested_groups.h"

namespace prepack {

std::vector<std::shared_ptr<Sequence>> BatchLlmScheduler::OrderBatch(std::vector<std::shared_ptr<Sequence>> batch) {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<int32_t> max_tokens;
    for (const auto& s : batch) {
        prompts.push_back(s->tokens);
        max_tokens.push_back(s->request.max_tokens);
    }
    // A prefix shorter than a block saves less than the step it takes and
    // the block every member copies on write.
    GroupingOptions options;
    options.min_prefix_tokens = pool_.block_size();
    const NestedGrouping nested = NestGroups(prompts, options);
    std::vector<std::shared_ptr<Group>> groups;
    for (const PrefixNode& node : nested.nodes) {
        // An internal sequence with no stream of its own computes the prefix once.
        Request pr;
        pr.prompt_tokens.assign(prompts[node.rep].begin(), prompts[node.rep].begin() + node.prefix_len);
        auto prefix = std::make_shared<Sequence>(pr, model_.tokenizer(), model_.config().max_context);
        prefix->tokens = pr.prompt_tokens;
        prefix->n_prompt = node.prefix_len;
        prefix->internal = true;
        prefix->t_submit = NowSeconds();
        groups.push_back(std::make_shared<Group>());
        groups.back()->prefix = std::move(prefix);
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto join = [&](const Sequence* member, int32_t node) {
        if (node < 0) return;
        group_of_[member] = groups[node];
        ++groups[node]->users;
    };
    for (size_t k = 0; k < groups.size(); ++k) {
        const int32_t parent = nested.nodes[k].parent;
        own_group_[groups[k]->prefix.get()] = groups[k];
        if (parent >= 0) groups[k]->parent = groups[parent];
        join(groups[k]->prefix.get(), parent);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
        join(batch[i].get(), nested.node_of[i]);
        if (nested.node_of[i] < 0) ungrouped_.insert(batch[i].get());
    }

    std::vector<std::shared_ptr<Sequence>> order;
    for (const NestedItem& item : NestedOrder(nested, prompts, max_tokens)) {
        const std::shared_ptr<Sequence>& s = item.node >= 0 ? groups[item.node]->prefix : batch[item.request];
        const int32_t under = item.node >= 0 ? nested.nodes[item.node].parent : nested.node_of[item.request];
        if (under >= 0 && groups[under]->first_blocks == 0) {
            groups[under]->first_blocks = OwnBlocks(*s, nested.nodes[under].prefix_len, /*at_peak=*/true);
        }
        order.push_back(s);
    }
    return order;
}

std::shared_ptr<BatchLlmScheduler::Group> BatchLlmScheduler::GroupOf(const Sequence& seq) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = group_of_.find(&seq);
    return it == group_of_.end() ? nullptr : it->second;
}

bool BatchLlmScheduler::InBatchAlone(const Sequence& seq) const {
    std::lock_guard<std::mutex> lock(mu_);
    return ungrouped_.count(&seq) > 0;
}

std::shared_ptr<BatchLlmScheduler::Group> BatchLlmScheduler::OwnGroup(const Sequence& prefix) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = own_group_.find(&prefix);
    return it == own_group_.end() ? nullptr : it->second;
}

int64_t BatchLlmScheduler::OwnBlocks(const Sequence& seq, int32_t shared, bool at_peak) const {
    const int32_t bs = pool_.block_size();
    int64_t tokens = static_cast<int64_t>(seq.tokens.size()) + 1;
    if (at_peak && !seq.internal) {
        tokens = std::min<int64_t>(tokens - 1 + std::max(1, seq.request.max_tokens - seq.generated()),
                                   model_.config().max_context);
    }
    return (tokens + bs - 1) / bs - shared / bs;   // the shared partial block becomes its own copy
}

void BatchLlmScheduler::BeginPlan() {
    // Memory-centric planning: what new sequences may take is free memory
    // less the growth the running requests still have ahead of them (a
    // share of it: they end at different times, so the set never needs
    // every peak at once). On a two-level batch at a quarter of its KV this
    // cut preemptions from 42 to 2 and recomputed prefill from 1.25x to
    // 1.01x the tree's minimum (docs/benchmarks.md).
    promised_ = 0;
    for (const auto& r : running_) {
        if (r->internal) continue;
        const int64_t growth = OwnBlocks(*r, 0, /*at_peak=*/true) - static_cast<int64_t>(r->kv.blocks().size());
        promised_ += HeldBack(growth);
    }
}

int64_t BatchLlmScheduler::HeldBack(int64_t growth) {
    return static_cast<int64_t>(kRunningGrowthShare * static_cast<double>(std::max<int64_t>(0, growth)));
}

void BatchLlmScheduler::OnAdmitted(Sequence& seq) {
    // Started in this step: its growth counts against later admissions in
    // the same step as the running requests' does (its prompt's blocks
    // come out of free memory as they are reserved).
    if (seq.internal) return;
    promised_ += HeldBack(OwnBlocks(seq, 0, /*at_peak=*/true) - OwnBlocks(seq, 0, /*at_peak=*/false));
}

bool BatchLlmScheduler::Ready(const Sequence& seq) {
    const std::shared_ptr<Group> g = GroupOf(seq);
    if (g != nullptr && !g->prefix->done) {
        // Its prefix is still to compute: it starts soon, so what later
        // sequences take in this step must leave room for it.
        promised_ += OwnBlocks(seq, g->prefix->n_prompt, /*at_peak=*/true);
        return false;
    }
    // (A prefix that ended without its K/V leaves its members to compute
    // their whole prompts, as under FCFS.)
    const bool attaches = g != nullptr && !g->prefix->kv.blocks().empty();
    // A batch's requests, grouped or not, start when their peak fits: the
    // batch order puts decode-heavy requests first, and admitted at their
    // prompts they all grow at once (a 64-request batch with nothing
    // shared, at 64 MiB: 9 preemptions and 0.95x fcfs's throughput; at
    // their peaks, counting same-step starts in OnAdmitted, 4 and 1.01x).
    int64_t need = OwnBlocks(seq, attaches ? g->prefix->n_prompt : 0, /*at_peak=*/g != nullptr || InBatchAlone(seq));
    if (seq.internal && seq.num_computed == 0) {
        if (const std::shared_ptr<Group> own = OwnGroup(seq)) need += own->first_blocks;   // a group starts
    }
    if (running_.empty()) {
        // Nothing running will free memory: make room from pinned prefixes
        // that others hold for later, or nothing could ever start.
        while (need > pool_.num_free() && UnpinOne(&seq)) {
        }
        return true;
    }
    return need + promised_ <= pool_.num_free();
}

void BatchLlmScheduler::ReuseComputedKv(Sequence& seq) {
    const std::shared_ptr<Group> g = GroupOf(seq);
    if (g == nullptr) return;
    const Sequence& p = *g->prefix;
    if (p.num_computed < p.n_prompt || p.kv.blocks().empty()) return;   // it ended without its K/V
    seq.kv.Share(pool_, p.kv.blocks(), p.n_prompt);
    seq.num_computed = p.n_prompt;
    seq.cached_tokens = p.n_prompt;
}

void BatchLlmScheduler::OnComputed(Sequence& seq) {
    if (!seq.internal) return;
    const std::shared_ptr<Group> own = OwnGroup(seq);
    if (own != nullptr && own->recomputing) recomputed_ += static_cast<uint64_t>(seq.planned);
}

Sequence* BatchLlmScheduler::ChooseVictim(const Sequence& needing) {
    Sequence* victim = nullptr;
    int64_t victim_cost = 0;
    for (auto& r : running_) {
        if (r->in_plan || r.get() == &needing || r->internal) continue;
        // What resuming it recomputes: its own tokens; the prefix it shares
        // stays pinned and is attached again.
        const int64_t cost = r->num_computed - r->cached_tokens;
        if (!victim || cost < victim_cost || (cost == victim_cost && r->admit_order > victim->admit_order)) {
            victim = r.get();
            victim_cost = cost;
        }
    }
    return victim;
}

bool BatchLlmScheduler::FreeLastResort() {
    // While something else runs in this step, the sequence that found no
    // block waits a step: what runs will end and free its blocks.
    for (const auto& r : running_) {
        if (r->in_plan) return false;
    }
    return UnpinOne(nullptr);
}

bool BatchLlmScheduler::UnpinOne(const Sequence* keep) {
    // Groups in use: those of running sequences and of `keep`, with every
    // group enclosing them, and groups enclosing another pinned prefix.
    std::unordered_set<const Group*> used;
    auto mark = [&](std::shared_ptr<Group> g) {
        for (; g != nullptr; g = g->parent) used.insert(g.get());
    };
    for (const auto& r : running_) mark(GroupOf(*r));
    if (keep != nullptr) {
        mark(GroupOf(*keep));
        mark(OwnGroup(*keep));
    }
    std::vector<std::shared_ptr<Group>> pinned;
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [prefix, g] : own_group_) {
            if (g->prefix->done && !g->prefix->kv.blocks().empty()) pinned.push_back(g);
        }
    }
    for (const auto& g : pinned) {
        for (auto p = g->parent; p != nullptr; p = p->parent) used.insert(p.get());
    }
    for (const auto& g : pinned) {
        if (used.count(g.get())) continue;
        Sequence& p = *g->prefix;
        p.kv.Release();
        p.num_computed = 0;
        p.cached_tokens = 0;
        p.done = false;
        g->recomputing = true;
        waiting_.PushFront(g->prefix);   // its members wait for it again
        return true;
    }
    return false;
}

void BatchLlmScheduler::Ended(Sequence& seq) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (seq.internal) own_group_.erase(&seq);
        ungrouped_.erase(&seq);
    }
    LeaveGroup(seq);
}

void BatchLlmScheduler::LeaveGroup(Sequence& member) {
    std::shared_ptr<Group> g;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = group_of_.find(&member);
        if (it == group_of_.end()) return;
        g = std::move(it->second);
        group_of_.erase(it);
    }
    if (--g->users > 0) return;
    Sequence& p = *g->prefix;
    if (p.done) {
        p.kv.Release();   // computed, and every member has ended
        Ended(p);         // which may let go of the prefix around it
    } else {
        p.abandoned = true;   // still to compute, and nobody needs it: the engine ends it
    }
}

}  // namespace prepack
