// Where the engine computes: a KV pool and the forward pass that runs steps
// on it, on the CPU or on a CUDA GPU (`--device cpu|cuda`). Everything above
// (scheduler, prefix sharing, prepacking) is the same for both.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/kv/kv_cache.h"
#include "core/model/model.h"
#include "core/step/step_runner.h"

namespace prepack {

enum class Device { kCpu, kCuda };

// "cpu" or "cuda" (INVALID_ARGUMENT naming the choices otherwise).
absl::StatusOr<Device> ParseDevice(const std::string& name);
const char* DeviceName(Device device);

// OK when `device` can run here: the CPU always; CUDA when this build has
// it (UNIMPLEMENTED) and a GPU is usable (UNAVAILABLE). Cheap: callers check
// it before loading a model they could not run.
absl::Status CheckDevice(Device device);

struct Backend {
    std::unique_ptr<KvBlockPool> pool;
    std::unique_ptr<StepRunner>  runner;
};

// The KV pool (`kv_budget_bytes` of it; 0 = sized for at least
// `min_kv_tokens` tokens by the device's own rule) and the forward pass for
// `model` on `device`. For CUDA: UNIMPLEMENTED in a build without it,
// UNAVAILABLE without a usable GPU, RESOURCE_EXHAUSTED when the weights or
// the pool do not fit in device memory.
absl::StatusOr<Backend> CreateBackend(const Model& model, Device device, int32_t kv_block_size,
                                      uint64_t kv_budget_bytes, int64_t min_kv_tokens, cpu::DType kv_dtype);

}  // namespace prepack
