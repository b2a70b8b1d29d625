// Per level (kernel_table.h): whole rows converted, vectorised by the
// compiler (a shift per element each way).
#include "kernels/cpu/bf16.h"

#include "kernels/cpu/level_kernels.h"   // last: opens the per-level region

PREPACK_ISA_BEGIN

void F32ToBf16Row(const float* src, uint16_t* dst, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; ++i) dst[i] = F32ToBf16(src[i]);
}

void Bf16ToF32Row(const uint16_t* src, float* dst, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(src[i]);
}

PREPACK_ISA_END
