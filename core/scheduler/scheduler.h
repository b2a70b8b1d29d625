// The scheduler: which sequences run in the next forward step, and how many
// of their tokens. The engine's loop is plan -> run -> apply: Plan() fills a
// StepPlan from the running set and the waiting queue (admitting new
// sequences as KV memory allows, preempting when it runs out), the engine
// runs the plan through its forward pass, Computed() records what the pass
// computed, and the engine samples and streams the new tokens.
//
// One implementation per policy: FcfsScheduler (continuous batching,
// nothing shared; the baseline the others extend), LruScheduler (+ a
// vLLM-style prefix cache), BatchLlmScheduler (core/batchllm: global prefix
// groups). engine/policies.h makes one by name. Used by the engine thread
// only, except OrderBatch, which the submitting thread calls.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/kv/kv_cache.h"
#include "core/model/model.h"
#include "core/scheduler/sequence.h"
#include "core/scheduler/sequence_queue.h"
#include "core/step/step_plan.h"

namespace prepack {

struct SchedulerLimits {
    int32_t max_batch_tokens = 1024;   // tokens per forward step
    int32_t max_running = 64;          // sequences holding KV at once
};

// One step's work: the plan, and the sequence behind each of its spans.
struct ScheduledStep {
    StepPlan               plan;
    std::vector<Sequence*> seqs;   // seqs[i] owns plan.seqs[i]
};

class Scheduler {
public:
    Scheduler(const Model& model, KvBlockPool& pool, SequenceQueue& waiting, SchedulerLimits limits)
        : model_(model), pool_(pool), waiting_(waiting), limits_(limits) {}
    virtual ~Scheduler() = default;
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    virtual const char* name() const = 0;

    // The order in which an offline batch joins the waiting queue; a policy
    // may add internal sequences (BatchLLM: one per group's shared prefix).
    // Called on the submitting thread: what it records for the engine
    // thread, it guards.
    virtual std::vector<std::shared_ptr<Sequence>> OrderBatch(std::vector<std::shared_ptr<Sequence>> batch) {
        return batch;
    }
    // Fills `step` (empty on entry); false when there is nothing to run.
    virtual bool Plan(ScheduledStep* step) = 0;
    // The forward pass computed `step`: each sequence's computed-token count
    // advances by what it was planned; internal sequences whose prompt is
    // computed are done.
    virtual void Computed(const ScheduledStep& step) = 0;
    // `seq` ended (finished, cancelled, expired or failed; running or still
    // waiting) and its blocks are released: what it pinned for it can go.
    virtual void Ended(Sequence& seq) { (void)seq; }
    // KV blocks that only a prefix cache holds (free for the taking).
    virtual int32_t cached_blocks() const { return 0; }
    // Shared-prefix tokens computed again after they had been computed once
    // for the batch (BatchLLM keeps them pinned instead; 0 for the others).
    virtual uint64_t prefix_tokens_recomputed() const { return 0; }

    // The sequences holding KV. The engine removes those that end.
    std::vector<std::shared_ptr<Sequence>>& running() { return running_; }
    uint64_t preemptions() const { return preemptions_; }

protected:
    const Model&                           model_;
    KvBlockPool&                           pool_;
    SequenceQueue&                         waiting_;
    SchedulerLimits                        limits_;
    std::vector<std::shared_ptr<Sequence>> running_;
    uint64_t                               preemptions_ = 0;
};

}  // namespace prepack
