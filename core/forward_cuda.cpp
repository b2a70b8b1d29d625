#include "core/forward_cuda.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/forward.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"

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

size_t ElemBytes(DType t) { return t == DType::kBf16 ? 2 : 4; }

// A host matrix copied to the device as it is (f32 or bf16).
absl::StatusOr<cuda::DeviceBuffer> Upload(const cpu::Matrix& m, int64_t rows, int64_t cols) {
    const size_t bytes = static_cast<size_t>(rows) * cols * ElemBytes(m.dtype());
    PP_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::Allocate(bytes));
    const void* src = m.dtype() == DType::kBf16 ? static_cast<const void*>(m.bf16) : static_cast<const void*>(m.f32);
    PP_RETURN_IF_ERROR(b.CopyFromHost(src, bytes));
    return b;
}

absl::StatusOr<cuda::DeviceBuffer> UploadFloats(const float* v, int64_t n) {
    PP_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::Allocate(n * sizeof(float)));
    PP_RETURN_IF_ERROR(b.CopyFromHost(v, n * sizeof(float)));
    return b;
}

// Grows `b` to at least `bytes` (contents not kept): activations are sized
// by the largest step seen, then reused.
absl::Status Reserve(cuda::DeviceBuffer& b, size_t bytes) {
    const size_t had = b.bytes();
    if (had >= bytes) return absl::OkStatus();
    b = cuda::DeviceBuffer();   // free first: the old and new need not both fit
    PP_ASSIGN_OR_RETURN(b, cuda::DeviceBuffer::Allocate(std::max(bytes, had * 3 / 2)));
    return absl::OkStatus();
}

}  // namespace

struct CudaForwardPass::Impl {
    struct Layer {
        cuda::DeviceBuffer attn_norm, wqkv, wo, ffn_norm, w_gate_up, w_down;
    };

    const Model&  model;
    KvBlockPool&  pool;
    DType         act = DType::kF32;
    std::unique_ptr<cuda::Blas> blas;
    cuda::DeviceBuffer token_embd, output_norm, output, inv_freq;
    bool          tied = false;   // output is token_embd
    std::vector<Layer> layers;
    // Activations in `act`, logits in f32, and the step's row metadata (int32):
    // tokens, positions, slots, table starts, logit rows, block tables.
    cuda::DeviceBuffer x, xb, qkv, att, gu, hb, logits, meta;
    std::vector<int32_t> host_meta;

    Impl(const Model& m, KvBlockPool& p) : model(m), pool(p), act(m.weights().dtype) {}

    absl::Status UploadWeights();
    absl::Status Run(const StepPlan& plan, StepOutput* out);
};

absl::Status CudaForwardPass::Impl::UploadWeights() {
    const ModelConfig& c = model.config();
    const ModelWeights& w = model.weights();
    PP_ASSIGN_OR_RETURN(blas, cuda::Blas::Create());
    PP_ASSIGN_OR_RETURN(token_embd, Upload(w.token_embd, c.vocab_size, c.dim));
    tied = w.output.f32 == w.token_embd.f32 && w.output.bf16 == w.token_embd.bf16;
    if (!tied) {
        PP_ASSIGN_OR_RETURN(output, Upload(w.output, c.vocab_size, c.dim));
    }
    PP_ASSIGN_OR_RETURN(output_norm, UploadFloats(w.output_norm, c.dim));
    std::vector<float> freq;
    for (int i = 0; i < c.rope_dim / 2; ++i) {
        freq.push_back(1.0f / std::pow(c.rope_theta, static_cast<float>(2 * i) / c.rope_dim));
    }
    PP_ASSIGN_OR_RETURN(inv_freq, UploadFloats(freq.data(), static_cast<int64_t>(freq.size())));
    for (const LayerWeights& lw : w.layers) {
        Layer l;
        PP_ASSIGN_OR_RETURN(l.attn_norm, UploadFloats(lw.attn_norm, c.dim));
        PP_ASSIGN_OR_RETURN(l.wqkv, Upload(lw.wqkv, c.qkv_dim(), c.dim));
        PP_ASSIGN_OR_RETURN(l.wo, Upload(lw.wo, c.dim, c.q_dim()));
        PP_ASSIGN_OR_RETURN(l.ffn_norm, UploadFloats(lw.ffn_norm, c.dim));
        PP_ASSIGN_OR_RETURN(l.w_gate_up, Upload(lw.w_gate_up, 2 * int64_t{c.hidden_dim}, c.dim));
        PP_ASSIGN_OR_RETURN(l.w_down, Upload(lw.w_down, c.dim, c.hidden_dim));
        layers.push_back(std::move(l));
    }
    return cuda::Synchronize("uploading the weights");
}

