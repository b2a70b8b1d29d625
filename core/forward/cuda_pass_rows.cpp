// Each step's row metadata for the CUDA kernels, from the pass's current
// rows: which kernel attends for which rows (tiled runs of consecutive
// tokens, per-row decode and LazyLLM rows, cascade groups), where each row's
// K/V go, which rows give logits. Built on the host, uploaded in one copy.
#include <algorithm>

#include "core/forward/cpu_pass.h"
#include "core/forward/cuda_pass_impl.h"
#include "core/kv/kv_cache.h"

namespace prepack {
namespace {

// Split-K for the per-row kernel (flash-decoding): below this many blocks
// (rows x heads) a step leaves most of an H200's 132 SMs idle, so rows with
// at least kSplitMinKeys keys are cut into ranges of whole 128-key chunks.
constexpr int64_t kFillBlocks = 264;
constexpr int32_t kSplitMinKeys = 256;
constexpr int32_t kChunk = 128;   // the per-row kernel's keys per pass

}  // namespace

void CudaStepMeta::Append(Part p, const int32_t* v, size_t n) {
    at[p] = ints.size();
    ints.insert(ints.end(), v, v + n);
    at[p + 1] = ints.size();
}

CudaStepMeta CudaForwardPass::Impl::PlanRows(const StepPlan& plan, StepOutput* out) const {
    const int64_t t = static_cast<int64_t>(row_slot.size());
    std::vector<int32_t> table_begin(t, 0), key_begin(t, 0), depth_begin(t, -1), tables, logit_rows, singles,
        members;
    // Spans of two or more consecutive tokens go to the tiled kernel; single
    // rows (decode), LazyLLM rows and rows in no span (zeros) to the per-row one.
    std::vector<cuda::QueryTile> tiles, group_tiles;
    std::vector<uint8_t> tiled(t, 0);
    std::vector<cpu::AttentionSpan> spans;
    CudaStepMeta meta;
    meta.depth_offset.assign(plan.seqs.size(), -1);
    out->first_row.assign(plan.seqs.size(), -1);
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const SeqRows rows = seq_rows[k];
        const int32_t begin = static_cast<int32_t>(tables.size());
        tables.insert(tables.end(), s.kv->blocks().begin(), s.kv->blocks().end());
        std::fill(table_begin.begin() + rows.begin, table_begin.begin() + rows.begin + rows.count, begin);
        cpu::AttentionSpan span{rows.begin, rows.count, s.kv->num_tokens(), s.kv->blocks().data()};
        if (s.lazy != nullptr) {
            // Its keys' depths (to the last token of the step) travel per layer.
            meta.depth_offset[k] = static_cast<int32_t>(meta.depth_len);
            std::fill(depth_begin.begin() + rows.begin, depth_begin.begin() + rows.begin + rows.count,
                      static_cast<int32_t>(meta.depth_len));
            meta.depth_len += s.kv->num_tokens() + s.n_tokens;
            span.key_depth = s.lazy->depth();   // keeps it out of cascade groups
        } else if (rows.count >= 2) {
            for (int32_t i = 0; i < rows.count; i += cuda::kQueryTileRows) {
                tiles.push_back({static_cast<int32_t>(rows.begin) + i, std::min(cuda::kQueryTileRows, rows.count - i),
                                 row_slot[rows.begin + i], begin});
            }
            std::fill(tiled.begin() + rows.begin, tiled.begin() + rows.begin + rows.count, 1);
        }
        spans.push_back(span);
        if (s.logits == LogitsWanted::kNone) continue;
        out->first_row[k] = static_cast<int32_t>(logit_rows.size());
        // A span's real tokens are its first n_tokens rows (pads follow);
        // under LazyLLM its last token is its last row, never pruned.
        const int64_t end = rows.begin + (s.lazy ? rows.count : s.n_tokens);
        for (int64_t r = s.logits == LogitsWanted::kAll ? rows.begin : end - 1; r < end; ++r) {
            logit_rows.push_back(static_cast<int32_t>(r));
        }
    }
    int32_t max_keys = 0;
    for (int64_t r = 0; r < t; ++r) {
        if (tiled[r]) continue;
        singles.push_back(static_cast<int32_t>(r));
        max_keys = std::max(max_keys, row_slot[r] + 1);
    }
    const int64_t blocks = static_cast<int64_t>(singles.size()) * model.config().n_heads;
    if (blocks > 0 && blocks < kFillBlocks && max_keys >= kSplitMinKeys) {
        const int64_t want = std::min<int64_t>((kFillBlocks + blocks - 1) / blocks, (max_keys + kChunk - 1) / kChunk);
        meta.split_keys = static_cast<int32_t>((max_keys + want - 1) / want + kChunk - 1) / kChunk * kChunk;
        meta.n_splits = (max_keys + meta.split_keys - 1) / meta.split_keys;
    }
    // Decode rows sharing a prefix of blocks: cascade attention, the prefix
    // read once per group (CascadePrefix), each member's own keys after it.
    if (cascade) {
        for (const cpu::SharedPrefixGroup& g :
             cpu::FindSharedPrefixes(spans.data(), static_cast<int32_t>(spans.size()), pool.block_size(),
                                     kCascadeMinSharedTokens, 2)) {
            for (size_t i = 0; i < g.spans.size(); i += cuda::kQueryTileRows) {
                const int32_t n = static_cast<int32_t>(std::min<size_t>(cuda::kQueryTileRows, g.spans.size() - i));
                const int64_t first = spans[g.spans[i]].q_row;
                group_tiles.push_back({static_cast<int32_t>(members.size()), n, g.shared_len, table_begin[first]});
                for (int32_t j = 0; j < n; ++j) {
                    const int32_t row = static_cast<int32_t>(spans[g.spans[i + j]].q_row);
                    members.push_back(row);
                    key_begin[row] = g.shared_len;
                }
            }
        }
        meta.cascade_members = static_cast<int64_t>(members.size());
    }
    meta.Append(CudaStepMeta::kTokens, plan.tokens);   // the step's first rows (embedding)
    meta.Append(CudaStepMeta::kPositions, row_pos);
    meta.Append(CudaStepMeta::kSlots, row_slot);
    meta.Append(CudaStepMeta::kTableBegin, table_begin);
    meta.Append(CudaStepMeta::kKeyBegin, key_begin);
    meta.Append(CudaStepMeta::kDepthBegin, depth_begin);
    meta.Append(CudaStepMeta::kLogitRows, logit_rows);
    meta.Append(CudaStepMeta::kTables, tables);
    meta.Append(CudaStepMeta::kSingles, singles);
    meta.Append(CudaStepMeta::kTiles, tiles);
    meta.Append(CudaStepMeta::kMembers, members);
    meta.Append(CudaStepMeta::kGroupTiles, group_tiles);
    meta.n_tiles = static_cast<int32_t>(tiles.size());
    meta.n_group_tiles = static_cast<int32_t>(group_tiles.size());
    return meta;
}

