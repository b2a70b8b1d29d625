#include "core/batchllm/batchllm_scheduler.h"

#include "core/base/runtime.h"
#include "core/batchllm/prefix_tree.h"

namespace prepack {

std::vector<std::shared_ptr<Sequence>> BatchLlmScheduler::OrderBatch(std::vector<std::shared_ptr<Sequence>> batch) {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<int32_t> max_tokens;
    for (const auto& s : batch) {
        prompts.push_back(s->tokens);
        max_tokens.push_back(s->request.max_tokens);
    }
    Grouping grouping = GroupByPrefix(prompts);
    OrderByDecodeRatio(grouping, prompts, max_tokens);
    std::vector<std::shared_ptr<Sequence>> order;
    std::lock_guard<std::mutex> lock(mu_);
    for (const PrefixGroup& g : grouping.groups) {
        std::shared_ptr<Group> group;
        if (g.prefix_len > 0 && g.members.size() > 1) {
            // An internal sequence with no stream of its own computes the prefix once.
            const Sequence& first = *batch[g.members[0]];
            Request pr;
            pr.prompt_tokens.assign(first.tokens.begin(), first.tokens.begin() + g.prefix_len);
            auto prefix = std::make_shared<Sequence>(pr, model_.tokenizer(), model_.config().max_context);
            prefix->tokens = pr.prompt_tokens;
            prefix->n_prompt = g.prefix_len;
            prefix->internal = true;
            prefix->t_submit = NowSeconds();
            group = std::make_shared<Group>(Group{prefix, static_cast<int32_t>(g.members.size())});
            order.push_back(std::move(prefix));
        }
        for (int32_t m : g.members) {
            if (group) group_of_[batch[m].get()] = group;
            order.push_back(batch[m]);
        }
    }
    return order;
}

std::shared_ptr<BatchLlmScheduler::Group> BatchLlmScheduler::GroupOf(const Sequence& seq) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = group_of_.find(&seq);
    return it == group_of_.end() ? nullptr : it->second;
}

bool BatchLlmScheduler::Ready(const Sequence& seq) const {
    const std::shared_ptr<Group> g = GroupOf(seq);
    // A member waits for its prefix to be computed (or to have ended: then
    // it computes its whole prompt itself).
    return g == nullptr || g->prefix->done;
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

void BatchLlmScheduler::LeaveGroup(Sequence& member) {
    std::shared_ptr<Group> g;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = group_of_.find(&member);
        if (it == group_of_.end()) return;
        g = std::move(it->second);
        group_of_.erase(it);
    }
    if (--g->waiting > 0) return;   // the count is the engine thread's alone
    Sequence& p = *g->prefix;
    if (p.done) {
        p.kv.Release();   // computed, and every member holds its own references
    } else {
        p.abandoned = true;   // still to compute, and nobody needs it: the engine ends it
    }
}

}  // namespace prepack
