#include "core/forward/cuda_pass.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/forward/cpu_pass.h"
#include "core/forward/cuda_pass_impl.h"
#include "core/lazyllm/lazy_state.h"
#include "kernels/cpu/bf16.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/elementwise.h"

namespace prepack {

using cpu::DType;

KvStorageAllocator CudaKvStorage() {
    return [](size_t bytes) -> absl::StatusOr<KvStorage> {
        if (cuda::DeviceCount() == 0) return absl::UnavailableError("no usable CUDA device for the KV cache");
        PP_ASSIGN_OR_RETURN(cuda::DeviceBuffer buf, cuda::DeviceBuffer::Allocate(bytes));
        // The pool owns the memory from here on: `free` takes it back into a
        // buffer whose destructor releases it.
        auto* owner = new cuda::DeviceBuffer(std::move(buf));
        KvStorage s;
        s.base = owner->data();
        s.copy = cuda::CopyOnDevice;
        s.free = [owner](void*) { delete owner; };
        return s;
    };
}

uint64_t AutoCudaKvBudget(const ModelConfig& config, int64_t min_tokens, DType kv_dtype, uint64_t reserved_bytes) {
    const uint64_t free = cuda::FreeDeviceBytes();
    if (free == 0) return 0;
    const uint64_t avail = free > reserved_bytes ? free - reserved_bytes : 0;
    const uint64_t want =
        std::max<uint64_t>(256ull << 20, config.KvBytesPerToken(kv_dtype) * static_cast<uint64_t>(min_tokens));
    // As on the CPU (AutoKvBudget), what was asked for and no more, so that
    // other work on the device (benchmarks' ceilings, a second engine) has
    // room; a server that wants most of the device names --kv-budget.
    return std::min(want, avail / 10 * 9);
}

namespace {

// A host matrix copied to the device as it is (f32 or bf16). Quantized
// weights are decoded to the model's dense dtype first: the CUDA kernels
// have no quantized GEMM yet, so on the GPU they take that dtype's memory.
// The dtype `m` has on the device.
DType DeviceDType(const cpu::Matrix& m, DType dense) { return m.quantized() ? dense : m.dtype(); }

absl::StatusOr<cuda::DeviceBuffer> Upload(const cpu::Matrix& m, int64_t rows, int64_t cols, DType dense) {
    const DType dtype = DeviceDType(m, dense);
    const size_t bytes = static_cast<size_t>(rows) * cols * ActBytes(dtype);
    PP_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::Allocate(bytes));
    if (!m.quantized()) {
        const void* src = dtype == DType::kBf16 ? static_cast<const void*>(m.bf16) : static_cast<const void*>(m.f32);
        PP_RETURN_IF_ERROR(b.CopyFromHost(src, bytes));
        return b;
    }
    std::vector<float> decoded(static_cast<size_t>(rows * cols));
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) cpu::DecodeMatrixRow(m, r, cols, decoded.data() + r * cols);
    if (dtype == DType::kF32) {
        PP_RETURN_IF_ERROR(b.CopyFromHost(decoded.data(), bytes));
        return b;
    }
    std::vector<uint16_t> half(decoded.size());
    cpu::F32ToBf16Row(decoded.data(), half.data(), half.size());
    PP_RETURN_IF_ERROR(b.CopyFromHost(half.data(), bytes));
    return b;
}

absl::StatusOr<cuda::DeviceBuffer> UploadFloats(const float* v, int64_t n) {
    PP_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::Allocate(n * sizeof(float)));
    PP_RETURN_IF_ERROR(b.CopyFromHost(v, n * sizeof(float)));
    return b;
}

}  // namespace

absl::Status ReserveDevice(cuda::DeviceBuffer& b, size_t bytes) {
    const size_t had = b.bytes();
    if (had >= bytes) return absl::OkStatus();
    b = cuda::DeviceBuffer();   // free first: the old and new need not both fit
    PP_ASSIGN_OR_RETURN(b, cuda::DeviceBuffer::Allocate(std::max(bytes, had * 3 / 2)));
    return absl::OkStatus();
}


