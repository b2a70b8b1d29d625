#include "core/forward/backend.h"

#include "core/forward/cuda_module.h"
#include "core/forward/cpu_pass.h"
#include "core/model/weights.h"

namespace prepack {

absl::StatusOr<Device> ParseDevice(const std::string& name) {
    if (name == "cpu") return Device::kCpu;
    if (name == "cuda") return Device::kCuda;
    return absl::InvalidArgumentError(absl::StrCat("unknown device '", name, "' (choices: cpu, cuda)"));
}

const char* DeviceName(Device device) { return device == Device::kCuda ? "cuda" : "cpu"; }

absl::Status CheckDevice(Device device) {
    if (device == Device::kCpu) return absl::OkStatus();
    PP_ASSIGN_OR_RETURN(const CudaModule* cuda, LoadCudaModule());
    if (cuda->device_count() == 0) return absl::UnavailableError("no usable CUDA device (no GPU or no driver)");
    return absl::OkStatus();
}

absl::StatusOr<Backend> CreateBackend(const Model& model, Device device, int32_t kv_block_size,
                                      uint64_t kv_budget_bytes, int64_t min_kv_tokens, cpu::DType kv_dtype) {
    const ModelConfig& c = model.config();
    Backend b;
    if (device == Device::kCpu) {
        const uint64_t budget = kv_budget_bytes ? kv_budget_bytes : AutoKvBudget(c, min_kv_tokens, kv_dtype);
        PP_ASSIGN_OR_RETURN(b.pool, KvBlockPool::Create(c, kv_block_size, budget, kv_dtype));
        b.runner = std::make_unique<ForwardPass>(model, *b.pool);
        return b;
    }
    PP_RETURN_IF_ERROR(CheckDevice(device));
    PP_ASSIGN_OR_RETURN(const CudaModule* cuda, LoadCudaModule());
    // The weights go to the device with the forward pass, after the pool,
    // which leaves room for them and for activations of a few thousand rows.
    const uint64_t activations = ForwardPass::ActivationBytes(c, 4096, 64);
    const uint64_t budget = kv_budget_bytes ? kv_budget_bytes
                                            : cuda->auto_kv_budget(c, min_kv_tokens, kv_dtype,
                                                                   WeightBytes(c, model.weights().dtype) + activations);
    PP_ASSIGN_OR_RETURN(b.pool, KvBlockPool::Create(c, kv_block_size, budget, kv_dtype, cuda->kv_storage()));
    PP_ASSIGN_OR_RETURN(b.runner, cuda->create_runner(model, *b.pool));
    return b;
}

}  // namespace prepack
