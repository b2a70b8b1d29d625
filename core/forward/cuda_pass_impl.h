// Inside the CUDA forward pass (core/forward/cuda_pass.h), shared by its three
// files: cuda_pass.cpp (weights, the layer loop), cuda_pass_rows.cpp
// (each step's row metadata for the kernels) and cuda_pass_lazy.cpp
// (LazyLLM scoring and pruning).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/forward/cuda_pass.h"
#include "core/lazyllm/lazy_prune.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gemm.h"

namespace prepack {

inline size_t ActBytes(cpu::DType t) { return t == cpu::DType::kBf16 ? 2 : 4; }

// Grows `b` to at least `bytes` (contents not kept): buffers are sized by
// the largest step seen, then reused.
absl::Status ReserveDevice(cuda::DeviceBuffer& b, size_t bytes);

// A step's row metadata, laid out as the one int32 buffer uploaded for it
// holds it; `at` gives each part's offset (in int32s).
struct CudaStepMeta {
    enum Part { kTokens, kPositions, kSlots, kTableBegin, kKeyBegin, kDepthBegin, kLogitRows, kTables, kSingles,
                kTiles, kMembers, kGroupTiles, kParts };
    std::vector<int32_t> ints;
    size_t at[kParts + 1] = {};
    int32_t n_tiles = 0, n_group_tiles = 0;
    int64_t cascade_members = 0;
    // LazyLLM: per pruning-capable sequence, where its key depths start in
    // the per-layer depth upload (-1: not lazy), and that upload's length.
    std::vector<int32_t> depth_offset;
    int64_t depth_len = 0;
    // Split-K for the per-row kernel when its rows x heads cannot fill the GPU.
    int32_t n_splits = 1, split_keys = 0;

    size_t count(Part p) const { return at[p + 1] - at[p]; }
    void Append(Part p, const int32_t* v, size_t n);
    template <typename T>
    void Append(Part p, const std::vector<T>& v) {
        static_assert(sizeof(T) % sizeof(int32_t) == 0, "int32 records");
        Append(p, reinterpret_cast<const int32_t*>(v.data()), v.size() * sizeof(T) / sizeof(int32_t));
    }
};

struct CudaForwardPass::Impl {
    struct Layer {
        cuda::DeviceBuffer attn_norm, wqkv, wo, ffn_norm, w_gate_up, w_down;
        cuda::DeviceBuffer bqkv, q_norm, k_norm;   // empty when the model has none
        cuda::DeviceBuffer attn_post_norm, ffn_post_norm;   // Gemma 2/3's post-norms; empty otherwise
    };

    const Model&  model;
    KvBlockPool&  pool;
    cpu::DType    act = cpu::DType::kF32;
    std::unique_ptr<cuda::Blas> blas;
    // RoPE's inverse frequencies: of global layers, and of sliding-window
    // layers (their own base, no scaling; the same values when the model has none).
    cuda::DeviceBuffer token_embd, output_norm, output, inv_freq, inv_freq_swa;
    bool          tied = false;   // output is token_embd
    std::vector<Layer> layers;
    // Activations in `act`, logits in f32, the step's row metadata.
    cuda::DeviceBuffer x, x_next, xb, qkv, att, gu, hb, logits, meta;
    // Cascade members' prefix-only attention (f32): o per head, log-sum-exp per head.
    cuda::DeviceBuffer partial_o, partial_lse;
    // LazyLLM: key depths (int16) per layer, scoring jobs, scores and their
    // scratch, the pruning gather's source pointers.
    cuda::DeviceBuffer depth, score_jobs, scores, score_scratch, gather_sources;
    cuda::DeviceBuffer split_o, split_lse;   // split-K partials (f32)
    bool          cascade = true;
    uint64_t      cascade_queries = 0;

    // This step's rows (as in the CPU pass): RoPE position and token index
    // per row (-1: a row in no span), each sequence's range. Pruning moves them.
    std::vector<int32_t> row_pos, row_slot;
    std::vector<SeqRows> seq_rows;
    std::vector<std::vector<float>> lazy_scores;   // per SeqStep

    Impl(const Model& m, KvBlockPool& p) : model(m), pool(p), act(m.weights().dtype) {}

    absl::Status UploadWeights();
    absl::Status Run(const StepPlan& plan, StepOutput* out);
    // x += the block output in xb, through the post-norm `post_norm` (when
    // the model has one) and the residual scale: what comes between a
    // block and the residual stream in Gemma 2/3 and Granite.
    void AddBranch(const cuda::DeviceBuffer& post_norm, int64_t t);
    // The final norm, output matrix, logit scale and soft-cap of n rows.
    absl::Status Logits(const CudaStepMeta& m, int64_t n);
    // cuda_pass_rows.cpp: the metadata of the current rows (and each
    // sequence's first logits row into out->first_row).
    CudaStepMeta PlanRows(const StepPlan& plan, StepOutput* out) const;
    // Uploads `m` and sizes the activations for its rows.
    absl::Status UploadMeta(const CudaStepMeta& m);
    // cuda_pass_lazy.cpp.
    absl::Status UploadDepths(const StepPlan& plan, const CudaStepMeta& m);
    absl::Status ScoreLastQueries(const StepPlan& plan, const CudaStepMeta& m, int32_t layer);
    absl::Status Prune(const StepPlan& plan, int32_t layer);
};

}  // namespace prepack
