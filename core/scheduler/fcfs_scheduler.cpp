#include "core/scheduler/fcfs_scheduler.h"

#include <algorithm>

#include "core/base/runtime.h"

namespace prepack {

int32_t FcfsScheduler::Chunk(const Sequence& s, int32_t budget) const {
    // LazyLLM scores a prompt by its last token, so a pruned prompt goes in
    // one piece: alone in a step if it is longer than the step budget, or it
    // waits for a step with room. After a preemption its generated tokens
    // are fed back one per step, as they were decoded, so the recomputed
    // cache (and what it pruned) is the one it had.
    if (s.lazy && s.num_computed < s.n_prompt) {
        const int32_t k = s.n_prompt - s.num_computed;
        return k <= budget || budget == limits_.max_batch_tokens ? k : 0;
    }
    // A prompt whose log-probs are wanted has every row's logits computed:
    // a bounded chunk keeps that buffer (rows x vocabulary floats) small.
    if (s.wants_prompt_logprobs() && s.num_computed < s.n_prompt) {
        return std::min({s.remaining(), budget, kPromptLogprobRows});
    }
    return s.lazy ? std::min(1, budget) : std::min(s.remaining(), budget);
}

void FcfsScheduler::Preempt(Sequence& victim) {
    victim.lazy.reset();
    victim.kv.Release();
    victim.num_computed = 0;
    auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& s) { return s.get() == &victim; });
    std::shared_ptr<Sequence> keep = std::move(*it);
    running_.erase(it);
    waiting_.PushFront(std::move(keep));   // first in line when memory frees up
    ++preemptions_;
}

Sequence* FcfsScheduler::ChooseVictim(const Sequence& needing) {
    Sequence* victim = nullptr;
    for (auto& r : running_) {
        if (!r->in_plan && r.get() != &needing && (!victim || r->admit_order > victim->admit_order)) victim = r.get();
    }
    return victim;
}

bool FcfsScheduler::ReserveOrFree(Sequence& s, int32_t n_tokens) {
    while (!s.kv.Reserve(pool_, n_tokens).ok()) {
        // Out of blocks: first give back cached blocks nobody uses, then
        // preempt a sequence that is not in this step, then whatever the
        // policy holds in reserve.
        if (FreeCachedBlocks(1) > 0) continue;
        if (Sequence* victim = ChooseVictim(s)) {
            Preempt(*victim);
            continue;
        }
        if (!FreeLastResort()) return false;
    }
    return true;
}

bool FcfsScheduler::Admit(Sequence& s) {
    // Prompt log-probs come from this request's own rows: nothing shared.
    if (s.num_computed == 0 && !s.wants_prompt_logprobs()) ReuseComputedKv(s);
    // Memory-centric admission: the rest of its prompt and its first token
    // must fit, and under LazyLLM an aux cache for every token it computes
    // (taken up front, so pruning never depends on what else runs).
    const ModelConfig& c = model_.config();
    if (s.lazy_schedule) {
        s.lazy = std::make_unique<LazyState>(pool_, c.n_layers, c.dim, *s.lazy_schedule, s.num_computed);
        s.lazy->set_n_prompt(s.n_prompt);
        s.lazy->set_revive_limit(s.lazy_revive_limit);
        s.lazy->set_scoring(s.lazy_scoring);
    }
    const int32_t bs = pool_.block_size();
    const int64_t aux_cells = static_cast<int64_t>(s.tokens.size()) - s.num_computed;
    const int64_t need = (static_cast<int64_t>(s.tokens.size()) + 1 + bs - 1) / bs -
                         static_cast<int64_t>(s.kv.blocks().size()) + 1 /* copy on write */ +
                         (s.lazy ? s.lazy->aux().BlocksFor(aux_cells) : 0);
    if (need > pool_.num_free()) FreeCachedBlocks(static_cast<int32_t>(need - pool_.num_free()));
    if (need > pool_.num_free() || (s.lazy && !s.lazy->aux().Reserve(aux_cells).ok())) {
        s.lazy.reset();
        s.kv.Release();   // give the shared blocks back; it retries in a later step
        s.num_computed = 0;
        return false;
    }
    return true;
}

