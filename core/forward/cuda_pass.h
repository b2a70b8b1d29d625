// The forward pass on an NVIDIA GPU: the same StepPlan semantics as
// core/forward/cpu_pass.h (packed, ragged, padded and mixed prefill/decode steps over
// the paged KV cache), with weights, activations and the KV blocks in device
// memory. GEMMs through cuBLAS, everything else through kernels/cuda.
// Activations are in the weights' dtype (f32, or bf16 with f32 accumulation
// inside every kernel); logits come back to the host in f32.
//
// Attention: runs of consecutive tokens (prefill) through the tiled kernel,
// single rows (decode) through the per-row kernel, decode rows that share a
// prefix of blocks through cascade attention (the prefix read once per group).
// LazyLLM spans prune as on the CPU (the same decisions, core/lazyllm/lazy_prune.h).
// Every family the CPU pass runs runs here the same way (model_config.h's
// GeGLU, embedding / residual / logit scales, post-norms, attention scale
// and soft-caps, sliding-window layers with their own RoPE frequencies,
// LongRoPE's attention factor); on a windowed layer cascade groups attend
// per row, as the CPU's do.
// Built when nvcc exists (libprepack_cuda.so), and against the CPU emulator
// for tests.
#pragma once

#include <cstdint>
#include <memory>

#include "core/kv/kv_cache.h"
#include "core/model/model.h"
#include "core/step/step_runner.h"

namespace prepack {

// KV block storage in device memory for KvBlockPool::Create: plain
// cudaMalloc (RESOURCE_EXHAUSTED naming the size, UNAVAILABLE without a GPU).
KvStorageAllocator CudaKvStorage();

// Device bytes a KV budget takes when none is named: room for `min_tokens`
// and at least 256 MiB, but at most 90% of what the device has free once
// `reserved_bytes` (the weights and activations) are taken; 0 without a GPU.
uint64_t AutoCudaKvBudget(const ModelConfig& config, int64_t min_tokens, cpu::DType kv_dtype,
                          uint64_t reserved_bytes);

class CudaForwardPass : public StepRunner {
public:
    // Uploads the model's weights. `pool` must hold its blocks in device
    // memory (CudaKvStorage). UNAVAILABLE without a GPU, RESOURCE_EXHAUSTED
    // when the weights do not fit.
    static absl::StatusOr<std::unique_ptr<CudaForwardPass>> Create(const Model& model, KvBlockPool& pool);
    ~CudaForwardPass() override;

    absl::Status Run(const StepPlan& plan, StepOutput* out) override;
    uint64_t workspace_bytes() const override;
    void set_cascade(bool on) override;
    uint64_t cascade_queries() const override;
    const Model& model() const override;
    KvBlockPool& pool() override;

private:
    struct Impl;
    explicit CudaForwardPass(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace prepack
