#include "kernels/cpu/gemm.h"

#include <oneapi/dnnl/dnnl.h>

namespace prepack::cpu {

// dnnl_sgemm is row-major, uses oneDNN's JIT AVX-512 kernels and the shared
// OpenMP pool; on this class of CPU it matches the best BLAS at large sizes
// and is several times faster for the M=1 decode GEMV (docs/toolchain.md).
void Linear(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    dnnl_sgemm('N', 'T', m, n, k, 1.0f, x, k, w, k, accumulate ? 1.0f : 0.0f, y, n);
}

void MatMul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

}  // namespace prepack::cpu