absl::Status CudaForwardPass::Impl::UploadWeights() {
    const ModelConfig& c = model.config();
    const ModelWeights& w = model.weights();
    PP_ASSIGN_OR_RETURN(blas, cuda::Blas::Create());
    PP_ASSIGN_OR_RETURN(token_embd, Upload(w.token_embd, c.vocab_size, c.dim, w.dtype));
    tied = w.output.SameStorage(w.token_embd);
    if (!tied) {
        PP_ASSIGN_OR_RETURN(output, Upload(w.output, c.vocab_size, c.dim, w.dtype));
    }
    PP_ASSIGN_OR_RETURN(output_norm, UploadFloats(w.output_norm, c.dim));
    const std::vector<float> freq = RopeInverseFrequencies(c, w);
    PP_ASSIGN_OR_RETURN(inv_freq, UploadFloats(freq.data(), static_cast<int64_t>(freq.size())));
    const std::vector<float> freq_swa = RopeInverseFrequencies(c, w, /*windowed=*/true);
    PP_ASSIGN_OR_RETURN(inv_freq_swa, UploadFloats(freq_swa.data(), static_cast<int64_t>(freq_swa.size())));
    for (const LayerWeights& lw : w.layers) {
        Layer l;
        PP_ASSIGN_OR_RETURN(l.attn_norm, UploadFloats(lw.attn_norm, c.dim));
        PP_ASSIGN_OR_RETURN(l.wqkv, Upload(lw.wqkv, c.qkv_dim(), c.dim, w.dtype));
        PP_ASSIGN_OR_RETURN(l.wo, Upload(lw.wo, c.dim, c.q_dim(), w.dtype));
        PP_ASSIGN_OR_RETURN(l.ffn_norm, UploadFloats(lw.ffn_norm, c.dim));
        PP_ASSIGN_OR_RETURN(l.w_gate_up, Upload(lw.w_gate_up, 2 * int64_t{c.hidden_dim}, c.dim, w.dtype));
        PP_ASSIGN_OR_RETURN(l.w_down, Upload(lw.w_down, c.dim, c.hidden_dim, w.dtype));
        if (lw.bqkv != nullptr) {
            PP_ASSIGN_OR_RETURN(l.bqkv, UploadFloats(lw.bqkv, c.qkv_dim()));
        }
        if (lw.q_norm != nullptr) {
            PP_ASSIGN_OR_RETURN(l.q_norm, UploadFloats(lw.q_norm, c.head_dim));
            PP_ASSIGN_OR_RETURN(l.k_norm, UploadFloats(lw.k_norm, c.head_dim));
        }
        if (lw.attn_post_norm != nullptr) {
            PP_ASSIGN_OR_RETURN(l.attn_post_norm, UploadFloats(lw.attn_post_norm, c.dim));
        }
        if (lw.ffn_post_norm != nullptr) {
            PP_ASSIGN_OR_RETURN(l.ffn_post_norm, UploadFloats(lw.ffn_post_norm, c.dim));
        }
        layers.push_back(std::move(l));
    }
    return cuda::Synchronize("uploading the weights");
}

void CudaForwardPass::Impl::AddBranch(const cuda::DeviceBuffer& post_norm, int64_t t) {
    const ModelConfig& c = model.config();
    if (!post_norm.empty()) cuda::RmsNorm(xb.data(), post_norm.as<float>(), xb.data(), t, c.dim, c.norm_eps, act);
    cuda::AddScaled(x.data(), xb.data(), act, t * c.dim, c.residual_scale);
}

absl::Status CudaForwardPass::Impl::Logits(const CudaStepMeta& m, int64_t n) {
    const ModelConfig& c = model.config();
    const int64_t d = c.dim;
    // Only the rows that produce logits pass the final norm and the output matrix.
    cuda::Gather(x.data(), act, meta.as<int32_t>() + m.at[CudaStepMeta::kLogitRows], xb.data(), n, d, act);
    cuda::RmsNorm(xb.data(), output_norm.as<float>(), xb.data(), n, d, c.norm_eps, act);
    const void* wout = tied ? token_embd.data() : output.data();
    PP_RETURN_IF_ERROR(blas->Linear(xb.data(), wout, logits.data(), n, c.vocab_size, d, false, act, DType::kF32));
    // Granite divides the logits, Gemma 2 soft-caps them: in this order, as the CPU does.
    if (c.logit_scale != 1.0f) cuda::Scale(logits.data(), DType::kF32, n * c.vocab_size, 1.0f / c.logit_scale);
    if (c.final_softcap > 0.0f) cuda::SoftCap(logits.data(), DType::kF32, n * c.vocab_size, c.final_softcap);
    return absl::OkStatus();
}

