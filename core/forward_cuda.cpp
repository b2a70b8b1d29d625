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
    // Cascade members' prefix-only attention (f32): o per head, log-sum-exp per head.
    cuda::DeviceBuffer partial_o, partial_lse;
    bool          cascade = true;
    uint64_t      cascade_queries = 0;

    Impl(const Model& m, KvBlockPool& p) : model(m), pool(p), act(m.weights().dtype) {}

    struct StepMeta;
    absl::Status UploadWeights();
    StepMeta PlanRows(const StepPlan& plan, StepOutput* out) const;
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

// A step's row metadata, laid out as the one int32 buffer uploaded per step
// holds it; `at` gives each part's offset.
struct CudaForwardPass::Impl::StepMeta {
    enum Part { kTokens, kPositions, kSlots, kTableBegin, kKeyBegin, kLogitRows, kTables, kSingles, kTiles,
                kMembers, kGroupTiles, kParts };
    std::vector<int32_t> ints;
    size_t at[kParts + 1] = {};
    int32_t n_tiles = 0, n_group_tiles = 0;
    int64_t cascade_members = 0;

    size_t count(Part p) const { return at[p + 1] - at[p]; }
    void Append(Part p, const int32_t* v, size_t n) {
        at[p] = ints.size();
        ints.insert(ints.end(), v, v + n);
        at[p + 1] = ints.size();
    }
    template <typename T>
    void Append(Part p, const std::vector<T>& v) {
        static_assert(sizeof(T) % sizeof(int32_t) == 0, "int32 records");
        Append(p, reinterpret_cast<const int32_t*>(v.data()), v.size() * sizeof(T) / sizeof(int32_t));
    }
};

CudaForwardPass::Impl::StepMeta CudaForwardPass::Impl::PlanRows(const StepPlan& plan, StepOutput* out) const {
    const int64_t t = static_cast<int64_t>(plan.tokens.size());
    // A row's slot is its token index in its sequence (where its K/V go, and
    // the last key it sees); -1 for rows in no span.
    std::vector<int32_t> slots(t, -1), table_begin(t, 0), key_begin(t, 0), tables, logit_rows, singles, members;
    // Spans of two or more rows go to the tiled kernel in tiles of
    // consecutive tokens; single rows (decode) and rows in no span (zeros)
    // to the per-row kernel.
    std::vector<cuda::QueryTile> tiles, group_tiles;
    std::vector<uint8_t> tiled(t, 0);
    std::vector<cpu::AttentionSpan> spans;
    out->first_row.assign(plan.seqs.size(), -1);
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const int32_t begin = static_cast<int32_t>(tables.size());
        tables.insert(tables.end(), s.kv->blocks().begin(), s.kv->blocks().end());
        const int32_t rows = s.n_tokens + s.n_pad;
        for (int32_t i = 0; i < rows; ++i) {
            slots[s.token_begin + i] = s.kv->num_tokens() + i;
            table_begin[s.token_begin + i] = begin;
        }
        spans.push_back({s.token_begin, rows, s.kv->num_tokens(), s.kv->blocks().data()});
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
        if (!tiled[r]) singles.push_back(static_cast<int32_t>(r));
    }
    // Decode rows sharing a prefix of blocks: cascade attention, the prefix
    // read once per group (CascadePrefix), each member's own keys after it.
    StepMeta meta;
    if (cascade) {
        for (const cpu::SharedPrefixGroup& g :
             cpu::FindSharedPrefixes(spans.data(), static_cast<int32_t>(spans.size()), pool.block_size(),
                                     kCascadeMinSharedTokens, 2)) {
            for (size_t i = 0; i < g.spans.size(); i += cuda::kQueryTileRows) {
                const int32_t n = static_cast<int32_t>(std::min<size_t>(cuda::kQueryTileRows, g.spans.size() - i));
                const int32_t first_row = static_cast<int32_t>(spans[g.spans[i]].q_row);
                group_tiles.push_back({static_cast<int32_t>(members.size()), n, g.shared_len, table_begin[first_row]});
                for (int32_t j = 0; j < n; ++j) {
                    const int32_t row = static_cast<int32_t>(spans[g.spans[i + j]].q_row);
                    members.push_back(row);
                    key_begin[row] = g.shared_len;
                }
            }
        }
        meta.cascade_members = static_cast<int64_t>(members.size());
    }
    meta.Append(StepMeta::kTokens, plan.tokens);
    meta.Append(StepMeta::kPositions, plan.positions);
    meta.Append(StepMeta::kSlots, slots);
    meta.Append(StepMeta::kTableBegin, table_begin);
    meta.Append(StepMeta::kKeyBegin, key_begin);
    meta.Append(StepMeta::kLogitRows, logit_rows);
    meta.Append(StepMeta::kTables, tables);
    meta.Append(StepMeta::kSingles, singles);
    meta.Append(StepMeta::kTiles, tiles);
    meta.Append(StepMeta::kMembers, members);
    meta.Append(StepMeta::kGroupTiles, group_tiles);
    meta.n_tiles = static_cast<int32_t>(tiles.size());
    meta.n_group_tiles = static_cast<int32_t>(group_tiles.size());
    return meta;
}

