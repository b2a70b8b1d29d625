// Eight-float vectors through the GCC/Clang vector extension: plain
// arithmetic that compiles to AVX2 FMAs with -march=native and to pairs of
// SSE instructions elsewhere. Arrays of these with fixed trip counts stay in
// registers, which nested loops over plain float arrays did not (GCC
// spilled them), so the register-blocked kernels are written with them.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
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

// K/V elements as f32 whatever the cache stores (f32, or bf16 as uint16_t),
// so one kernel template serves both.
inline Vec8  LoadAsF32x8(const float* p) { return Load8(p); }
inline Vec8  LoadAsF32x8(const uint16_t* bf16) { return LoadBf16x8(bf16); }
inline float AsF32(float x) { return x; }
inline float AsF32(uint16_t bf16) { return std::bit_cast<float>(static_cast<uint32_t>(bf16) << 16); }

inline float Sum8(Vec8 v) {
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

// exp(x) for x <= 0 (a softmax score minus its running max; SiLU's
// e^-|g|) in plain arithmetic the compiler vectorises inside `omp simd`
// loops: e^x = 2^k e^r with k = round(x log2 e) and r = x - k ln 2 taken in
// two parts (Cody-Waite, so r stays exact for large |x|), e^r by its degree-6
// Taylor polynomial on |r| <= ln2/2 (relative error below 3e-7). Underflow
// (x < -87, and -inf, a masked key) gives exactly 0.
inline float ExpNonPositive(float x) {
    const float k = std::floor(x * 1.44269504f + 0.5f);
    const float r = (x - k * 0.693145752f) - k * 1.42860677e-6f;   // ln 2 = 0.693145752 + 1.42860677e-6
    const float p =
        1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    const int32_t e = static_cast<int32_t>(std::max(k, -126.0f)) + 127;
    const float scale = std::bit_cast<float>(e << 23);
    return x < -87.0f ? 0.0f : p * scale;
}

}  // namespace prepack::cpu
