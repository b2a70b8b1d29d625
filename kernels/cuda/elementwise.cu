#include "kernels/cuda/elementwise.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.cuh"

namespace prepack::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void RmsNormKernel(const void* x_raw, const float* weight, void* out_raw, int64_t dim, float eps,
                              bool bf16) {
    const int64_t r = blockIdx.x;
    __shared__ float scratch[kThreads / 32];
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
        const float v = LoadAct(x_raw, r * dim + i, bf16);
        ss += v * v;
    }
    ss = BlockSum(ss, scratch);
    const float scale = rsqrtf(ss / static_cast<float>(dim) + eps);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
        const float v = LoadAct(x_raw, r * dim + i, bf16);
        StoreAct(out_raw, r * dim + i, weight[i] * (scale * v), bf16);
    }
}

__global__ void GatherKernel(const void* table, bool table_bf16, const int32_t* ids, void* out, int64_t dim,
                             bool bf16) {
    const int64_t r = blockIdx.x;
    const int64_t at = static_cast<int64_t>(ids[r]) * dim;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
        StoreAct(out, r * dim + i, LoadAct(table, at + i, table_bf16), bf16);
    }
}

// One block per row; thread i rotates pair i of every head (sincos once per pair and row).
__global__ void RopeKernel(void* x, bool bf16, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                           int rope_dim, const int32_t* positions, const float* inv_freq, bool neox,
                           float rotated_scale) {
    const int64_t r = blockIdx.x;
    const float pos = static_cast<float>(positions[r]);
    const int half = rope_dim / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float s, c;
        sincosf(pos * inv_freq[i], &s, &c);
        const int first = neox ? i : 2 * i, second = neox ? i + half : 2 * i + 1;
        for (int h = 0; h < n_heads; ++h) {
            const int64_t p = r * row_stride + col + static_cast<int64_t>(h) * head_dim;
            const float a = LoadAct(x, p + first, bf16), b = LoadAct(x, p + second, bf16);
            // Rounded once, after the scale: the CPU rotates and then scales in f32.
            StoreAct(x, p + first, (a * c - b * s) * rotated_scale, bf16);
            StoreAct(x, p + second, (a * s + b * c) * rotated_scale, bf16);
        }
    }
}

// One block per row, the heads one after another (each thread reads and
// writes the same elements, so in place is safe).
__global__ void RmsNormHeadsKernel(void* x, bool bf16, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                                   const float* weight, float eps) {
    const int64_t r = blockIdx.x;
    __shared__ float scratch[kThreads / 32];
    for (int h = 0; h < n_heads; ++h) {
        const int64_t base = r * row_stride + col + static_cast<int64_t>(h) * head_dim;
        float ss = 0.0f;
        for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
            const float v = LoadAct(x, base + i, bf16);
            ss += v * v;
        }
        ss = BlockSum(ss, scratch);
        const float scale = rsqrtf(ss / static_cast<float>(head_dim) + eps);
        for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
            StoreAct(x, base + i, weight[i] * (scale * LoadAct(x, base + i, bf16)), bf16);
        }
    }
}

__global__ void AddBiasKernel(void* x, bool bf16, const float* bias, int64_t dim) {
    const int64_t r = blockIdx.x;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
        StoreAct(x, r * dim + i, LoadAct(x, r * dim + i, bf16) + bias[i], bf16);
    }
}

__global__ void SwiGluKernel(const void* gu, void* out, int64_t hidden, bool bf16) {
    const int64_t r = blockIdx.x;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        const float g = LoadAct(gu, r * 2 * hidden + i, bf16);
        const float u = LoadAct(gu, r * 2 * hidden + hidden + i, bf16);
        // sigmoid from e^-|g| <= 1, as on the CPU: no exponential overflows.
        const float t = __expf(-fabsf(g));
        const float sigmoid = (g >= 0.0f ? 1.0f : t) / (1.0f + t);
        StoreAct(out, r * hidden + i, g * sigmoid * u, bf16);
    }
}

__global__ void GeGluKernel(const void* gu, void* out, int64_t hidden, bool bf16) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
    const int64_t r = blockIdx.x;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        const float g = LoadAct(gu, r * 2 * hidden + i, bf16);
        const float u = LoadAct(gu, r * 2 * hidden + hidden + i, bf16);
        // tanh saturates for large |g|: no overflow, as on the CPU.
        const float gelu = 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * g * (1.0f + kCubic * g * g)));
        StoreAct(out, r * hidden + i, gelu * u, bf16);
    }
}

// Flat arrays: a grid-stride loop over at most kFlatBlocks blocks.
constexpr int64_t kFlatBlocks = 1024;

unsigned FlatBlocks(int64_t n) {
    return static_cast<unsigned>(std::min<int64_t>(kFlatBlocks, (n + kThreads - 1) / kThreads));
}

