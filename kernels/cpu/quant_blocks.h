// The quantized weight formats prepack keeps as they are in a GGUF file, and
// their scalar decoding: the reference every vectorised kernel is tested
// against. Layouts are ggml's (ggml-common.h), byte for byte, so a tensor is
// used where the file's mapping holds it, never copied.
//
//   Q4_0  32 weights in 18 bytes: fp16 d, 16 bytes of nibbles (byte j holds
//         weight j in its low nibble and weight j+16 in its high one);
//         w = d * (q - 8).
//   Q4_1  32 weights in 20 bytes: fp16 d, fp16 m, 16 bytes of nibbles as
//         Q4_0's; w = d * q + m.
//   Q5_0  32 weights in 22 bytes: fp16 d, 4 bytes qh (bit j of their
//         little-endian 32 bits is weight j's fifth bit), 16 bytes of
//         nibbles as Q4_0's; w = d * (q - 16).
//   Q5_1  32 weights in 24 bytes: fp16 d, fp16 m, qh and nibbles as Q5_0's;
//         w = d * q + m.
//   Q8_0  32 weights in 34 bytes: fp16 d, 32 int8; w = d * q.
//   Q4_K  256 weights in 144 bytes: fp16 d, fp16 dmin, 12 bytes of eight
//         6-bit (scale, min) pairs, 128 bytes of nibbles; sub-block s of 32
//         weights: w = d * scale_s * q - dmin * min_s.
//   Q5_K  256 in 176: as Q4_K plus 32 bytes holding each weight's fifth bit.
//   Q6_K  256 in 210: 128 bytes of low nibbles, 64 of high 2-bit pairs,
//         16 int8 scales (one per 16 weights), fp16 d; w = d * scale * (q - 32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace prepack::cpu {

// Numbered as ggml's type ids, so a GGUF tensor's type converts directly.
// Q5_0 and Q5_1 are in the list because llama.cpp's quantizer puts them
// into K-quant files: a K-quant needs rows of a multiple of 256 weights, and
// rows that are not (Qwen2.5-0.5B's 896, SmolLM2's 576 and 960) fall back to
// Q5_0 (for Q4_K), Q5_1 (for Q5_K) or Q8_0 (for Q6_K). Q4_1 is Q5_1 without
// the fifth bit, and Q4_1 files are still shared.
enum class QuantType : uint8_t {
    kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14
};

// Byte offsets within a Q4_1, Q5_0 or Q5_1 block (layouts above): qh follows
// d (and m); the 16 bytes of nibbles follow qh where there is one.
constexpr int LegacyQhAt(bool has_min) { return has_min ? 4 : 2; }
constexpr int LegacyQsAt(bool five_bits, bool has_min) { return LegacyQhAt(has_min) + (five_bits ? 4 : 0); }

// The QuantType of a ggml type id, or nothing when prepack has no kernels for it.
std::optional<QuantType> QuantTypeOfGgml(uint32_t ggml_type);
const char* QuantTypeName(QuantType type);

// Weights per block, and bytes per block.
int64_t QuantBlockElems(QuantType type);
int64_t QuantBlockBytes(QuantType type);
// Bytes of one row of `k` weights (k a multiple of the block size).
inline int64_t QuantRowBytes(QuantType type, int64_t k) { return k / QuantBlockElems(type) * QuantBlockBytes(type); }

// Decodes `n` weights (a whole number of blocks) starting at `src`.
void DequantizeQuantRow(QuantType type, const uint8_t* src, float* dst, int64_t n);

// IEEE half to float (exact), as the block scales are stored.
float HalfToFloat(uint16_t h);

// The 6-bit scale and min of sub-block `j` (0..7) of a Q4_K/Q5_K block's
// 12 packed bytes: sub-blocks 0-3 use the low 6 bits of bytes j and j+4;
// 4-7 take their low 4 bits from byte j+4's nibbles and their top 2 from
// the spare top bits of bytes j-4 and j.
inline void KQuantScaleMin(const uint8_t* scales, int j, uint8_t* scale, uint8_t* min) {
    if (j < 4) {
        *scale = scales[j] & 63;
        *min = scales[j + 4] & 63;
    } else {
        *scale = static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
        *min = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

// All eight scales and mins of a Q4_K/Q5_K block at once, the same packing
// read four bytes at a time (the per-sub-block function above costs a
// dozen scalar operations per value, a fifth of a one-row dot product).
inline void KQuantScalesMins(const uint8_t* scales, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t u[3];
    __builtin_memcpy(u, scales, 12);
    const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    const uint32_t s_lo = u[0] & low6, m_lo = u[1] & low6;
    const uint32_t s_hi = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);
    const uint32_t m_hi = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);
    __builtin_memcpy(sc, &s_lo, 4);
    __builtin_memcpy(sc + 4, &s_hi, 4);
    __builtin_memcpy(mn, &m_lo, 4);
    __builtin_memcpy(mn + 4, &m_hi, 4);
}

}  // namespace prepack::cpu