absl::Status CudaForwardPass::Impl::UploadMeta(const CudaStepMeta& m) {
    const ModelConfig& c = model.config();
    const int64_t t = static_cast<int64_t>(row_slot.size()), d = c.dim, h = c.hidden_dim;
    const size_t a = ActBytes(act);
    // x itself is kept (pruning swaps a gathered copy in); the rest is scratch.
    PP_RETURN_IF_ERROR(ReserveDevice(xb, std::max<int64_t>(t * std::max<int64_t>(d, c.q_dim()), 1) * a));
    PP_RETURN_IF_ERROR(ReserveDevice(qkv, t * c.qkv_dim() * a));
    PP_RETURN_IF_ERROR(ReserveDevice(att, t * c.q_dim() * a));
    PP_RETURN_IF_ERROR(ReserveDevice(gu, t * 2 * h * a));
    PP_RETURN_IF_ERROR(ReserveDevice(hb, t * h * a));
    const int64_t n_logits = static_cast<int64_t>(m.count(CudaStepMeta::kLogitRows));
    PP_RETURN_IF_ERROR(ReserveDevice(logits, std::max<int64_t>(n_logits, 1) * c.vocab_size * sizeof(float)));
    if (m.cascade_members > 0) {
        PP_RETURN_IF_ERROR(ReserveDevice(partial_o, t * c.q_dim() * sizeof(float)));
        PP_RETURN_IF_ERROR(ReserveDevice(partial_lse, t * c.n_heads * sizeof(float)));
    }
    if (m.depth_len > 0) PP_RETURN_IF_ERROR(ReserveDevice(depth, m.depth_len * sizeof(int16_t)));
    if (m.n_splits > 1) {
        const int64_t parts = static_cast<int64_t>(m.count(CudaStepMeta::kSingles)) * c.n_heads * m.n_splits;
        PP_RETURN_IF_ERROR(ReserveDevice(split_o, parts * c.head_dim * sizeof(float)));
        PP_RETURN_IF_ERROR(ReserveDevice(split_lse, parts * sizeof(float)));
    }
    PP_RETURN_IF_ERROR(ReserveDevice(meta, m.ints.size() * sizeof(int32_t)));
    return meta.CopyFromHost(m.ints.data(), m.ints.size() * sizeof(int32_t));
}

}  // namespace prepack
