#include "kernels/cpu/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

namespace prepack::cpu {

namespace {

// Below this many rows a linear layer is memory-bound (decode): every weight
// is read once and used by few rows. oneDNN's sgemm packs the transposed
// weight matrix on each call there, which costs more than the product, so
// a direct kernel streams the weight rows instead.
constexpr int64_t kSmallM = 8;

// Four output features at a time share each load of an input row.
void SmallMLinear(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; j += 4) {
        const int64_t nj = std::min<int64_t>(4, n - j);
        const float* w0 = w + j * k;
        const float* w1 = nj > 1 ? w0 + k : w0;
        const float* w2 = nj > 2 ? w0 + 2 * k : w0;
        const float* w3 = nj > 3 ? w0 + 3 * k : w0;
        for (int64_t i = 0; i < m; ++i) {
            const float* xi = x + i * k;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
            for (int64_t t = 0; t < k; ++t) {
                s0 += w0[t] * xi[t];
                s1 += w1[t] * xi[t];
                s2 += w2[t] * xi[t];
                s3 += w3[t] * xi[t];
            }
            float* yi = y + i * n + j;
            const float s[4] = {s0, s1, s2, s3};
            for (int64_t u = 0; u < nj; ++u) yi[u] = accumulate ? yi[u] + s[u] : s[u];
        }
    }
}

}  // namespace

// dnnl_sgemm is row-major, uses oneDNN's JIT AVX-512 kernels and the shared
// OpenMP pool; on this class of CPU it matches the best BLAS at large sizes
// and is several times faster for the M=1 decode GEMV (docs/toolchain.md).
void Linear(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    if (m < kSmallM) {
        SmallMLinear(x, w, y, m, n, k, accumulate);
        return;
    }
    dnnl_sgemm('N', 'T', m, n, k, 1.0f, x, k, w, k, accumulate ? 1.0f : 0.0f, y, n);
}

void MatMul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

}  // namespace prepack::cpu
