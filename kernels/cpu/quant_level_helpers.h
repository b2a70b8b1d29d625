// Small inline helpers of the per-level quantized kernels (quant_linear.cpp,
// quant_gemm.cpp, quant_decode.cpp), compiled for the level of the source
// that includes them. Include after level_kernels.h: this header opens its
// own per-level region (isa_region.h), so _cvtsh_ss below is F16C code only
// at the levels that have F16C, never baseline code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/quant_blocks.h"

#include "kernels/cpu/isa_region.h"   // last: the region below

PREPACK_ISA_BEGIN

// The fp16 scale at p (blocks store them unaligned): through F16C from the
// AVX2 level up; HalfToFloat, an out-of-line call, at the baseline.
inline float LoadHalf(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof(h));
#if PREPACK_ISA_LEVEL >= 1
    return _cvtsh_ss(h);
#else
    return HalfToFloat(h);
#endif
}

#if PREPACK_ISA_LEVEL >= 1
inline __m256i Load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
#endif

PREPACK_ISA_END