__global__ void ScaleKernel(void* x, bool bf16, int64_t n, float s) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        StoreAct(x, i, LoadAct(x, i, bf16) * s, bf16);
    }
}

__global__ void SoftCapKernel(void* x, bool bf16, int64_t n, float cap) {
    const float inv = 1.0f / cap;   // as the CPU's SoftCap: x * (1/cap), not x / cap
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        StoreAct(x, i, cap * tanhf(LoadAct(x, i, bf16) * inv), bf16);
    }
}

__global__ void AddScaledKernel(void* x, const void* y, bool bf16, int64_t n, float s) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        StoreAct(x, i, LoadAct(x, i, bf16) + s * LoadAct(y, i, bf16), bf16);
    }
}

__global__ void ArgmaxKernel(const float* logits, int64_t vocab, int32_t* ids) {
    const int64_t r = blockIdx.x;
    __shared__ float best_v[kThreads];
    __shared__ int32_t best_i[kThreads];
    float v = -FLT_MAX;
    int32_t at = 0;
    bool any = false;
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
        const float x = logits[r * vocab + i];
        if (!any || x > v) {   // strictly greater: the first index wins within a thread
            v = x;
            at = static_cast<int32_t>(i);
            any = true;
        }
    }
    best_v[threadIdx.x] = any ? v : -FLT_MAX;
    best_i[threadIdx.x] = any ? at : INT32_MAX;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (static_cast<int>(threadIdx.x) < step) {
            const float ov = best_v[threadIdx.x + step];
            const int32_t oi = best_i[threadIdx.x + step];
            // Ties go to the lower index, as std::max_element on the CPU.
            if (ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x])) {
                best_v[threadIdx.x] = ov;
                best_i[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) ids[r] = best_i[0];
}

}  // namespace

void RmsNorm(const void* x, const float* weight, void* out, int64_t rows, int64_t dim, float eps, DType act) {
    if (rows > 0) PP_LAUNCH(RmsNormKernel, rows, kThreads, 0)(x, weight, out, dim, eps, act == DType::kBf16);
}

void Gather(const void* table, DType table_dtype, const int32_t* ids, void* out, int64_t rows, int64_t dim,
            DType act) {
    if (rows > 0) PP_LAUNCH(GatherKernel, rows, kThreads, 0)(table, table_dtype == DType::kBf16, ids, out, dim, act == DType::kBf16);
}

void Rope(void* x, DType act, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim, int rope_dim,
          const int32_t* positions, const float* inv_freq, bool neox, float rotated_scale) {
    if (rows > 0) {
        PP_LAUNCH(RopeKernel, rows, 64, 0)(x, act == DType::kBf16, row_stride, col, n_heads, head_dim, rope_dim, positions,
                                 inv_freq, neox, rotated_scale);
    }
}

void RmsNormHeads(void* x, DType act, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                  const float* weight, float eps) {
    if (rows > 0) {
        PP_LAUNCH(RmsNormHeadsKernel, rows, kThreads, 0)(x, act == DType::kBf16, row_stride, col, n_heads, head_dim,
                                                         weight, eps);
    }
}

void AddBias(void* x, DType act, const float* bias, int64_t rows, int64_t dim) {
    if (rows > 0) PP_LAUNCH(AddBiasKernel, rows, kThreads, 0)(x, act == DType::kBf16, bias, dim);
}

void SwiGlu(const void* gu, void* out, int64_t rows, int64_t hidden, DType act) {
    if (rows > 0) PP_LAUNCH(SwiGluKernel, rows, kThreads, 0)(gu, out, hidden, act == DType::kBf16);
}

void GeGlu(const void* gu, void* out, int64_t rows, int64_t hidden, DType act) {
    if (rows > 0) PP_LAUNCH(GeGluKernel, rows, kThreads, 0)(gu, out, hidden, act == DType::kBf16);
}

void Scale(void* x, DType act, int64_t n, float s) {
    if (n > 0) PP_LAUNCH(ScaleKernel, FlatBlocks(n), kThreads, 0)(x, act == DType::kBf16, n, s);
}

void SoftCap(void* x, DType act, int64_t n, float cap) {
    if (n > 0) PP_LAUNCH(SoftCapKernel, FlatBlocks(n), kThreads, 0)(x, act == DType::kBf16, n, cap);
}

void AddScaled(void* x, const void* y, DType act, int64_t n, float s) {
    if (n > 0) PP_LAUNCH(AddScaledKernel, FlatBlocks(n), kThreads, 0)(x, y, act == DType::kBf16, n, s);
}

void ArgmaxRows(const float* logits, int64_t rows, int64_t vocab, int32_t* ids) {
    if (rows > 0) PP_LAUNCH(ArgmaxKernel, rows, kThreads, 0)(logits, vocab, ids);
}

}  // namespace prepack::cuda
