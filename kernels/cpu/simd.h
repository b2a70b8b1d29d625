// Scalar helpers of the kernels: exp of a non-positive argument, and a K/V
// element as f32 whatever the cache stores. Plain float code, so any level
// may call them (the eight-float vectors are in vec8.h, per level).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace prepack::cpu {

// K/V elements as f32 whatever the cache stores (f32, or bf16 as uint16_t),
// so one kernel template serves both.
inline float AsF32(float x) { return x; }
inline float AsF32(uint16_t bf16) { return std::bit_cast<float>(static_cast<uint32_t>(bf16) << 16); }

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