absl::Status CudaForwardPass::Impl::Run(const StepPlan& plan, StepOutput* out) {
    const ModelConfig& c = model.config();
    PP_RETURN_IF_ERROR(ValidateStepPlan(c, plan));
    int64_t t = static_cast<int64_t>(plan.tokens.size());
    const int64_t d = c.dim, h = c.hidden_dim;
    InitStepRows(plan, &row_pos, &row_slot, &seq_rows);
    BeginLazyStep(plan);
    CudaStepMeta m = PlanRows(plan, out);
    cascade_queries += static_cast<uint64_t>(m.cascade_members);
    PP_RETURN_IF_ERROR(ReserveDevice(x, t * d * ActBytes(act)));
    PP_RETURN_IF_ERROR(UploadMeta(m));

    const ModelWeights& w = model.weights();
    cuda::Gather(token_embd.data(), DeviceDType(w.token_embd, w.dtype), meta.as<int32_t>() + m.at[CudaStepMeta::kTokens], x.data(),
                 t, d, act);
    if (c.embed_scale != 1.0f) cuda::Scale(x.data(), act, t * d, c.embed_scale);
    // A block's output goes straight onto the residual stream (the GEMM
    // accumulates) unless a post-norm or a residual scale comes between.
    const bool branch_apart = c.post_norms || c.residual_scale != 1.0f;
    for (int32_t l = 0; l < c.n_layers; ++l) {
        const Layer& lw = layers[l];
        const cpu::AttentionShape shape = LayerAttentionShape(c, l);
        // Cascade groups share a prefix only outside a sliding window: on a
        // windowed layer their members attend per row, as on the CPU.
        const bool cascade_here = m.cascade_members > 0 && shape.window == 0;
        const cpu::PagedKv kv = pool.Layer(l);
        const auto part = [&](CudaStepMeta::Part p) { return meta.as<int32_t>() + m.at[p]; };
        const int32_t* d_positions = part(CudaStepMeta::kPositions);
        const int32_t* d_tables = part(CudaStepMeta::kTables);
        const cuda::DeviceRows rows{t, part(CudaStepMeta::kSlots), part(CudaStepMeta::kTableBegin), d_tables};
        cuda::DeviceRows singles = rows;
        singles.rows = static_cast<int64_t>(m.count(CudaStepMeta::kSingles));
        singles.row_ids = part(CudaStepMeta::kSingles);
        if (cascade_here) {
            singles.key_begin = part(CudaStepMeta::kKeyBegin);
            singles.partial_o = partial_o.as<float>();
            singles.partial_lse = partial_lse.as<float>();
        }
        if (m.n_splits > 1) {
            singles.n_splits = m.n_splits;
            singles.split_keys = m.split_keys;
            singles.split_o = split_o.as<float>();
            singles.split_lse = split_lse.as<float>();
        }

        cuda::RmsNorm(x.data(), lw.attn_norm.as<float>(), xb.data(), t, d, c.norm_eps, act);
        PP_RETURN_IF_ERROR(blas->Linear(xb.data(), lw.wqkv.data(), qkv.data(), t, c.qkv_dim(), d, false, act));
        if (!lw.bqkv.empty()) cuda::AddBias(qkv.data(), act, lw.bqkv.as<float>(), t, c.qkv_dim());
        if (!lw.q_norm.empty()) {
            cuda::RmsNormHeads(qkv.data(), act, t, c.qkv_dim(), 0, c.n_heads, c.head_dim, lw.q_norm.as<float>(),
                               c.norm_eps);
            cuda::RmsNormHeads(qkv.data(), act, t, c.qkv_dim(), c.q_dim(), c.n_kv_heads, c.head_dim,
                               lw.k_norm.as<float>(), c.norm_eps);
        }
        const bool neox = c.rope_style == RopeStyle::kNeox;
        const float* freq = (c.Windowed(l) ? inv_freq_swa : inv_freq).as<float>();
        // LongRoPE's attention factor multiplies the rotated dims of Q and K.
        cuda::Rope(qkv.data(), act, t, c.qkv_dim(), 0, c.n_heads, c.head_dim, c.rope_dim, d_positions, freq, neox,
                   c.rope_attn_factor);
        cuda::Rope(qkv.data(), act, t, c.qkv_dim(), c.q_dim(), c.n_kv_heads, c.head_dim, c.rope_dim, d_positions,
                   freq, neox, c.rope_attn_factor);
        cuda::AppendKv(qkv.data(), act, c.qkv_dim(), c.q_dim(), rows, kv);
        // LazyLLM: this layer now holds its rows' keys; the others' depths say
        // which earlier tokens it lacks.
        for (size_t k = 0; k < plan.seqs.size(); ++k) {
            if (plan.seqs[k].lazy == nullptr) continue;
            for (int32_t i = 0; i < seq_rows[k].count; ++i) {
                plan.seqs[k].lazy->Computed(row_slot[seq_rows[k].begin + i], l);
            }
        }
        if (m.depth_len > 0) {
            PP_RETURN_IF_ERROR(UploadDepths(plan, m));
            singles.key_depth = depth.as<int16_t>();
            singles.depth_begin = part(CudaStepMeta::kDepthBegin);
            singles.layer = l;
        }
        // The cascade's prefix part first: the per-row kernel merges it in.
        if ((cascade_here &&
             !cuda::CascadePrefix(qkv.data(), act, shape,
                                  reinterpret_cast<const cuda::QueryTile*>(part(CudaStepMeta::kGroupTiles)),
                                  m.n_group_tiles, part(CudaStepMeta::kMembers), d_tables, kv, partial_o.as<float>(),
                                  partial_lse.as<float>())) ||
            !cuda::PagedAttention(qkv.data(), att.data(), act, shape, singles, kv) ||
            !cuda::TiledAttention(qkv.data(), att.data(), act, shape,
                                  reinterpret_cast<const cuda::QueryTile*>(part(CudaStepMeta::kTiles)), m.n_tiles,
                                  d_tables, kv)) {
            return absl::UnimplementedError(absl::StrCat("head_dim ", c.head_dim,
                                                         " is above what the CUDA attention kernels handle (",
                                                         cuda::kTiledMaxHeadDim, ")"));
        }
        const bool prune = PrunesAfter(plan, seq_rows, l);
        if (prune) PP_RETURN_IF_ERROR(ScoreLastQueries(plan, m, l));
        // x += attn Wo^T, then x += ffn: straight, or through xb (AddBranch).
        PP_RETURN_IF_ERROR(blas->Linear(att.data(), lw.wo.data(), branch_apart ? xb.data() : x.data(), t, d, c.q_dim(),
                                        !branch_apart, act));
        if (branch_apart) AddBranch(lw.attn_post_norm, t);
        cuda::RmsNorm(x.data(), lw.ffn_norm.as<float>(), xb.data(), t, d, c.norm_eps, act);
        PP_RETURN_IF_ERROR(blas->Linear(xb.data(), lw.w_gate_up.data(), gu.data(), t, 2 * h, d, false, act));
        if (c.ffn_act == FfnActivation::kGeluTanh) {
            cuda::GeGlu(gu.data(), hb.data(), t, h, act);
        } else {
            cuda::SwiGlu(gu.data(), hb.data(), t, h, act);
        }
        PP_RETURN_IF_ERROR(blas->Linear(hb.data(), lw.w_down.data(), branch_apart ? xb.data() : x.data(), t, d, h,
                                        !branch_apart, act));
        if (branch_apart) AddBranch(lw.ffn_post_norm, t);
        if (prune) {
            PP_RETURN_IF_ERROR(Prune(plan, l));
            t = static_cast<int64_t>(row_slot.size());
            m = PlanRows(plan, out);   // the rows moved, and with them the logits rows
            PP_RETURN_IF_ERROR(UploadMeta(m));
        }
    }
    const int64_t n_logits = static_cast<int64_t>(m.count(CudaStepMeta::kLogitRows));
    out->rows = static_cast<int32_t>(n_logits);
    if (n_logits > 0) PP_RETURN_IF_ERROR(Logits(m, n_logits));
    PP_RETURN_IF_ERROR(cuda::Synchronize("forward step"));
    if (n_logits > 0) {
        out->logits.EnsureSize(static_cast<size_t>(n_logits) * c.vocab_size);
        PP_RETURN_IF_ERROR(logits.CopyToHost(out->logits.data(), n_logits * c.vocab_size * sizeof(float)));
    }
    for (const SeqStep& s : plan.seqs) s.kv->set_num_tokens(s.kv->num_tokens() + s.n_tokens);
    return absl::OkStatus();
}

