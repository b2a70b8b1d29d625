// First come, first served continuous batching (vLLM-style): every step
// takes the decode tokens of the running sequences first (latency), then
// prefill chunks, oldest first, within the step's token budget; waiting
// sequences are admitted in queue order while the rest of their prompt fits
// in KV memory. When a running sequence needs a block and none is free, the
// most recently admitted sequence outside the step is preempted (its blocks
// freed; it is recomputed from its tokens later), so the engine never
// deadlocks and never corrupts another sequence's cache.
//
// Nothing is shared: this is the `fcfs` baseline. The other policies derive
// from it and fill in the hooks below (where KV computed by others is
// reused, when a sequence may start, which blocks can be given back).
#pragma once

#include "core/scheduler/scheduler.h"

namespace prepack {

class FcfsScheduler : public Scheduler {
public:
    // Most rows of a prompt scored for its log-probs per step (each row's
    // logits are kept: 256 x a 49k vocabulary is 50 MB).
    static constexpr int32_t kPromptLogprobRows = 256;

    using Scheduler::Scheduler;
    const char* name() const override { return "fcfs"; }
    bool Plan(ScheduledStep* step) override;
    void Computed(const ScheduledStep& step) override;

protected:
    // Hooks for the policies that share KV. Defaults: nothing shared.
    // Before admission: point `seq`'s block table at K/V others computed
    // for the start of its prompt, and advance its num_computed.
    virtual void ReuseComputedKv(Sequence& seq) { (void)seq; }
    // A step's planning begins.
    virtual void BeginPlan() {}
    // Whether `seq` may be admitted now (a group member waits for its
    // prefix); asked in queue order, once per waiting sequence per step.
    virtual bool Ready(const Sequence& seq) { (void)seq; return true; }
    // `seq` was admitted and holds its own references to shared blocks.
    virtual void OnAdmitted(Sequence& seq) { (void)seq; }
    // Gives back up to `n` blocks held only by a cache; returns how many.
    virtual int32_t FreeCachedBlocks(int32_t n) { (void)n; return 0; }
    // A step computed more of `seq`'s tokens.
    virtual void OnComputed(Sequence& seq) { (void)seq; }
    // The running sequence to preempt so that `needing` can grow, or null.
    // Default, as vLLM: the most recently admitted one outside the step.
    virtual Sequence* ChooseVictim(const Sequence& needing);
    // Frees blocks when nothing can be preempted; false if it could not.
    virtual bool FreeLastResort() { return false; }

private:
    // Memory-centric admission of a waiting sequence; on false it holds no blocks.
    bool Admit(Sequence& seq);
    // Tokens of `seq` to feed with `budget` tokens left in the step.
    int32_t Chunk(const Sequence& seq, int32_t budget) const;
    // Reserves room for `n_tokens` of `seq`, freeing cached blocks and then
    // preempting others as needed; false when nothing more can be freed.
    bool ReserveOrFree(Sequence& seq, int32_t n_tokens);
    void Preempt(Sequence& victim);

    uint64_t admit_counter_ = 0;
};

}  // namespace prepack
