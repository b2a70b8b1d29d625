#include "kernels/cuda/attention.h"

#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/score_rule.cuh"

namespace prepack::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxDimsPerThread = 4;   // head_dim <= 512

// Block (row, head): chunks of kThreads keys; thread t scores key c0 + t,
// then every thread updates the output dims it owns (d = t, t + kThreads,
// ...) with the chunk's weights, reading V rows coalesced. Under a sliding
// window the row's keys start at its window (chunks before it are never read).
__global__ void PagedAttentionKernel(const void* q, void* out, bool act_bf16, int group, int head_dim,
                                     int64_t q_stride, int64_t out_stride, ScoreRule rule, DeviceRows rows,
                                     const void* k, const void* v, int block_size, int kv_dim, bool kv_bf16) {
    PP_DYNAMIC_SHARED(float, shared);
    float* qs = shared;              // [head_dim], pre-scaled
    float* ps = shared + head_dim;   // [kThreads]: the chunk's weights
    __shared__ float red[32];
    const int64_t row = rows.row_ids != nullptr ? rows.row_ids[blockIdx.x] : blockIdx.x;
    const int head = blockIdx.y, kv_head = head / group;
    const int32_t horizon = rows.horizon[row];
    if (horizon < 0) {   // a padding row outside every span: defined zeros, as on the CPU
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            StoreAct(out, row * out_stride + static_cast<int64_t>(head) * head_dim + d, 0.0f, act_bf16);
        }
        return;
    }
    const int32_t prefix_end = rows.key_begin != nullptr ? rows.key_begin[row] : 0;   // > 0: a cascade member
    const int32_t first_key = max(prefix_end, rule.FirstKey(horizon));   // never both (PagedAttention checks)
    // This block's keys: all of the row's, or its split's range of them.
    const bool split = rows.n_splits > 1;
    const int32_t lo = split ? max(first_key, static_cast<int32_t>(blockIdx.z) * rows.split_keys) : first_key;
    const int32_t hi = split ? min(horizon, (static_cast<int32_t>(blockIdx.z) + 1) * rows.split_keys - 1) : horizon;
    const int32_t* table = rows.tables + rows.table_begin[row];
    const int32_t depth_at = rows.depth_begin != nullptr ? rows.depth_begin[row] : -1;
    auto held = [&](int32_t j) { return depth_at < 0 || rows.key_depth[depth_at + j] >= rows.layer; };
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        qs[d] = LoadAct(q, row * q_stride + static_cast<int64_t>(head) * head_dim + d, act_bf16) * rule.scale;
    }
    __syncthreads();
    auto key_offset = [&](int32_t j) {
        return (static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size) * kv_dim +
               static_cast<int64_t>(kv_head) * head_dim;
    };
    float m = -INFINITY, l = 0.0f;
    float acc[kMaxDimsPerThread] = {};
    for (int32_t c0 = lo; c0 <= hi; c0 += blockDim.x) {
        const int32_t j = c0 + threadIdx.x;
        float s = -INFINITY;
        if (j <= hi && held(j)) {
            const int64_t off = key_offset(j);
            s = 0.0f;
            for (int d = 0; d < head_dim; ++d) s += qs[d] * LoadAct(k, off + d, kv_bf16);
            s = rule.Capped(s);
        }
        // m_new is -inf only while every key so far is absent (LazyLLM);
        // the row's own key is always held, so it ends finite (a split
        // without a held key ends with l = 0 and is skipped by the merge).
        const float m_new = fmaxf(m, BlockMax(s, red));
        const float corr = m_new == -INFINITY ? 1.0f : __expf(m - m_new);   // 0 on the first chunk that counts
        const float p = s == -INFINITY ? 0.0f : __expf(s - m_new);
        ps[threadIdx.x] = p;
        l = l * corr + BlockSum(p, red);                  // its barriers also publish ps
        const int n = min(static_cast<int32_t>(blockDim.x), hi - c0 + 1);
        for (int i = 0; i < kMaxDimsPerThread; ++i) {
            const int d = threadIdx.x + i * blockDim.x;
            if (d >= head_dim) break;
            float a = acc[i] * corr;
            for (int jj = 0; jj < n; ++jj) a += ps[jj] * LoadAct(v, key_offset(c0 + jj) + d, kv_bf16);
            acc[i] = a;
        }
        m = m_new;
        __syncthreads();   // ps is rewritten by the next chunk
    }
    if (split) {   // a partial result for MergeSplitsKernel
        const int64_t at = (static_cast<int64_t>(blockIdx.x) * gridDim.y + head) * rows.n_splits + blockIdx.z;
        if (threadIdx.x == 0) rows.split_lse[at] = l > 0.0f ? m + logf(l) : -INFINITY;
        for (int i = 0; i < kMaxDimsPerThread; ++i) {
            const int d = threadIdx.x + i * blockDim.x;
            if (d >= head_dim) break;
            rows.split_o[at * head_dim + d] = l > 0.0f ? acc[i] / l : 0.0f;
        }
        return;
    }
    // A cascade member merges its suffix with the prefix's partial result:
    // weights e^lse of each part (log-sum-exp merge).
    float w_own = 1.0f, w_prefix = 0.0f;
    const int64_t at = row * static_cast<int64_t>(gridDim.y) + head;   // (row, head)
    if (prefix_end > 0) {
        const float lse_own = m + logf(l), lse_prefix = rows.partial_lse[at];
        const float top = fmaxf(lse_own, lse_prefix);
        w_own = __expf(lse_own - top);
        w_prefix = __expf(lse_prefix - top);
        const float sum = w_own + w_prefix;
        w_own /= sum;
        w_prefix /= sum;
    }
    for (int i = 0; i < kMaxDimsPerThread; ++i) {
        const int d = threadIdx.x + i * blockDim.x;
        if (d >= head_dim) break;
        float o = acc[i] / l * w_own;
        if (prefix_end > 0) o += w_prefix * rows.partial_o[at * head_dim + d];
        StoreAct(out, row * out_stride + static_cast<int64_t>(head) * head_dim + d, o, act_bf16);
    }
}