absl::Status CudaForwardPass::Impl::Run(const StepPlan& plan, StepOutput* out) {
    const ModelConfig& c = model.config();
    PP_RETURN_IF_ERROR(ValidateStepPlan(c, plan));
    for (const SeqStep& s : plan.seqs) {
        if (s.lazy != nullptr) return absl::UnimplementedError("LazyLLM pruning is not on the CUDA backend yet");
    }
    const int64_t t = static_cast<int64_t>(plan.tokens.size());
    const int64_t d = c.dim, h = c.hidden_dim;

    // Row metadata, laid out as the device buffer holds it. A row's slot is
    // its token index in its sequence (where its K/V go, and the last key it
    // sees); -1 for rows in no span.
    std::vector<int32_t>& m = host_meta;
    m.assign(4 * t, 0);
    std::copy(plan.tokens.begin(), plan.tokens.end(), m.begin());
    std::copy(plan.positions.begin(), plan.positions.end(), m.begin() + t);
    int32_t* slots = m.data() + 2 * t;
    std::fill(slots, slots + t, -1);
    std::vector<int32_t> tables, logit_rows;
    // Spans of two or more rows go to the tiled kernel in tiles of
    // consecutive tokens; single rows (decode) and rows in no span (zeros)
    // to the per-row kernel.
    std::vector<cuda::QueryTile> tiles;
    std::vector<int32_t> single_rows;
    std::vector<uint8_t> tiled(t, 0);
    out->first_row.assign(plan.seqs.size(), -1);
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const int32_t begin = static_cast<int32_t>(tables.size());
        tables.insert(tables.end(), s.kv->blocks().begin(), s.kv->blocks().end());
        const int32_t rows = s.n_tokens + s.n_pad;
        for (int32_t i = 0; i < rows; ++i) {
            m[2 * t + s.token_begin + i] = s.kv->num_tokens() + i;
            m[3 * t + s.token_begin + i] = begin;
        }
        if (rows >= 2) {
            for (int32_t i = 0; i < rows; i += cuda::kQueryTileRows) {
                tiles.push_back({s.token_begin + i, std::min(cuda::kQueryTileRows, rows - i), s.kv->num_tokens() + i,
                                 begin});
            }
            std::fill(tiled.begin() + s.token_begin, tiled.begin() + s.token_begin + rows, 1);
        }
        if (s.logits == LogitsWanted::kNone) continue;
        out->first_row[k] = static_cast<int32_t>(logit_rows.size());
        const int32_t end = s.token_begin + s.n_tokens;   // pads follow the real tokens
        for (int32_t r = s.logits == LogitsWanted::kAll ? s.token_begin : end - 1; r < end; ++r) {
            logit_rows.push_back(r);
        }
    }
    for (int64_t r = 0; r < t; ++r) {
        if (!tiled[r]) single_rows.push_back(static_cast<int32_t>(r));
    }
    const int64_t n_logits = static_cast<int64_t>(logit_rows.size());
    m.insert(m.end(), logit_rows.begin(), logit_rows.end());
    m.insert(m.end(), tables.begin(), tables.end());
    m.insert(m.end(), single_rows.begin(), single_rows.end());
    const int32_t* tile_ints = reinterpret_cast<const int32_t*>(tiles.data());
    static_assert(sizeof(cuda::QueryTile) == 4 * sizeof(int32_t), "tiles travel as int32 quadruples");
    m.insert(m.end(), tile_ints, tile_ints + 4 * tiles.size());

    const size_t a = ElemBytes(act);
    PP_RETURN_IF_ERROR(Reserve(x, t * d * a));
    PP_RETURN_IF_ERROR(Reserve(xb, std::max<int64_t>(t * std::max<int64_t>(d, c.q_dim()), 1) * a));
    PP_RETURN_IF_ERROR(Reserve(qkv, t * c.qkv_dim() * a));
    PP_RETURN_IF_ERROR(Reserve(att, t * c.q_dim() * a));
    PP_RETURN_IF_ERROR(Reserve(gu, t * 2 * h * a));
    PP_RETURN_IF_ERROR(Reserve(hb, t * h * a));
    PP_RETURN_IF_ERROR(Reserve(logits, std::max<int64_t>(n_logits, 1) * c.vocab_size * sizeof(float)));
    PP_RETURN_IF_ERROR(Reserve(meta, m.size() * sizeof(int32_t)));
    PP_RETURN_IF_ERROR(meta.CopyFromHost(m.data(), m.size() * sizeof(int32_t)));
    const int32_t* dm = meta.as<int32_t>();
    const int32_t* d_tokens = dm;
    const int32_t* d_positions = dm + t;
    const int32_t* d_logit_rows = dm + 4 * t;
    const int32_t* d_tables = d_logit_rows + n_logits;
    const int32_t* d_single = d_tables + tables.size();
    const auto* d_tiles = reinterpret_cast<const cuda::QueryTile*>(d_single + single_rows.size());
    const cuda::DeviceRows rows{t, dm + 2 * t, dm + 3 * t, d_tables};
    const cuda::DeviceRows singles{static_cast<int64_t>(single_rows.size()), rows.horizon, rows.table_begin, d_tables,
                                   d_single};

    const ModelWeights& w = model.weights();
    cuda::Gather(token_embd.data(), w.token_embd.dtype(), d_tokens, x.data(), t, d, act);
    const cpu::AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim, c.qkv_dim(), c.q_dim()};
    for (int32_t l = 0; l < c.n_layers; ++l) {
        const Layer& lw = layers[l];
        const cpu::PagedKv kv = pool.Layer(l);
        cuda::RmsNorm(x.data(), lw.attn_norm.as<float>(), xb.data(), t, d, c.norm_eps, act);
        PP_RETURN_IF_ERROR(blas->Linear(xb.data(), lw.wqkv.data(), qkv.data(), t, c.qkv_dim(), d, false, act));
        cuda::Rope(qkv.data(), act, t, c.qkv_dim(), 0, c.n_heads, c.head_dim, c.rope_dim, d_positions,
                   inv_freq.as<float>());
        cuda::Rope(qkv.data(), act, t, c.qkv_dim(), c.q_dim(), c.n_kv_heads, c.head_dim, c.rope_dim, d_positions,
                   inv_freq.as<float>());
        cuda::AppendKv(qkv.data(), act, c.qkv_dim(), c.q_dim(), rows, kv);
        if (!cuda::PagedAttention(qkv.data(), att.data(), act, shape, singles, kv) ||
            !cuda::TiledAttention(qkv.data(), att.data(), act, shape, d_tiles, static_cast<int32_t>(tiles.size()),
                                  d_tables, kv)) {
            return absl::UnimplementedError(absl::StrCat("head_dim ", c.head_dim,
                                                         " is above what the CUDA attention kernels handle (",
                                                         cuda::kTiledMaxHeadDim, ")"));
        }
        PP_RETURN_IF_ERROR(blas->Linear(att.data(), lw.wo.data(), x.data(), t, d, c.q_dim(), true, act));
        cuda::RmsNorm(x.data(), lw.ffn_norm.as<float>(), xb.data(), t, d, c.norm_eps, act);
        PP_RETURN_IF_ERROR(blas->Linear(xb.data(), lw.w_gate_up.data(), gu.data(), t, 2 * h, d, false, act));
        cuda::SwiGlu(gu.data(), hb.data(), t, h, act);
        PP_RETURN_IF_ERROR(blas->Linear(hb.data(), lw.w_down.data(), x.data(), t, d, h, true, act));
    }
    out->rows = static_cast<int32_t>(n_logits);
    if (n_logits > 0) {
        // Only the rows that produce logits pass the final norm and the output matrix.
        cuda::Gather(x.data(), act, d_logit_rows, xb.data(), n_logits, d, act);
        cuda::RmsNorm(xb.data(), output_norm.as<float>(), xb.data(), n_logits, d, c.norm_eps, act);
        const void* wout = tied ? token_embd.data() : output.data();
        PP_RETURN_IF_ERROR(blas->Linear(xb.data(), wout, logits.data(), n_logits, c.vocab_size, d, false, act,
                                        DType::kF32));
    }
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
    return i.x.bytes() + i.xb.bytes() + i.qkv.bytes() + i.att.bytes() + i.gu.bytes() + i.hb.bytes() +
           i.logits.bytes() + i.meta.bytes();
}

}  // namespace prepack
