// The `batchllm` policy (Zheng et al. 2024) on top of FCFS continuous
// batching: an offline batch is grouped by shared prefix first (a prefix
// tree over all its prompts, collapsed into groups by batchllm/prefix_tree.h),
// groups join the queue in order of decode/prompt ratio (highest first, so
// long decodes overlap later prefills), and each group's prefix is computed
// once by an internal sequence. Members wait until it is computed, then
// share its blocks by reference (the partly filled last block is copied on
// write); the prefix stays pinned until its last waiting member holds its
// own references, so its blocks live exactly as long as the group's last
// member. Requests submitted one at a time run as under FCFS.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/scheduler/fcfs_scheduler.h"

namespace prepack {

class BatchLlmScheduler : public FcfsScheduler {
public:
    using FcfsScheduler::FcfsScheduler;
    const char* name() const override { return "batchllm"; }
    std::vector<std::shared_ptr<Sequence>> OrderBatch(std::vector<std::shared_ptr<Sequence>> batch) override;
    void Dropped(Sequence& seq) override { LeaveGroup(seq); }

protected:
    void ReuseComputedKv(Sequence& seq) override;
    bool Ready(const Sequence& seq) const override;
    void OnAdmitted(Sequence& seq) override { LeaveGroup(seq); }

private:
    struct Group {
        std::shared_ptr<Sequence> prefix;    // the internal sequence computing the shared prefix
        int32_t                   waiting = 0;   // members not yet holding its blocks
    };
    // A member no longer needs the group's prefix (it holds its own
    // references, or it left the queue); the last one lets go of it.
    void LeaveGroup(Sequence& member);
    std::shared_ptr<Group> GroupOf(const Sequence& seq) const;

    // Waiting members' groups. Written by OrderBatch on submitting threads,
    // read and pruned by the engine thread.
    mutable std::mutex                                          mu_;
    std::unordered_map<const Sequence*, std::shared_ptr<Group>> group_of_;
};

}  // namespace prepack