// Block (listed row, head): the log-sum-exp merge of the row's split
// partials and, for a cascade member, its prefix's partial.
__global__ void MergeSplitsKernel(void* out, bool act_bf16, int head_dim, int64_t out_stride, DeviceRows rows) {
    const int64_t row = rows.row_ids != nullptr ? rows.row_ids[blockIdx.x] : blockIdx.x;
    const int head = blockIdx.y;
    if (rows.horizon[row] < 0) return;   // zeros, written by the split kernel
    const int64_t first = (static_cast<int64_t>(blockIdx.x) * gridDim.y + head) * rows.n_splits;
    const bool prefix = rows.key_begin != nullptr && rows.key_begin[row] > 0;
    const int64_t at = row * static_cast<int64_t>(gridDim.y) + head;   // (row, head) of the cascade partial
    float top = prefix ? rows.partial_lse[at] : -INFINITY;
    for (int z = 0; z < rows.n_splits; ++z) top = fmaxf(top, rows.split_lse[first + z]);
    float total = 0.0f;
    for (int z = 0; z < rows.n_splits; ++z) total += __expf(rows.split_lse[first + z] - top);   // 0 for empty splits
    if (prefix) total += __expf(rows.partial_lse[at] - top);
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float o = 0.0f;
        for (int z = 0; z < rows.n_splits; ++z) {
            o += __expf(rows.split_lse[first + z] - top) * rows.split_o[(first + z) * head_dim + d];
        }
        if (prefix) o += __expf(rows.partial_lse[at] - top) * rows.partial_o[at * head_dim + d];
        StoreAct(out, row * out_stride + static_cast<int64_t>(head) * head_dim + d, o / total, act_bf16);
    }
}