absl::Status CudaForwardPass::Impl::Run(const StepPlan& plan, StepOutput* out) {
    const ModelConfig& c = model.config();
    PP_RETURN_IF_ERROR(ValidateStepPlan(c, plan));
    for (const SeqStep& s : plan.seqs) {
        if (s.lazy != nullptr) return absl::UnimplementedError("LazyLLM pruning is not on the CUDA backend yet");
    }
    const int64_t t = static_cast<int64_t>(plan.tokens.size());
    const int64_t d = c.dim, h = c.hidden_dim;
    const StepMeta m = PlanRows(plan, out);
    const int64_t n_logits = static_cast<int64_t>(m.count(StepMeta::kLogitRows));
    cascade_queries += static_cast<uint64_t>(m.cascade_members);

    const size_t a = ElemBytes(act);
    PP_RETURN_IF_ERROR(Reserve(x, t * d * a));
    PP_RETURN_IF_ERROR(Reserve(xb, std::max<int64_t>(t * std::max<int64_t>(d, c.q_dim()), 1) * a));
    PP_RETURN_IF_ERROR(Reserve(qkv, t * c.qkv_dim() * a));
    PP_RETURN_IF_ERROR(Reserve(att, t * c.q_dim() * a));
    PP_RETURN_IF_ERROR(Reserve(gu, t * 2 * h * a));
    PP_RETURN_IF_ERROR(Reserve(hb, t * h * a));
    PP_RETURN_IF_ERROR(Reserve(logits, std::max<int64_t>(n_logits, 1) * c.vocab_size * sizeof(float)));
    if (m.cascade_members > 0) {
        PP_RETURN_IF_ERROR(Reserve(partial_o, t * c.q_dim() * sizeof(float)));
        PP_RETURN_IF_ERROR(Reserve(partial_lse, t * c.n_heads * sizeof(float)));
    }
    PP_RETURN_IF_ERROR(Reserve(meta, m.ints.size() * sizeof(int32_t)));
    PP_RETURN_IF_ERROR(meta.CopyFromHost(m.ints.data(), m.ints.size() * sizeof(int32_t)));
    const auto part = [&](StepMeta::Part p) { return meta.as<int32_t>() + m.at[p]; };
    const int32_t* d_positions = part(StepMeta::kPositions);
    const int32_t* d_tables = part(StepMeta::kTables);
    const auto* d_tiles = reinterpret_cast<const cuda::QueryTile*>(part(StepMeta::kTiles));
    const auto* d_group_tiles = reinterpret_cast<const cuda::QueryTile*>(part(StepMeta::kGroupTiles));
    const cuda::DeviceRows rows{t, part(StepMeta::kSlots), part(StepMeta::kTableBegin), d_tables};
    cuda::DeviceRows singles = rows;
    singles.rows = static_cast<int64_t>(m.count(StepMeta::kSingles));
    singles.row_ids = part(StepMeta::kSingles);
    if (m.cascade_members > 0) {
        singles.key_begin = part(StepMeta::kKeyBegin);
        singles.partial_o = partial_o.as<float>();
        singles.partial_lse = partial_lse.as<float>();
    }

    const ModelWeights& w = model.weights();
    cuda::Gather(token_embd.data(), w.token_embd.dtype(), part(StepMeta::kTokens), x.data(), t, d, act);
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
        // The cascade's prefix part first: the per-row kernel merges it in.
        if (!cuda::CascadePrefix(qkv.data(), act, shape, d_group_tiles, m.n_group_tiles, part(StepMeta::kMembers),
                                 d_tables, kv, partial_o.as<float>(), partial_lse.as<float>()) ||
            !cuda::PagedAttention(qkv.data(), att.data(), act, shape, singles, kv) ||
            !cuda::TiledAttention(qkv.data(), att.data(), act, shape, d_tiles, m.n_tiles, d_tables, kv)) {
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
        cuda::Gather(x.data(), act, part(StepMeta::kLogitRows), xb.data(), n_logits, d, act);
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
           i.logits.bytes() + i.meta.bytes() + i.partial_o.bytes() + i.partial_lse.bytes();
}

void CudaForwardPass::set_cascade(bool on) { impl_->cascade = on; }
uint64_t CudaForwardPass::cascade_queries() const { return impl_->cascade_queries;
}

}  // namespace prepack
