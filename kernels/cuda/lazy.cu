#include "kernels/cuda/lazy.h"

#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/score_rule.cuh"

namespace prepack::cuda {
namespace {

constexpr int kThreads = 256;

// One block per job; per head and window row, three passes over the keys,
// each key owned by one thread throughout: score (into scratch), exponentiate
// against the row's max, add its share to the head's sum (acc); then the
// head's sum goes into the score (added, or its maximum). Scores are formed
// as attention forms them (scale, soft-cap), over each row's sliding window
// where the layer has one; keys outside it get nothing from that row.
__global__ void LastQueryScoresKernel(const void* q, bool act_bf16, int n_heads, int group, int head_dim,
                                      int64_t q_stride, ScoreRule rule, const ScoreJob* jobs, const int32_t* tables,
                                      const int16_t* key_depth, int32_t layer, const void* k, int block_size,
                                      int kv_dim, bool kv_bf16, float* scores, float* scratch, int64_t total) {
    __shared__ float red[32];
    const ScoreJob job = jobs[blockIdx.x];
    const int32_t* table = tables + job.table_begin;
    float* out = scores + job.out_begin;
    float* p = scratch + job.out_begin;
    float* acc = scratch + total + job.out_begin;
    auto held = [&](int32_t j) { return job.depth_begin < 0 || key_depth[job.depth_begin + j] >= layer; };
    for (int32_t j = threadIdx.x; j <= job.horizon; j += blockDim.x) out[j] = 0.0f;
    for (int head = 0; head < n_heads; ++head) {
        const int kv_head = head / group;
        for (int32_t j = threadIdx.x; j <= job.horizon; j += blockDim.x) acc[j] = 0.0f;
        for (int32_t r = 0; r < job.window; ++r) {
            const int32_t horizon = job.horizon - r;
            // Keys before the row's window are skipped, not re-assigned:
            // key j stays with thread j % blockDim (no barrier orders p and
            // acc between passes otherwise).
            const int32_t first = rule.FirstKey(horizon);
            auto sees = [&](int32_t j) { return j >= first && held(j); };
            const int64_t qoff = (job.row - r) * q_stride + static_cast<int64_t>(head) * head_dim;
            float max = -INFINITY;
            for (int32_t j = threadIdx.x; j <= horizon; j += blockDim.x) {
                if (!sees(j)) continue;
                const int64_t off =
                    (static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size) * kv_dim +
                    static_cast<int64_t>(kv_head) * head_dim;
                float dot = 0.0f;
                for (int d = 0; d < head_dim; ++d) dot += LoadAct(q, qoff + d, act_bf16) * LoadAct(k, off + d, kv_bf16);
                p[j] = rule.Capped(dot * rule.scale);
                max = fmaxf(max, p[j]);
            }
            max = BlockMax(max, red);   // finite: the row's own key is always held
            float sum = 0.0f;
            for (int32_t j = threadIdx.x; j <= horizon; j += blockDim.x) {
                if (!sees(j)) continue;
                p[j] = __expf(p[j] - max);
                sum += p[j];
            }
            sum = BlockSum(sum, red);
            const float w = 1.0f / (sum * static_cast<float>(n_heads) * static_cast<float>(job.window));
            for (int32_t j = threadIdx.x; j <= horizon; j += blockDim.x) {
                if (sees(j)) acc[j] += p[j] * w;
            }
        }
        for (int32_t j = threadIdx.x; j <= job.horizon; j += blockDim.x) {
            out[j] = job.head_max ? fmaxf(out[j], acc[j] * n_heads) : out[j] + acc[j];
        }
    }
}

// One block per row, 4-byte words (rows are whole f32 or bf16 vectors of an
// even width, or a byte loop otherwise).
__global__ void GatherRowsKernel(const void* const* sources, void* dst, int64_t row_bytes) {
    const int64_t r = blockIdx.x;
    const char* src = static_cast<const char*>(sources[r]);
    char* out = static_cast<char*>(dst) + r * row_bytes;
    if (row_bytes % 4 == 0) {
        for (int64_t i = threadIdx.x; i < row_bytes / 4; i += blockDim.x) {
            reinterpret_cast<uint32_t*>(out)[i] = reinterpret_cast<const uint32_t*>(src)[i];
        }
    } else {
        for (int64_t i = threadIdx.x; i < row_bytes; i += blockDim.x) out[i] = src[i];
    }
}

}  // namespace

void LastQueryScores(const void* q, cpu::DType act, const cpu::AttentionShape& shape, const ScoreJob* jobs,
                     int32_t n_jobs, const int32_t* tables, const int16_t* key_depth, int32_t layer,
                     const cpu::PagedKv& kv, float* scores, float* scratch, int64_t total) {
    if (n_jobs == 0) return;
    PP_LAUNCH(LastQueryScoresKernel, static_cast<unsigned>(n_jobs), kThreads, 0)(
        q, act == cpu::DType::kBf16, shape.n_heads, shape.n_heads / shape.n_kv_heads, shape.head_dim, shape.q_stride,
        ScoreRule::Of(shape), jobs, tables, key_depth, layer, kv.k, kv.block_size, kv.kv_dim,
        kv.dtype == cpu::DType::kBf16, scores, scratch, total);
}

void GatherRows(const void* const* sources, void* dst, int64_t rows, int64_t row_bytes) {
    if (rows > 0) PP_LAUNCH(GatherRowsKernel, static_cast<unsigned>(rows), kThreads, 0)(sources, dst, row_bytes);
}

}  // namespace prepack::cuda
