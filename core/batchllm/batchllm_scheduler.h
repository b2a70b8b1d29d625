// The `batchllm` policy (Zheng et al. 2024) on top of FCFS continuous
// batching. An offline batch is grouped by shared prefix first, at as many
// levels as pay (batchllm/nested_groups.h: a system prompt shared by every
// group, each group's document on top of it), and queued depth first in
// order of decode/prompt ratio, so the members of a group run together and
// long decodes overlap later prefills. Each group's prefix is computed once
// by an internal sequence (on top of its enclosing prefix's blocks).
//
// Pinning. A computed prefix keeps its blocks until its last member (request
// or inner prefix) has ended, not merely started: a member preempted under
// KV pressure re-attaches to the pinned prefix when it resumes and
// recomputes only its own tokens. Members share the prefix's blocks by
// reference (the partly filled last block is copied on write).
//
// Memory-aware admission. A group's prefix starts only when its blocks and
// the first member's own blocks at its peak (prompt and max_tokens) fit in
// free memory; members waiting for a prefix being computed hold back
// (promise) their peak blocks from what later sequences may take in the
// same step, so a scarce budget runs a group's members as consecutive
// sub-batches under its pinned prefix instead of spreading the budget over
// the prefixes of groups that cannot run yet. A member starts when its own
// blocks at its peak fit beside half the growth the running requests still
// have ahead (kRunningGrowthShare), requests started earlier in the same
// step included; so does a batch request in no group. A request submitted
// on its own needs only its prompt to fit beside that share.
//
// Preemption. The victim is the running request that is cheapest to
// recompute (its own tokens, never a shared prefix), newest first on ties;
// prefixes are never preempted. With nothing to preempt, a request that
// needs a block waits a step while others run; only when nothing at all can
// run is a pinned prefix that no running request uses let go (counted in
// prefix_tokens_recomputed()), so a budget too small for the pinned set
// still makes progress. Requests submitted one at a time are otherwise
// scheduled as under FCFS.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/scheduler/fcfs_scheduler.h"

namespace prepack {

// The share of running requests' remaining KV growth that admission keeps free.
constexpr double kRunningGrowthShare = 0.5;

class BatchLlmScheduler : public FcfsScheduler {
public:
    using FcfsScheduler::FcfsScheduler;
    const char* name() const override { return "batchllm"; }
    std::vector<std::shared_ptr<Sequence>> OrderBatch(std::vector<std::shared_ptr<Sequence>> batch) override;
    void Ended(Sequence& seq) override;
    uint64_t prefix_tokens_recomputed() const override { return recomputed_; }

protected:
    void BeginPlan() override;
    void ReuseComputedKv(Sequence& seq) override;
    bool Ready(const Sequence& seq) override;
    void OnAdmitted(Sequence& seq) override;
    void OnComputed(Sequence& seq) override;
    Sequence* ChooseVictim(const Sequence& needing) override;
    bool FreeLastResort() override;

private:
    struct Group {
        std::shared_ptr<Sequence> prefix;        // computes the prefix; holds (pins) its blocks once computed
        std::shared_ptr<Group>    parent;        // the enclosing group, whose prefix this one's starts with
        int32_t                   users = 0;     // members (requests, inner prefixes) that have not ended
        int64_t                   first_blocks = 0;   // own blocks of the member queued first under it
        bool                      recomputing = false;   // let go under memory pressure, computing again
    };
    std::shared_ptr<Group> GroupOf(const Sequence& seq) const;        // the group `seq` is a member of
    std::shared_ptr<Group> OwnGroup(const Sequence& prefix) const;    // the group `prefix` computes
    bool InBatchAlone(const Sequence& seq) const;                     // of an offline batch, in no group
    // Blocks `seq` needs beyond the `shared` tokens it takes from a prefix:
    // for its prompt and first token, or at its peak (all of max_tokens).
    int64_t OwnBlocks(const Sequence& seq, int32_t shared, bool at_peak) const;
    // The part of a request's remaining growth (blocks) admission keeps free.
    static int64_t HeldBack(int64_t growth);
    // A member no longer needs its group's prefix; the last one lets go of it.
    void LeaveGroup(Sequence& member);
    // Lets go of one computed prefix that no running sequence (and not
    // `keep`, nor its enclosing prefixes) uses: it is queued to be computed
    // again. False when there is none.
    bool UnpinOne(const Sequence* keep);

    // Written by OrderBatch on submitting threads, read and pruned by the
    // engine thread. A group's other fields are the engine thread's alone.
    mutable std::mutex                                          mu_;
    std::unordered_map<const Sequence*, std::shared_ptr<Group>> group_of_;    // member -> its group
    std::unordered_map<const Sequence*, std::shared_ptr<Group>> own_group_;   // prefix -> the group it computes
    std::unordered_set<const Sequence*>                         ungrouped_;   // batch requests in no group
    int64_t  promised_ = 0;    // blocks held back this step for members about to start
    uint64_t recomputed_ = 0;
};

}  // namespace prepack