// Flash-style attention for a tile of kQueryTileRows consecutive queries of
// one sequence x one head, 128 threads. Thread t owns query row r = t / 4
// and, of each key tile, keys c = t % 4 + 4j; of the output, dims
// d = t % 4 + 4i. The four threads of a row are adjacent lanes, so its
// softmax statistics are reduced with two shuffles. Keys arrive kKeyTile at
// a time through shared memory (K, then V in the same buffer); the loop ends
// at the tile's last visible key. Shared rows are padded by one float
// against bank conflicts. kPrefix: the tile's rows are cascade members
// (member_rows[tile.row + r]) that all see exactly the prefix's keys
// [0, tile.first_slot); their partial results go to partial_o/partial_lse.
// Under a sliding window (never with kPrefix) the loop starts at the first
// row's window and each row masks the keys before its own.
constexpr int kTiledThreads = 128;
constexpr int kKeyTile = 32;
constexpr int kLanesPerRow = kTiledThreads / kQueryTileRows;   // 4
constexpr int kKeysPerThread = kKeyTile / kLanesPerRow;       // 8
constexpr int kDimsPerThread = kTiledMaxHeadDim / kLanesPerRow;

template <bool kPrefix>
__global__ void TiledAttentionKernel(const void* q, void* out, bool act_bf16, int group, int head_dim,
                                     int64_t q_stride, int64_t out_stride, ScoreRule rule, const QueryTile* tiles,
                                     const int32_t* tables, const void* k, const void* v, int block_size,
                                     int kv_dim, bool kv_bf16, const int32_t* member_rows, float* partial_o,
                                     float* partial_lse) {
    PP_DYNAMIC_SHARED(float, smem);
    const int ld = head_dim + 1;
    float* qs = smem;                           // [kQueryTileRows][ld], pre-scaled
    float* kvs = qs + kQueryTileRows * ld;      // [kKeyTile][ld]: K, then V
    float* ps = kvs + kKeyTile * ld;            // [kQueryTileRows][kKeyTile + 1]
    const QueryTile tile = tiles[blockIdx.x];
    const int head = blockIdx.y, kv_head = head / group;
    const int t = threadIdx.x, r = t / kLanesPerRow, lane = t % kLanesPerRow;
    // Rows past the tile repeat its first row: finite, never stored.
    auto row_of = [&](int rr) -> int64_t {
        const int32_t at = tile.row + (rr < tile.n_rows ? rr : 0);
        return kPrefix ? member_rows[at] : at;
    };
    for (int i = t; i < kQueryTileRows * head_dim; i += kTiledThreads) {
        const int rr = i / head_dim, d = i % head_dim;
        const int64_t row = row_of(rr);
        qs[rr * ld + d] = LoadAct(q, row * q_stride + static_cast<int64_t>(head) * head_dim + d, act_bf16) * rule.scale;
    }
    // This thread's row's last key, and the tile's.
    const int32_t horizon = kPrefix ? tile.first_slot - 1 : tile.first_slot + (r < tile.n_rows ? r : 0);
    const int32_t last_key = kPrefix ? tile.first_slot - 1 : tile.first_slot + tile.n_rows - 1;
    // This row's first key, and the tile's (its first row's: windows ascend with the rows).
    const int32_t first_key = rule.FirstKey(horizon);
    const int32_t tile_first_key = rule.FirstKey(kPrefix ? tile.first_slot - 1 : tile.first_slot);
    const int32_t* table = tables + tile.table_begin;
    auto load_tile = [&](const void* src, int32_t k0) {
        for (int i = t; i < kKeyTile * head_dim; i += kTiledThreads) {
            const int c = i / head_dim, d = i % head_dim;
            const int32_t j = k0 + c;
            float x = 0.0f;
            if (j <= last_key) {
                const int64_t off = (static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size) * kv_dim +
                                    static_cast<int64_t>(kv_head) * head_dim + d;
                x = LoadAct(src, off, kv_bf16);
            }
            kvs[c * ld + d] = x;
        }
    };
    float m = -INFINITY, l = 0.0f;
    float acc[kDimsPerThread];
#pragma unroll
    for (int i = 0; i < kDimsPerThread; ++i) acc[i] = 0.0f;
    for (int32_t k0 = tile_first_key; k0 <= last_key; k0 += kKeyTile) {
        __syncthreads();   // the previous tile's V (and, first time, nothing) is consumed
        load_tile(k, k0);
        __syncthreads();
        float s[kKeysPerThread];
        float cmax = -INFINITY;
#pragma unroll
        for (int jj = 0; jj < kKeysPerThread; ++jj) {
            const int c = lane + kLanesPerRow * jj;
            float dot = 0.0f;
            for (int d = 0; d < head_dim; ++d) dot += qs[r * ld + d] * kvs[c * ld + d];
            s[jj] = k0 + c <= horizon && k0 + c >= first_key ? rule.Capped(dot) : -INFINITY;
            cmax = fmaxf(cmax, s[jj]);
        }
        cmax = fmaxf(cmax, __shfl_xor_sync(0xffffffffu, cmax, 1));
        cmax = fmaxf(cmax, __shfl_xor_sync(0xffffffffu, cmax, 2));
        // Once a tile holds a key the row sees, m is finite and a later tile
        // it cannot see adds nothing (p = 0, corr = 1). Before that (a row
        // whose window starts past this tile) m stays -inf and nothing counts.
        const float m_new = fmaxf(m, cmax);
        const float corr = m_new == -INFINITY ? 1.0f : __expf(m - m_new);
        float psum = 0.0f;
#pragma unroll
        for (int jj = 0; jj < kKeysPerThread; ++jj) {
            const float p = s[jj] == -INFINITY ? 0.0f : __expf(s[jj] - m_new);   // 0 for masked keys
            ps[r * (kKeyTile + 1) + lane + kLanesPerRow * jj] = p;
            psum += p;
        }
        psum += __shfl_xor_sync(0xffffffffu, psum, 1);
        psum += __shfl_xor_sync(0xffffffffu, psum, 2);
        l = l * corr + psum;
        m = m_new;
        __syncthreads();   // K is consumed; ps is written
        load_tile(v, k0);
        __syncthreads();
        const int n_keys = min(kKeyTile, last_key - k0 + 1);
        // Constant trip counts with a guard (not a break): acc stays in registers.
#pragma unroll
        for (int i = 0; i < kDimsPerThread; ++i) {
            const int d = lane + kLanesPerRow * i;
            if (d < head_dim) {
                float a = acc[i] * corr;
                for (int c = 0; c < n_keys; ++c) a += ps[r * (kKeyTile + 1) + c] * kvs[c * ld + d];
                acc[i] = a;
            }
        }
    }
    if (r >= tile.n_rows) return;
    const int64_t row = row_of(r);
    const int64_t at = row * static_cast<int64_t>(gridDim.y) + head;   // (row, head)
    if (kPrefix && lane == 0) partial_lse[at] = m + logf(l);
#pragma unroll
    for (int i = 0; i < kDimsPerThread; ++i) {
        const int d = lane + kLanesPerRow * i;
        if (d < head_dim) {
            if (kPrefix) {
                partial_o[at * head_dim + d] = acc[i] / l;
            } else {
                StoreAct(out, row * out_stride + static_cast<int64_t>(head) * head_dim + d, acc[i] / l, act_bf16);
            }
        }
    }
}