CudaForwardPass::CudaForwardPass(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaForwardPass::~CudaForwardPass() = default;

absl::StatusOr<std::unique_ptr<CudaForwardPass>> CudaForwardPass::Create(const Model& model, KvBlockPool& pool) {
    if (cuda::DeviceCount() == 0) return absl::UnavailableError("no usable CUDA device (no GPU or no driver)");
    if (pool.on_host()) {
        return absl::InvalidArgumentError("the CUDA forward pass needs a KV pool in device memory (CudaKvStorage)");
    }
    auto impl = std::make_unique<Impl>(model, pool);
    PP_RETURN_IF_ERROR(impl->UploadWeights());
    return std::unique_ptr<CudaForwardPass>(new CudaForwardPass(std::move(impl)));
}

absl::Status CudaForwardPass::Run(const StepPlan& plan, StepOutput* out) { return impl_->Run(plan, out); }

const Model& CudaForwardPass::model() const { return impl_->model; }
KvBlockPool& CudaForwardPass::pool() { return impl_->pool; }

uint64_t CudaForwardPass::workspace_bytes() const {
    const Impl& i = *impl_;
    return i.x.bytes() + i.x_next.bytes() + i.xb.bytes() + i.qkv.bytes() + i.att.bytes() + i.gu.bytes() +
           i.hb.bytes() + i.logits.bytes() + i.meta.bytes() + i.partial_o.bytes() + i.partial_lse.bytes() +
           i.depth.bytes() + i.scores.bytes() + i.score_scratch.bytes() + i.gather_sources.bytes() +
           i.split_o.bytes() + i.split_lse.bytes();
}

void CudaForwardPass::set_cascade(bool on) { impl_->cascade = on; }
uint64_t CudaForwardPass::cascade_queries() const { return impl_->cascade_queries;
}

}  // namespace prepack
