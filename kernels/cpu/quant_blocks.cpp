// Scalar decoding of the block formats (quant_blocks.h): written for clarity
// after ggml's reference dequantize_row_* functions; the fast paths are in
// quant_linear.cpp and are tested against these.
#include "kernels/cpu/quant_blocks.h"

#include <bit>
#include <cstring>

namespace prepack::cpu {
namespace {

uint16_t LoadU16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

void DequantizeQ4_0(const uint8_t* b, float* y) {
    const float d = HalfToFloat(LoadU16(b));
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
        y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
}

// Q4_1, Q5_0 and Q5_1: nibbles as Q4_0's (weight j low, j + 16 high), the
// fifth bit of weight j at bit j of the 32-bit qh; w = d * q + m, or Q5_0's
// d * (q - 16).
void DequantizeQ45_01(const uint8_t* b, float* y, bool five_bits, bool has_min) {
    const float d = HalfToFloat(LoadU16(b));
    const float m = has_min ? HalfToFloat(LoadU16(b + 2)) : 0.0f;
    uint32_t qh = 0;
    if (five_bits) std::memcpy(&qh, b + LegacyQhAt(has_min), 4);
    const uint8_t* qs = b + LegacyQsAt(five_bits, has_min);
    const auto value = [&](int q) { return has_min ? d * static_cast<float>(q) + m : d * static_cast<float>(q - 16); };
    for (int j = 0; j < 16; ++j) {
        y[j] = value((qs[j] & 0x0F) | (five_bits ? ((qh >> j) & 1) << 4 : 0));
        y[j + 16] = value((qs[j] >> 4) | (five_bits ? ((qh >> (j + 16)) & 1) << 4 : 0));
    }
}

void DequantizeQ8_0(const uint8_t* b, float* y) {
    const float d = HalfToFloat(LoadU16(b));
    const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(qs[j]);
}

// Q4_K and Q5_K: each 64 weights are two sub-blocks sharing 32 bytes of
// nibbles (low nibbles the first, high the second); Q5_K's fifth bit of
// weight l of pair p is bit 2p (first) or 2p+1 (second) of qh[l].
void DequantizeQ45_K(const uint8_t* b, float* y, bool five_bits) {
    const float d = HalfToFloat(LoadU16(b));
    const float dmin = HalfToFloat(LoadU16(b + 2));
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* qs = five_bits ? b + 48 : b + 16;
    for (int pair = 0; pair < 4; ++pair) {
        uint8_t sc0, m0, sc1, m1;
        KQuantScaleMin(scales, 2 * pair, &sc0, &m0);
        KQuantScaleMin(scales, 2 * pair + 1, &sc1, &m1);
        for (int l = 0; l < 32; ++l) {
            int lo = qs[32 * pair + l] & 0x0F, hi = qs[32 * pair + l] >> 4;
            if (five_bits) {
                lo += (qh[l] >> (2 * pair)) & 1 ? 16 : 0;
                hi += (qh[l] >> (2 * pair + 1)) & 1 ? 16 : 0;
            }
            y[64 * pair + l] = d * sc0 * static_cast<float>(lo) - dmin * m0;
            y[64 * pair + 32 + l] = d * sc1 * static_cast<float>(hi) - dmin * m1;
        }
    }
}

// Q6_K: each half of 128 weights takes 64 bytes of ql and 32 of qh; weight
// l + 32 t (t = 0..3) of the half has its low nibble in ql[l + 32 (t & 1)]
// (low nibble for t < 2, high for t >= 2) and its top two bits at bits 2t
// of qh[l]; scale index 8 half + l / 16 + 2 t.
void DequantizeQ6_K(const uint8_t* b, float* y) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = HalfToFloat(LoadU16(b + 208));
    for (int half = 0; half < 2; ++half) {
        for (int l = 0; l < 32; ++l) {
            for (int t = 0; t < 4; ++t) {
                const uint8_t low = ql[l + 32 * (t & 1)];
                const int nibble = t < 2 ? (low & 0x0F) : (low >> 4);
                const int q = (nibble | (((qh[l] >> (2 * t)) & 3) << 4)) - 32;
                y[l + 32 * t] = d * sc[l / 16 + 2 * t] * static_cast<float>(q);
            }
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

}  // namespace

std::optional<QuantType> QuantTypeOfGgml(uint32_t ggml_type) {
    switch (ggml_type) {
        case 2: return QuantType::kQ4_0;
        case 3: return QuantType::kQ4_1;
        case 6: return QuantType::kQ5_0;
        case 7: return QuantType::kQ5_1;
        case 8: return QuantType::kQ8_0;
        case 12: return QuantType::kQ4_K;
        case 13: return QuantType::kQ5_K;
        case 14: return QuantType::kQ6_K;
        default: return std::nullopt;
    }
}

const char* QuantTypeName(QuantType type) {
    switch (type) {
        case QuantType::kQ4_0: return "Q4_0";
        case QuantType::kQ4_1: return "Q4_1";
        case QuantType::kQ5_0: return "Q5_0";
        case QuantType::kQ5_1: return "Q5_1";
        case QuantType::kQ8_0: return "Q8_0";
        case QuantType::kQ4_K: return "Q4_K";
        case QuantType::kQ5_K: return "Q5_K";
        case QuantType::kQ6_K: return "Q6_K";
    }
    return "unknown";
}

int64_t QuantBlockElems(QuantType type) {
    switch (type) {
        case QuantType::kQ4_K:
        case QuantType::kQ5_K:
        case QuantType::kQ6_K: return 256;
        default: return 32;
    }
}

int64_t QuantBlockBytes(QuantType type) {
    switch (type) {
        case QuantType::kQ4_0: return 18;
        case QuantType::kQ4_1: return 20;
        case QuantType::kQ5_0: return 22;
        case QuantType::kQ5_1: return 24;
        case QuantType::kQ8_0: return 34;
        case QuantType::kQ4_K: return 144;
        case QuantType::kQ5_K: return 176;
        case QuantType::kQ6_K: return 210;
    }
    return 0;
}

void DequantizeQuantRow(QuantType type, const uint8_t* src, float* dst, int64_t n) {
    const int64_t elems = QuantBlockElems(type), bytes = QuantBlockBytes(type);
    for (int64_t b = 0; b < n / elems; ++b, src += bytes, dst += elems) {
        switch (type) {
            case QuantType::kQ4_0: DequantizeQ4_0(src, dst); break;
            case QuantType::kQ4_1: DequantizeQ45_01(src, dst, false, true); break;
            case QuantType::kQ5_0: DequantizeQ45_01(src, dst, true, false); break;
            case QuantType::kQ5_1: DequantizeQ45_01(src, dst, true, true); break;
            case QuantType::kQ8_0: DequantizeQ8_0(src, dst); break;
            case QuantType::kQ4_K: DequantizeQ45_K(src, dst, false); break;
            case QuantType::kQ5_K: DequantizeQ45_K(src, dst, true); break;
            case QuantType::kQ6_K: DequantizeQ6_K(src, dst); break;
        }
    }
}

// Subnormal halves are scaled up into the float range by hand; inf and NaN
// keep their payload.
float HalfToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1F;
    const uint32_t mant = h & 0x3FF;
    if (exp == 0) {
        const float magnitude = static_cast<float>(mant) * (1.0f / 16777216.0f);   // mant * 2^-24
        return sign ? -magnitude : magnitude;
    }
    const uint32_t bits = exp == 0x1F ? sign | 0x7F800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
    return std::bit_cast<float>(bits);
}

}  // namespace prepack::cpu