// One block per row: K then V, kv_dim elements each, coalesced.
__global__ void AppendKvKernel(const void* qkv, bool act_bf16, int64_t qkv_stride, int64_t k_col,
                               const int32_t* slots, const int32_t* table_begin, const int32_t* tables, void* k,
                               void* v, int block_size, int kv_dim, bool kv_bf16) {
    const int64_t row = blockIdx.x;
    const int32_t slot = slots[row];
    if (slot < 0) return;   // padding outside every span: no cache slot
    const int64_t dst =
        (static_cast<int64_t>(tables[table_begin[row] + slot / block_size]) * block_size + slot % block_size) * kv_dim;
    const int64_t src = row * qkv_stride + k_col;
    for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
        StoreAct(k, dst + i, LoadAct(qkv, src + i, act_bf16), kv_bf16);
        StoreAct(v, dst + i, LoadAct(qkv, src + kv_dim + i, act_bf16), kv_bf16);
    }
}

}  // namespace

void AppendKv(const void* qkv, cpu::DType act, int64_t qkv_stride, int64_t k_col, const DeviceRows& rows,
              const cpu::PagedKv& kv) {
    if (rows.rows == 0) return;
    // The cache's slabs are written here: the pointers in `kv` are const only for the readers.
    PP_LAUNCH(AppendKvKernel, static_cast<unsigned>(rows.rows), kThreads, 0)(
        qkv, act == cpu::DType::kBf16, qkv_stride, k_col, rows.horizon, rows.table_begin, rows.tables,
        const_cast<void*>(kv.k), const_cast<void*>(kv.v), kv.block_size, kv.kv_dim, kv.dtype == cpu::DType::kBf16);
}

