// The scheduling policies by name, and the scheduler each one runs
// (core/scheduler: fcfs, lru; core/batchllm: batchllm).
#pragma once

#include <memory>
#include <string_view>

#include "core/base/status.h"
#include "core/scheduler/scheduler.h"

namespace prepack {

// How the engine shares prompt prefixes between requests.
enum class SchedulePolicy {
    kFcfs,       // first come, first served; nothing shared (baseline)
    kLru,        // + a vLLM-style block-hash prefix cache with LRU eviction
    kBatchLlm,   // offline batches: global prefix tree, groups scheduled together (BatchLLM)
};
const char* SchedulePolicyName(SchedulePolicy p);
absl::StatusOr<SchedulePolicy> ParseSchedulePolicy(std::string_view name);

std::unique_ptr<Scheduler> MakeScheduler(SchedulePolicy policy, const Model& model, KvBlockPool& pool,
                                         SequenceQueue& waiting, SchedulerLimits limits);

}  // namespace prepack