bool FcfsScheduler::Plan(ScheduledStep* step) {
    BeginPlan();
    int32_t budget = limits_.max_batch_tokens;
    auto add = [&](Sequence& s, int32_t k) {
        s.in_plan = true;
        s.planned = k;
        if (s.t_scheduled < 0) s.t_scheduled = NowSeconds();
        const bool last = s.num_computed + k == static_cast<int32_t>(s.tokens.size()) && !s.internal;
        const bool score_prompt = s.wants_prompt_logprobs() && s.num_computed < s.n_prompt;
        step->plan.Add(&s.kv, s.tokens.data() + s.num_computed, k, s.num_computed,
                       score_prompt ? LogitsWanted::kAll : last ? LogitsWanted::kLast : LogitsWanted::kNone);
        step->plan.seqs.back().lazy = s.lazy.get();
        step->seqs.push_back(&s);
        budget -= k;
    };
    // Decode tokens first (latency), then prefill chunks, each oldest first.
    std::vector<Sequence*> order;
    for (auto& s : running_) order.push_back(s.get());
    std::stable_sort(order.begin(), order.end(), [](Sequence* a, Sequence* b) {
        return (a->remaining() == 1) > (b->remaining() == 1);
    });
    for (Sequence* s : order) {
        if (budget <= 0) break;
        // Preempted by an earlier sequence's reservation in this loop?
        if (std::none_of(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == s; })) continue;
        const int32_t k = Chunk(*s, budget);
        if (k <= 0 || !ReserveOrFree(*s, s->num_computed + k)) continue;
        add(*s, k);
    }
    // Admit waiting sequences in queue order while their prompts fit in
    // memory. One that is not ready (a group member waiting for its prefix)
    // is passed over; the first that does not fit stops admission.
    for (const std::shared_ptr<Sequence>& s : waiting_.Snapshot()) {
        if (budget <= 0 || static_cast<int32_t>(running_.size()) >= limits_.max_running) break;
        if (!Ready(*s)) continue;
        if (!Admit(*s)) break;
        if (!waiting_.Remove(s.get())) {   // taken out meanwhile: not ours to run
            s->lazy.reset();
            s->kv.Release();
            s->num_computed = 0;
            continue;
        }
        OnAdmitted(*s);
        s->admit_order = ++admit_counter_;
        running_.push_back(s);
        const int32_t k = Chunk(*s, budget);
        if (k > 0 && ReserveOrFree(*s, s->num_computed + k)) add(*s, k);
    }
    if (step->plan.seqs.empty() && !running_.empty()) {
        // Nothing fits though sequences hold KV: every one needs a block
        // that nothing can free, so one has outgrown the whole budget alone.
        // End it with the reason rather than spin on it forever.
        for (auto& s : running_) {
            if (s->internal) continue;
            const int64_t room = int64_t{pool_.num_blocks()} * pool_.block_size();
            s->error = absl::ResourceExhaustedError(absl::StrCat(
                "KV budget exhausted: the request holds ", s->tokens.size(), " tokens and needs room for one more, "
                "but the whole KV budget holds ", room, " tokens; raise the KV budget or lower max_tokens"));
            break;
        }
    }
    return !step->plan.seqs.empty();
}

void FcfsScheduler::Computed(const ScheduledStep& step) {
    for (Sequence* s : step.seqs) {
        s->in_plan = false;
        s->num_computed += s->planned;
        OnComputed(*s);
        // A computed internal sequence leaves the running set but keeps its
        // blocks until the sequences it computed them for have taken them.
        if (s->internal && s->num_computed == s->n_prompt) s->done = true;
    }
}

}  // namespace prepack
