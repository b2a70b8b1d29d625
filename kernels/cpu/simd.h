// Eight-float vectors through the GCC/Clang vector extension: plain
// arithmetic that compiles to AVX2 FMAs with -march=native and to pairs of
// SSE instructions elsewhere. Arrays of these with fixed trip counts stay in
// registers, which nested loops over plain float arrays did not (GCC
// spilled them), so the register-blocked kernels are written with them.
#pragma once

#include <cstdint>

namespace prepack::cpu {

using Vec8 = float __attribute__((vector_size(32)));

inline Vec8 Load8(const float* p) {
    Vec8 v;
    __builtin_memcpy(&v, p, sizeof(v));
    return v;
}

inline void Store8(float* p, Vec8 v) { __builtin_memcpy(p, &v, sizeof(v)); }

inline Vec8 Splat8(float x) { return Vec8{} + x; }

// Eight bf16 values widened to f32 (exact: a zero-extend and a shift).
inline Vec8 LoadBf16x8(const uint16_t* p) {
    using U16x8 = uint16_t __attribute__((vector_size(16)));
    using U32x8 = uint32_t __attribute__((vector_size(32)));
    U16x8 h;
    __builtin_memcpy(&h, p, sizeof(h));
    const U32x8 w = __builtin_convertvector(h, U32x8) << 16;
    Vec8 v;
    __builtin_memcpy(&v, &w, sizeof(v));
    return v;
}

inline float Sum8(Vec8 v) {
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

}  // namespace prepack::cpu
