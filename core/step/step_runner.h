// What the engine needs from a backend: run one StepPlan against the
// model's paged KV cache and return the logits rows it asked for. The CPU
// (core/forward/cpu_pass.h) and CUDA (core/forward/cuda_pass.h) forward passes implement
// it; the scheduler never knows which one it drives.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/aligned_buffer.h"
#include "core/kv/kv_cache.h"
#include "core/model/model.h"
#include "core/base/status.h"
#include "core/step/step_plan.h"

namespace prepack {

struct StepOutput {
    AlignedFloats        logits;      // [rows, vocab], in host memory
    int32_t              rows = 0;
    std::vector<int32_t> first_row;   // per SeqStep: its first logits row, -1 if none
};

class StepRunner {
public:
    virtual ~StepRunner() = default;
    // Validates `plan` (INVALID_ARGUMENT for ids/positions out of range or
    // overlapping spans; FAILED_PRECONDITION when a block table lacks room),
    // then computes it. On success each sequence's K/V for its span are in
    // its blocks and its num_tokens() has advanced by its n_tokens.
    virtual absl::Status Run(const StepPlan& plan, StepOutput* out) = 0;
    // Bytes currently allocated for activations (grows to the largest step).
    virtual uint64_t workspace_bytes() const = 0;
    // Cascade (shared-prefix) decode attention on or off, where the backend has it.
    virtual void set_cascade(bool on) = 0;
    // Decode queries served by cascade attention so far (per layer counted once).
    virtual uint64_t cascade_queries() const = 0;

    virtual const Model& model() const = 0;
    // The pool the plans' block tables draw from.
    virtual KvBlockPool& pool() = 0;
};

}  // namespace prepack