bool PagedAttention(const void* q, void* out, cpu::DType act, const cpu::AttentionShape& shape, const DeviceRows& rows,
                    const cpu::PagedKv& kv) {
    if (shape.head_dim > kThreads * kMaxDimsPerThread || shape.n_kv_heads < 1 || shape.n_heads % shape.n_kv_heads != 0) {
        return false;
    }
    // A cascade prefix's partial saw every prefix key: under a window its members see only some.
    if (shape.window > 0 && rows.key_begin != nullptr) return false;
    if (rows.rows == 0) return true;
    const dim3 grid(static_cast<unsigned>(rows.rows), static_cast<unsigned>(shape.n_heads));
    const size_t shared = sizeof(float) * (shape.head_dim + kThreads);
    const dim3 split_grid(grid.x, grid.y, static_cast<unsigned>(rows.n_splits > 1 ? rows.n_splits : 1));
    PP_LAUNCH(PagedAttentionKernel, split_grid, kThreads, shared)(
        q, out, act == cpu::DType::kBf16, shape.n_heads / shape.n_kv_heads, shape.head_dim, shape.q_stride,
        shape.out_stride, ScoreRule::Of(shape), rows, kv.k, kv.v, kv.block_size, kv.kv_dim,
        kv.dtype == cpu::DType::kBf16);
    if (rows.n_splits > 1) {
        PP_LAUNCH(MergeSplitsKernel, grid, kThreads, 0)(out, act == cpu::DType::kBf16, shape.head_dim,
                                                      shape.out_stride, rows);
    }
    return true;
}

namespace {

template <bool kPrefix>
bool LaunchTiles(const void* q, void* out, cpu::DType act, const cpu::AttentionShape& shape, const QueryTile* tiles,
                 int32_t n_tiles, const int32_t* tables, const cpu::PagedKv& kv, const int32_t* member_rows,
                 float* partial_o, float* partial_lse) {
    if (shape.head_dim > kTiledMaxHeadDim || shape.n_kv_heads < 1 || shape.n_heads % shape.n_kv_heads != 0) {
        return false;
    }
    if (kPrefix && shape.window > 0) return false;   // members' windows differ: no shared tile of keys
    if (n_tiles == 0) return true;
    const size_t shared =
        sizeof(float) * ((kQueryTileRows + kKeyTile) * (shape.head_dim + 1) + kQueryTileRows * (kKeyTile + 1));
    if (shared > 48 * 1024) {   // above the default: head_dim > 176
        cudaFuncSetAttribute(TiledAttentionKernel<kPrefix>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared));
    }
    const dim3 grid(static_cast<unsigned>(n_tiles), static_cast<unsigned>(shape.n_heads));
    PP_LAUNCH(TiledAttentionKernel<kPrefix>, grid, kTiledThreads, shared)(
        q, out, act == cpu::DType::kBf16, shape.n_heads / shape.n_kv_heads, shape.head_dim, shape.q_stride,
        shape.out_stride, ScoreRule::Of(shape), tiles, tables, kv.k, kv.v, kv.block_size, kv.kv_dim,
        kv.dtype == cpu::DType::kBf16, member_rows, partial_o, partial_lse);
    return true;
}

}  // namespace

bool TiledAttention(const void* q, void* out, cpu::DType act, const cpu::AttentionShape& shape,
                    const QueryTile* tiles, int32_t n_tiles, const int32_t* tables, const cpu::PagedKv& kv) {
    return LaunchTiles<false>(q, out, act, shape, tiles, n_tiles, tables, kv, nullptr, nullptr, nullptr);
}

bool CascadePrefix(const void* q, cpu::DType act, const cpu::AttentionShape& shape, const QueryTile* tiles,
                   int32_t n_tiles, const int32_t* member_rows, const int32_t* tables, const cpu::PagedKv& kv,
                   float* partial_o, float* partial_lse) {
    return LaunchTiles<true>(q, nullptr, act, shape, tiles, n_tiles, tables, kv, member_rows, partial_o,
                             partial_lse);
}

}  // namespace prepack::cuda
