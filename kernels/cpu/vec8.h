// Eight-float vectors through the GCC/Clang vector extension: plain
// arithmetic that compiles to AVX2 FMAs at the avx2 and avx512 levels and to
// pairs of SSE instructions at the baseline. Arrays of these with fixed trip
// counts stay in registers, which nested loops over plain float arrays did
// not (GCC spilled them), so the register-blocked kernels are written with
// them. Per level (isa_region.h): a function taking or returning a 32-byte
// vector must be compiled for the level of its callers (Clang refuses a
// call across levels: the vector's calling convention differs).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cpu/isa_region.h"

PREPACK_ISA_BEGIN

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

// ExpNonPositive (simd.h) of 8 values at once: the same range reduction and
// polynomial, written so that it vectorises (the scalar function's floor,
// clamp and select left GCC's loops over it scalar: "control flow in loop").
// Below -87 the result is 0, as there; -inf (a masked key) gives 0.
inline Vec8 ExpNonPositive8(Vec8 x) {
    using I32x8 = int32_t __attribute__((vector_size(32)));
    const I32x8 underflow = x < Splat8(-87.0f);
    const Vec8 xc = underflow ? Splat8(-87.0f) : x;   // keeps k and the int conversion in range
    const Vec8 y = xc * 1.44269504f + 0.5f;
    const Vec8 t = __builtin_convertvector(__builtin_convertvector(y, I32x8), Vec8);   // y truncated
    const Vec8 k = t + __builtin_convertvector(t > y, Vec8);   // floor(y): one less where truncation rounded up
    const Vec8 r = (xc - k * 0.693145752f) - k * 1.42860677e-6f;
    const Vec8 p =
        1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    const I32x8 e = (__builtin_convertvector(k, I32x8) + 127) << 23;
    Vec8 scale;
    __builtin_memcpy(&scale, &e, sizeof(scale));
    return underflow ? Splat8(0.0f) : p * scale;
}

// tanh of 8 values: sign(x) (1 - e) / (1 + e) with e = exp(-2|x|) <= 1, so
// nothing overflows; absolute error ~1e-7 (relative, near 0, larger: tanh's
// users here, GELU and soft-caps, add or scale it back).
inline Vec8 Tanh8(Vec8 x) {
    const auto negative = x < Splat8(0.0f);
    const Vec8 a = negative ? -x : x;
    const Vec8 e = ExpNonPositive8(-2.0f * a);
    const Vec8 t = (1.0f - e) / (1.0f + e);
    return negative ? -t : t;
}

// x[i] = cap * tanh(x[i] / cap) over n values, eight at a time (Gemma 2's
// soft-caps: attention scores and final logits).
inline void SoftCapValues(float* x, int64_t n, float cap) {
    const float inv = 1.0f / cap;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) Store8(x + i, Tanh8(Load8(x + i) * inv) * cap);
    for (; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

inline float Sum8(Vec8 v) {
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

PREPACK_ISA_END
