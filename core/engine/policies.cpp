#include "core/engine/policies.h"

#include "core/batchllm/batchllm_scheduler.h"
#include "core/scheduler/fcfs_scheduler.h"
#include "core/scheduler/lru_scheduler.h"

namespace prepack {

const char* SchedulePolicyName(SchedulePolicy p) {
    switch (p) {
        case SchedulePolicy::kFcfs: return "fcfs";
        case SchedulePolicy::kLru: return "lru";
        case SchedulePolicy::kBatchLlm: return "batchllm";
    }
    return "unknown";
}

absl::StatusOr<SchedulePolicy> ParseSchedulePolicy(std::string_view name) {
    for (SchedulePolicy p : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        if (name == SchedulePolicyName(p)) return p;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown policy '", std::string(name), "' (use fcfs, lru or batchllm)"));
}

std::unique_ptr<Scheduler> MakeScheduler(SchedulePolicy policy, const Model& model, KvBlockPool& pool,
                                         SequenceQueue& waiting, SchedulerLimits limits) {
    switch (policy) {
        case SchedulePolicy::kLru: return std::make_unique<LruScheduler>(model, pool, waiting, limits);
        case SchedulePolicy::kBatchLlm: return std::make_unique<BatchLlmScheduler>(model, pool, waiting, limits);
        case SchedulePolicy::kFcfs: break;
    }
    return std::make_unique<FcfsScheduler>(model, pool, waiting, limits);
}

}  // namespace prepack
