#include "kernels/cuda/attention.h"

#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/reduce.cuh"

namespace prepack::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxDimsPerThread = 4;   // head_dim <= 512

// Block (row, head): chunks of kThreads keys; thread t scores key c0 + t,
// then every thread updates the output dims it owns (d = t, t + kThreads,
// ...) with the chunk's weights, reading V rows coalesced.
__global__ void PagedAttentionKernel(const void* q, void* out, bool act_bf16, int group, int head_dim,
                                     int64_t q_stride, int64_t out_stride, const int32_t* horizons,
                                     const int32_t* table_begin, const int32_t* tables, const void* k, const void* v,
                                     int block_size, int kv_dim, bool kv_bf16) {
    extern __shared__ float shared[];
    float* qs = shared;              // [head_dim], pre-scaled
    float* ps = shared + head_dim;   // [kThreads]: the chunk's weights
    __shared__ float red[32];
    const int64_t row = blockIdx.x;
    const int head = blockIdx.y, kv_head = head / group;
    const int32_t horizon = horizons[row];
    if (horizon < 0) {   // a padding row outside every span: defined zeros, as on the CPU
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            StoreAct(out, row * out_stride + static_cast<int64_t>(head) * head_dim + d, 0.0f, act_bf16);
        }
        return;
    }
    const float scale = rsqrtf(static_cast<float>(head_dim));
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        qs[d] = LoadAct(q, row * q_stride + static_cast<int64_t>(head) * head_dim + d, act_bf16) * scale;
    }
    __syncthreads();
    const int32_t* table = tables + table_begin[row];
    auto key_offset = [&](int32_t j) {
        return (static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size) * kv_dim +
               static_cast<int64_t>(kv_head) * head_dim;
    };
    float m = -INFINITY, l = 0.0f;
    float acc[kMaxDimsPerThread] = {};
    for (int32_t c0 = 0; c0 <= horizon; c0 += blockDim.x) {
        const int32_t j = c0 + threadIdx.x;
        float s = -INFINITY;
        if (j <= horizon) {
            const int64_t off = key_offset(j);
            s = 0.0f;
            for (int d = 0; d < head_dim; ++d) s += qs[d] * LoadAct(k, off + d, kv_bf16);
        }
        const float m_new = fmaxf(m, BlockMax(s, red));   // finite: key c0 is always seen
        const float corr = __expf(m - m_new);             // 0 on the first chunk (m = -inf)
        const float p = j <= horizon ? __expf(s - m_new) : 0.0f;
        ps[threadIdx.x] = p;
        l = l * corr + BlockSum(p, red);                  // its barriers also publish ps
        const int n = min(static_cast<int32_t>(blockDim.x), horizon - c0 + 1);
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
    for (int i = 0; i < kMaxDimsPerThread; ++i) {
        const int d = threadIdx.x + i * blockDim.x;
        if (d >= head_dim) break;
        StoreAct(out, row * out_stride + static_cast<int64_t>(head) * head_dim + d, acc[i] / l, act_bf16);
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
    AppendKvKernel<<<static_cast<unsigned>(rows.rows), kThreads>>>(
        qkv, act == cpu::DType::kBf16, qkv_stride, k_col, rows.horizon, rows.table_begin, rows.tables,
        const_cast<void*>(kv.k), const_cast<void*>(kv.v), kv.block_size, kv.kv_dim, kv.dtype == cpu::DType::kBf16);
}

bool PagedAttention(const void* q, void* out, cpu::DType act, const cpu::AttentionShape& shape, const DeviceRows& rows,
                    const cpu::PagedKv& kv) {
    if (shape.head_dim > kThreads * kMaxDimsPerThread || shape.n_kv_heads < 1 || shape.n_heads % shape.n_kv_heads != 0) {
        return false;
    }
    if (rows.rows == 0) return true;
    const dim3 grid(static_cast<unsigned>(rows.rows), static_cast<unsigned>(shape.n_heads));
    const size_t shared = sizeof(float) * (shape.head_dim + kThreads);
    PagedAttentionKernel<<<grid, kThreads, shared>>>(
        q, out, act == cpu::DType::kBf16, shape.n_heads / shape.n_kv_heads, shape.head_dim, shape.q_stride,
        shape.out_stride, rows.horizon, rows.table_begin, rows.tables, kv.k, kv.v, kv.block_size, kv.kv_dim,
        kv.dtype == cpu::DType::kBf16);
    return true;
}

}  // namespace prepack::cuda
