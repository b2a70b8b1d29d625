// Per level (kernel_table.h): activation rows quantized to int8 for the
// quantized linear kernels (quant_acts.h). Every level rounds alike, q =
// the nearest integer (ties to even) to the f32 product x * (1 / d), so a
// product does not depend on the level that quantized its activations.
// A prefill quantizes every activation of every linear layer: in scalar
// code that took a tenth of the int8 GEMM's time (quant_gemm.cpp).
#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/quant_acts.h"

#include "kernels/cpu/level_kernels.h"   // last: opens the per-level region

PREPACK_ISA_BEGIN

namespace {

// 1 / d, or 0 for an all-zero block (whose codes are then all 0).
inline float InverseScale(float d) { return d > 0 ? 1.0f / d : 0.0f; }

#if PREPACK_ISA_LEVEL >= 1

inline float MaxAbs(const float* x, int n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < n; j += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

// 32 values to 32 int8 codes in order (cvtps rounds to nearest even).
inline __m256i Codes32(const float* x, __m256 inv) {
    __m256i i[4];
    for (int v = 0; v < 4; ++v) i[v] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * v), inv));
    // The packs interleave 128-bit lanes; the permute puts the 4-byte groups back in order.
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Sums of each 4 codes (lanes 0-3: codes 0-15, lanes 4-7: codes 16-31).
inline __m256i QuadSums(__m256i q) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
}

void QuantizeBlock256(const float* x, ActBlock256* a) {
    a->d = MaxAbs(x, 256) / 127.0f;
    const __m256 inv = _mm256_set1_ps(InverseScale(a->d));
    __m256i quads[8];
    for (int j = 0; j < 8; ++j) {
        const __m256i q = Codes32(x + 32 * j, inv);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(a->q + 32 * j), q);
        quads[j] = QuadSums(q);
    }
    // Two rounds of hadd turn quads of vectors 4h..4h+3 into the sums of
    // 16-code groups [8h + 0, 2, 4, 6 | 8h + 1, 3, 5, 7].
    __m256i g[2];
    for (int h = 0; h < 2; ++h) {
        const __m256i* t = quads + 4 * h;
        g[h] = _mm256_hadd_epi32(_mm256_hadd_epi32(t[0], t[1]), _mm256_hadd_epi32(t[2], t[3]));
    }
    const __m256i p = _mm256_packs_epi32(g[0], g[1]);   // [0 2 4 6 8 10 12 14 | 1 3 5 7 9 11 13 15]
    const __m128i even = _mm256_castsi256_si128(p), odd = _mm256_extracti128_si256(p, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(a->bsums), _mm_unpacklo_epi16(even, odd));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(a->bsums + 8), _mm_unpackhi_epi16(even, odd));
}

void QuantizeBlock32(const float* x, float* d, int32_t* sum, int8_t* q) {
    *d = MaxAbs(x, 32) / 127.0f;
    const __m256i codes = Codes32(x, _mm256_set1_ps(InverseScale(*d)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), codes);
    __m256i s = QuadSums(codes);
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_unpackhi_epi64(h, h));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 1));
    *sum = _mm_cvtsi128_si32(h);
}

#else   // baseline: the same rounding in scalar code

float ScalarCodes(const float* x, int n, int8_t* q) {
    float amax = 0;
    for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float inv = InverseScale(d);
    for (int j = 0; j < n; ++j) q[j] = static_cast<int8_t>(std::nearbyint(x[j] * inv));
    return d;
}

void QuantizeBlock256(const float* x, ActBlock256* a) {
    a->d = ScalarCodes(x, 256, a->q);
    for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += a->q[16 * g + j];
        a->bsums[g] = static_cast<int16_t>(sum);
    }
}

void QuantizeBlock32(const float* x, float* d, int32_t* sum, int8_t* q) {
    *d = ScalarCodes(x, 32, q);
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += q[j];
    *sum = s;
}

#endif

}  // namespace

void QuantizeActRows(QuantType type, const float* x, int64_t m, int64_t k, uint8_t* out) {
    const int64_t row_bytes = ActRowBytes(type, k);
    for (int64_t i = 0; i < m; ++i) {
        const float* xi = x + i * k;
        uint8_t* row = out + i * row_bytes;
        if (UsesActBlock256(type)) {
            auto* blocks = reinterpret_cast<ActBlock256*>(row);
            for (int64_t b = 0; b < k / 256; ++b) QuantizeBlock256(xi + 256 * b, &blocks[b]);
        } else {
            auto* pairs = reinterpret_cast<ActPair32*>(row);
            const int64_t nb = k / 32;
            if (nb % 2 == 1) pairs[nb / 2] = ActPair32{};   // the unused half of the last pair
            for (int64_t b = 0; b < nb; ++b) {
                ActPair32& p = pairs[b / 2];
                QuantizeBlock32(xi + 32 * b, &p.d[b % 2], &p.sum[b % 2], p.q + 32 * (b % 2));
            }
        }
    }
}

PREPACK_ISA_END
