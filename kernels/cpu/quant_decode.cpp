// Per level (kernel_table.h): quantized weight rows decoded to f32 for the
// many-row products (gemm.cpp's decoded panels). The same arithmetic as the
// reference decoding in quant_blocks.cpp, with loops laid out so that the
// compiler vectorises them at each level: every inner loop runs over
// consecutive weights with its scale and shifts fixed. A prompt decodes every
// weight once per prefill step, so at the baseline's scalar speed Q6_K's
// decoding took a third of a 512-token prefill.
#include <cstring>

#include "kernels/cpu/quant_blocks.h"

#include "kernels/cpu/level_kernels.h"   // last: opens the per-level region
#include "kernels/cpu/quant_level_helpers.h"

PREPACK_ISA_BEGIN

namespace {

void DecodeQ4_0(const uint8_t* b, float* y) {
    const float d = LoadHalf(b);
    for (int j = 0; j < 16; ++j) y[j] = d * static_cast<float>((b[2 + j] & 0x0F) - 8);
    for (int j = 0; j < 16; ++j) y[16 + j] = d * static_cast<float>((b[2 + j] >> 4) - 8);
}

// Q4_1, Q5_0, Q5_1 (quant_blocks.h): the fifth bits spread to bytes first,
// so the value loops are straight lines over 16 weights.
template <bool kFiveBits, bool kMin>
void DecodeQ45_01(const uint8_t* b, float* y) {
    const float d = LoadHalf(b), m = kMin ? LoadHalf(b + 2) : 0.0f;
    const uint8_t* qs = b + LegacyQsAt(kFiveBits, kMin);
    uint8_t high[32] = {};
    if constexpr (kFiveBits) {
        uint32_t qh;
        std::memcpy(&qh, b + LegacyQhAt(kMin), 4);
        for (int j = 0; j < 32; ++j) high[j] = static_cast<uint8_t>(((qh >> j) & 1) << 4);
    }
    const auto value = [&](int q) { return kMin ? d * static_cast<float>(q) + m : d * static_cast<float>(q - 16); };
    for (int j = 0; j < 16; ++j) y[j] = value((qs[j] & 0x0F) | high[j]);
    for (int j = 0; j < 16; ++j) y[16 + j] = value((qs[j] >> 4) | high[16 + j]);
}

void DecodeQ8_0(const uint8_t* b, float* y) {
    const float d = LoadHalf(b);
    const int8_t* q = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(q[j]);
}

template <bool kFiveBits>
void DecodeQ45_K(const uint8_t* b, float* y) {
    const float d = LoadHalf(b), dmin = LoadHalf(b + 2);
    uint8_t sc[8], mn[8];
    KQuantScalesMins(b + 4, sc, mn);
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + (kFiveBits ? 48 : 16);
    for (int s = 0; s < 8; ++s) {
        const float scale = d * sc[s], min = dmin * mn[s];
        const uint8_t* q = qs + 32 * (s / 2);
        const int shift = 4 * (s % 2);
        float* out = y + 32 * s;
        for (int l = 0; l < 32; ++l) {
            int v = (q[l] >> shift) & 0x0F;
            if (kFiveBits) v |= ((qh[l] >> s) & 1) << 4;
            out[l] = scale * static_cast<float>(v) - min;
        }
    }
}

void DecodeQ6_K(const uint8_t* b, float* y) {
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = LoadHalf(b + 208);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = b + 64 * half;
        const uint8_t* qh = b + 128 + 32 * half;
        for (int t = 0; t < 4; ++t) {
            const uint8_t* low = ql + 32 * (t & 1);
            const int shift = t < 2 ? 0 : 4;
            for (int g = 0; g < 2; ++g) {
                const float scale = d * sc[8 * half + 2 * t + g];
                float* out = y + 128 * half + 32 * t + 16 * g;
                for (int l = 16 * g; l < 16 * g + 16; ++l) {
                    const int q = ((low[l] >> shift) & 0x0F) | (((qh[l] >> (2 * t)) & 3) << 4);
                    out[l - 16 * g] = scale * static_cast<float>(q - 32);
                }
            }
        }
    }
}

}  // namespace

void DecodeQuantRow(QuantType type, const uint8_t* src, float* dst, int64_t n) {
    const int64_t elems = QuantBlockElems(type), bytes = QuantBlockBytes(type);
    for (int64_t b = 0; b < n / elems; ++b, src += bytes, dst += elems) {
        switch (type) {
            case QuantType::kQ4_0: DecodeQ4_0(src, dst); break;
            case QuantType::kQ4_1: DecodeQ45_01<false, true>(src, dst); break;
            case QuantType::kQ5_0: DecodeQ45_01<true, false>(src, dst); break;
            case QuantType::kQ5_1: DecodeQ45_01<true, true>(src, dst); break;
            case QuantType::kQ8_0: DecodeQ8_0(src, dst); break;
            case QuantType::kQ4_K: DecodeQ45_K<false>(src, dst); break;
            case QuantType::kQ5_K: DecodeQ45_K<true>(src, dst); break;
            case QuantType::kQ6_K: DecodeQ6_K(src, dst); break;
        }
    }
}

PREPACK_ISA_END
