// bfloat16 storage: the top 16 bits of an IEEE f32. Weights are rounded to
// it once at load (round to nearest even, NaN kept a NaN) and widened back
// to f32 exactly, by a shift, wherever they are used.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace prepack::cpu {

inline uint16_t F32ToBf16(float x) {
    const uint32_t u = std::bit_cast<uint32_t>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);   // quiet NaN
    const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float Bf16ToF32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// Whole rows (vectorised by the compiler: a shift per element).
void F32ToBf16Row(const float* src, uint16_t* dst, size_t n);
void Bf16ToF32Row(const uint16_t* src, float* dst, size_t n);

}  // namespace prepack::cpu
