// Per level (kernel_table.h): Y = X W^T for few rows of X (decode, batched
// decode) on quantized weights, as integer dot products of the weight blocks
// with the activations quantized to int8 (quant_acts.h). Memory-bound at one
// row: a Q4_K weight is 4.5 bits read once; with more rows the unpacked
// block is reused by up to kGroupRows activation rows from registers.
//
// At the AVX2 and AVX-512 levels the sums are vpmaddubsw (unsigned weight
// nibbles or magnitudes times signed activations, pairs summed to int16,
// never saturating for these ranges: 2 * 63 * 127 < 32767) and vpmaddwd
// (pairs to int32, by the sub-block scale where there is one); the baseline
// level runs the same arithmetic in scalar code. Offsets (Q4_0's -8, the
// K-quants' mins, Q6_K's -32) come from the activations' block sums rather
// than from the weights, once per block.
#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics fill upper halves from _mm512_undefined_*(),
// which -W(maybe-)uninitialized reports in every caller (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#endif

#include "kernels/cpu/cpu_level.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_acts.h"
#include "kernels/cpu/quant_blocks.h"

#include "kernels/cpu/level_kernels.h"   // last: opens the per-level region
#include "kernels/cpu/quant_level_helpers.h"

PREPACK_ISA_BEGIN

namespace {

#if PREPACK_ISA_LEVEL == 2
constexpr int kGroupRows = 8;   // 32 vector registers: 2 per row plus the unpacked block
#else
constexpr int kGroupRows = 4;
#endif

template <typename Act>
inline const Act* ActRow(const uint8_t* acts, int64_t act_row_bytes, int i) {
    return reinterpret_cast<const Act*>(acts + i * act_row_bytes);
}

#if PREPACK_ISA_LEVEL >= 1

inline float HSum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 32 unsigned bytes times 32 signed bytes, summed in pairs (int16) then in
// pairs again by `scale16` (int32 x 8).
inline __m256i MulAddBytes(__m256i u, __m256i s, __m256i scale16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16);
}

// A Q4_K/Q5_K block's eight 6-bit scales (bytes 0-7) and mins (bytes 8-15),
// unpacked in vector registers from the 12 bytes at `scales` (the packing of
// KQuantScalesMins, a 32-bit lane per four values), so the kernels need no
// scalar unpacking and no round trip through a stack array. (In cache it
// measured the same as the scalar unpacking at the AVX-512 level and a few
// percent faster at AVX2; it is not what held one-row decode back, the
// prefetching above is.)
inline __m128i KQuantScalesMins128(const uint8_t* scales) {
    // Lanes u0, u1, u2 of the 12 bytes (and 4 bytes of the block beyond them, unused).
    const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales));
    // scales 0-3: u0 & 63; scales 4-7: the low nibbles of u2, top bits from u0 >> 6;
    // mins 0-3: u1 & 63; mins 4-7: the high nibbles of u2, top bits from u1 >> 6.
    const __m128i low = _mm_srlv_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)), _mm_set_epi32(4, 0, 0, 0));
    const __m128i top = _mm_srli_epi32(_mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0)), 2);
    return _mm_or_si128(_mm_and_si128(low, _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f)),
                        _mm_and_si128(top, _mm_set_epi32(0x30303030, 0, 0x30303030, 0)));
}

// Q4_0: the 16 bytes of nibbles as 32 unsigned bytes in weight order.
inline __m256i Nibbles32(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m4 = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

template <int MB>
void DotsQ4_0(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += 18) {
        PrefetchAhead(w, 18);
        const float dw = LoadHalf(w);
        const __m256i q = Nibbles32(w + 2);
        for (int i = 0; i < MB; ++i) {
            const ActPair32* a = ActRow<ActPair32>(acts, act_row_bytes, i);
            // The 8 lanes sum to sum(q a); each less sum(a) gives sum((q - 8) a).
            const __m256i p =
                _mm256_sub_epi32(MulAddBytes(q, Load32(ActQ32(a, b)), ones), _mm256_set1_epi32(ActSum32(a, b)));
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(dw * ActD32(a, b)), _mm256_cvtepi32_ps(p), acc[i]);
        }
    }
    for (int i = 0; i < MB; ++i) out[i] = HSum(acc[i]);
}

template <int MB>
void DotsQ8_0(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += 34) {
        PrefetchAhead(w, 34);
        const float dw = LoadHalf(w);
        const __m256i q = Load32(w + 2);
        const __m256i magnitude = _mm256_sign_epi8(q, q);   // |q| as unsigned; the sign moves to a
        for (int i = 0; i < MB; ++i) {
            const ActPair32* a = ActRow<ActPair32>(acts, act_row_bytes, i);
            const __m256i p = MulAddBytes(magnitude, _mm256_sign_epi8(Load32(ActQ32(a, b)), q), ones);
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(dw * ActD32(a, b)), _mm256_cvtepi32_ps(p), acc[i]);
        }
    }
    for (int i = 0; i < MB; ++i) out[i] = HSum(acc[i]);
}

// Q5_0 and Q5_1: bit j of the 32 at qh as 16 in byte j (weight order, as
// Nibbles32's), else 0: byte j takes byte j / 8 of the bits, keeps bit j % 8.
inline __m256i FifthBits32(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    const __m256i byte_of = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i bit_of = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), byte_of);
    const __m256i spread = _mm256_and_si256(bytes, bit_of);
    return _mm256_and_si256(_mm256_cmpeq_epi8(spread, bit_of), _mm256_set1_epi8(16));
}

// Q4_1, Q5_0, Q5_1 (the K-quant files' fallbacks, quant_blocks.h): Q4_0's
// arithmetic with the fifth bit ORed in (q <= 31: a pair sums to at most
// 2 * 31 * 127, no saturation). Q5_0's "- 16" is 16 sum(a) taken from the
// 8 lanes; Q4_1's and Q5_1's "+ m" is m d_a sum(a), one scalar per block.
// Used at the AVX-512 level too: a two-blocks-per-instruction form measured
// Q5_0 10-14% faster at 16 rows, the same at one, and Q5_1 15-20% slower
// (measured 2026-12-05 on the AMX Xeon, 2 threads), so it was not kept.
template <int MB, bool kFiveBits, bool kMin>
void DotsQ45_01(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    constexpr int kQh = LegacyQhAt(kMin), kQs = LegacyQsAt(kFiveBits, kMin);
    constexpr int64_t kBytes = kQs + 16;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[MB];
    float offset[MB] = {};
    for (int i = 0; i < MB; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += kBytes) {
        PrefetchAhead(w, kBytes);
        const float dw = LoadHalf(w), m = kMin ? LoadHalf(w + 2) : 0.0f;
        __m256i q = Nibbles32(w + kQs);
        if constexpr (kFiveBits) q = _mm256_or_si256(q, FifthBits32(w + kQh));
        for (int i = 0; i < MB; ++i) {
            const ActPair32* a = ActRow<ActPair32>(acts, act_row_bytes, i);
            __m256i p = MulAddBytes(q, Load32(ActQ32(a, b)), ones);
            if constexpr (kMin) {
                offset[i] += m * ActD32(a, b) * static_cast<float>(ActSum32(a, b));
            } else {
                p = _mm256_sub_epi32(p, _mm256_set1_epi32(2 * ActSum32(a, b)));
            }
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(dw * ActD32(a, b)), _mm256_cvtepi32_ps(p), acc[i]);
        }
    }
    for (int i = 0; i < MB; ++i) out[i] = HSum(acc[i]) + offset[i];
}

// Byte j of both halves of `v` in every int16 lane (zero-extended): one
// byte shuffle, where a set1 from a scalar would leave the vector unit.
inline __m256i ScaleOf(__m256i v, int j) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<int16_t>(0x8000 | j)));
}

// Q4_K and Q5_K: the block's integer sum sum_s scale_s sum(q a) in int32
// lanes, the mins' sum_s min_s sum(a) from the block sums (as vectors too:
// a scalar epilogue per block and row took a third of batched decode).
// The block header is read inline here and in the 512-bit kernel: a shared
// reader returning it as a struct made one-row decode 35% slower (GCC kept
// the struct in memory).
template <int MB, bool kFiveBits>
void DotsQ45_K(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    constexpr int64_t kBytes = kFiveBits ? 176 : 144;
    const __m256i m4 = _mm256_set1_epi8(0x0F), bit = _mm256_set1_epi8(1);
    __m256 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += kBytes) {
        PrefetchAhead(w, kBytes);
        const float d = LoadHalf(w), dmin = LoadHalf(w + 2);
        const __m128i scales_mins = KQuantScalesMins128(w + 4);
        // Each min twice, as int16, against the 16 block sums of 16 activations.
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
        const __m256i scales_mins2 = _mm256_broadcastsi128_si256(scales_mins);
        const uint8_t* qs = w + (kFiveBits ? 48 : 16);
        __m256i high = kFiveBits ? Load32(w + 16) : _mm256_setzero_si256();
        __m256i isum[MB];
        for (int i = 0; i < MB; ++i) isum[i] = _mm256_setzero_si256();
        for (int pair = 0; pair < 4; ++pair) {
            const __m256i raw = Load32(qs + 32 * pair);
            __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            if constexpr (kFiveBits) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(high, bit), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 1), bit), 4));
                high = _mm256_srli_epi16(high, 2);
            }
            const __m256i s0 = ScaleOf(scales_mins2, 2 * pair), s1 = ScaleOf(scales_mins2, 2 * pair + 1);
            for (int i = 0; i < MB; ++i) {
                const int8_t* aq = ActRow<ActBlock256>(acts, act_row_bytes, i)[b].q + 64 * pair;
                isum[i] = _mm256_add_epi32(isum[i], _mm256_add_epi32(MulAddBytes(lo, Load32(aq), s0),
                                                                     MulAddBytes(hi, Load32(aq + 32), s1)));
            }
        }
        for (int i = 0; i < MB; ++i) {
            const ActBlock256& a = ActRow<ActBlock256>(acts, act_row_bytes, i)[b];
            const __m256i msum = _mm256_madd_epi16(Load32(a.bsums), mins16);
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), _mm256_cvtepi32_ps(isum[i]), acc[i]);
            acc[i] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * a.d), _mm256_cvtepi32_ps(msum), acc[i]);
        }
    }
    for (int i = 0; i < MB; ++i) out[i] = HSum(acc[i]);
}

template <int MB>
void DotsQ6_K(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    __m256 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += 210) {
        PrefetchAhead(w, 210);
        const int8_t* sc = reinterpret_cast<const int8_t*>(w + 192);
        const float d = LoadHalf(w + 208);
        // The 16 scales as int16 times 32: the "- 32" of every weight,
        // taken from the block sums of 16 activations.
        const __m256i scales32 =
            _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))), 5);
        __m256i isum[MB];
        for (int i = 0; i < MB; ++i) isum[i] = _mm256_setzero_si256();
        for (int half = 0; half < 2; ++half) {
            const __m256i ql0 = Load32(w + 64 * half), ql1 = Load32(w + 64 * half + 32);
            const __m256i qh = Load32(w + 128 + 32 * half);
            const auto top = [&](int shift) {
                return _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(shift)), m2), 4);
            };
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, m4), top(0)),
                _mm256_or_si256(_mm256_and_si256(ql1, m4), top(2)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), top(4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), top(6)),
            };
            for (int t = 0; t < 4; ++t) {
                // Weights 0-15 of the 32 take one scale, 16-31 the next.
                const int s = 8 * half + 2 * t;
                const __m256i scale = _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]));
                for (int i = 0; i < MB; ++i) {
                    const int8_t* aq = ActRow<ActBlock256>(acts, act_row_bytes, i)[b].q + 128 * half + 32 * t;
                    isum[i] = _mm256_add_epi32(isum[i], MulAddBytes(q[t], Load32(aq), scale));
                }
            }
        }
        for (int i = 0; i < MB; ++i) {
            const ActBlock256& a = ActRow<ActBlock256>(acts, act_row_bytes, i)[b];
            const __m256i offset = _mm256_madd_epi16(Load32(a.bsums), scales32);
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[i], offset)),
                                     acc[i]);
        }
    }
    for (int i = 0; i < MB; ++i) out[i] = HSum(acc[i]);
}

#if PREPACK_ISA_LEVEL == 2
// AVX-512 (BW): the K-quant kernels on 64 bytes at a time, two sub-blocks
// (Q4_K/Q5_K) or two 32-weight groups (Q6_K) per instruction, which halves
// the instructions per weight of the 256-bit ones: one-row decode is bound
// by them, not by memory, on a 2-core machine.

// Sixteen int16 lanes of `lo` then sixteen of `hi`. (Masked moves rather
// than 256-bit inserts and broadcasts, whose undefined upper halves GCC 12
// warns about.)
inline __m512i Pair16(int16_t lo, int16_t hi) {
    return _mm512_mask_mov_epi16(_mm512_set1_epi16(lo), 0xFFFF0000u, _mm512_set1_epi16(hi));
}

// 32 bytes in both halves, the lower half shifted right by `lo_shift` bits
// (per 16-bit lane) and the upper by `hi_shift`.
inline __m512i BothHalves(__m256i v, int lo_shift, int hi_shift) {
    const __m512i z = _mm512_zextsi256_si512(v);
    return _mm512_srlv_epi16(_mm512_shuffle_i64x2(z, z, 0x44), Pair16(static_cast<int16_t>(lo_shift),
                                                                     static_cast<int16_t>(hi_shift)));
}

template <int MB, bool kFiveBits>
void DotsQ45_K512(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    constexpr int64_t kBytes = kFiveBits ? 176 : 144;
    const __m512i m4 = _mm512_set1_epi8(0x0F), bit = _mm512_set1_epi8(1);
    // Lanes 0-15 of pair p's scale vector take scale 2p, lanes 16-31 scale 2p + 1.
    alignas(64) static const uint16_t kPairIndex[4][32] = {
        {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
        {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
        {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}};
    __m512 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += kBytes) {
        PrefetchAhead(w, kBytes);
        const float d = LoadHalf(w), dmin = LoadHalf(w + 2);
        const __m128i scales_mins = KQuantScalesMins128(w + 4);
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
        // The eight scales as int16 (lanes 0-7), spread per pair by one permute each.
        const __m512i scales16 = _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(scales_mins));
        const uint8_t* qs = w + (kFiveBits ? 48 : 16);
        const __m256i high = kFiveBits ? Load32(w + 16) : _mm256_setzero_si256();
        __m512i isum[MB];
        for (int i = 0; i < MB; ++i) isum[i] = _mm512_setzero_si512();
        for (int pair = 0; pair < 4; ++pair) {
            // Sub-block 2p in the low nibbles (lower half), 2p + 1 in the high.
            __m512i q = _mm512_and_si512(BothHalves(Load32(qs + 32 * pair), 0, 4), m4);
            if constexpr (kFiveBits) {
                q = _mm512_or_si512(q, _mm512_slli_epi16(_mm512_and_si512(BothHalves(high, 2 * pair, 2 * pair + 1), bit), 4));
            }
            const __m512i scale = _mm512_permutexvar_epi16(_mm512_load_si512(kPairIndex[pair]), scales16);
            for (int i = 0; i < MB; ++i) {
                const int8_t* aq = ActRow<ActBlock256>(acts, act_row_bytes, i)[b].q + 64 * pair;
                isum[i] = _mm512_add_epi32(isum[i], _mm512_madd_epi16(_mm512_maddubs_epi16(q, _mm512_loadu_si512(aq)), scale));
            }
        }
        for (int i = 0; i < MB; ++i) {
            const ActBlock256& a = ActRow<ActBlock256>(acts, act_row_bytes, i)[b];
            const __m256i msum = _mm256_madd_epi16(Load32(a.bsums), mins16);
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(d * a.d), _mm512_cvtepi32_ps(isum[i]), acc[i]);
            acc[i] = _mm512_fnmadd_ps(_mm512_set1_ps(dmin * a.d), _mm512_zextps256_ps512(_mm256_cvtepi32_ps(msum)), acc[i]);
        }
    }
    for (int i = 0; i < MB; ++i) out[i] = _mm512_reduce_add_ps(acc[i]);
}

// Q8_0: two blocks per instruction, each half with its own scale, against
// a pair of activation blocks (one load for their values, one for their
// scales). AVX-512 has no vpsignb: the activations take the weights' signs
// by a masked negation instead. The sums of four u8 x s8 products are
// vpmaddubsw + vpmaddwd, or one AVX-512 VNNI vpdpbusd (kVnni; only called
// where the CPU has it, PREPACK_VNNI below).
struct Q8_0Pair {
    __m512 dw;            // the two blocks' scales, 8 lanes each
    __m512i magnitude;    // |q|
    __mmask64 negative;   // q < 0
};

// Two blocks' fp16 scales (at `first` and `second`), 8 lanes each.
inline __m512 PairWeightScales(const uint8_t* first, const uint8_t* second) {
    return _mm512_mask_mov_ps(_mm512_set1_ps(LoadHalf(first)), 0xFF00, _mm512_set1_ps(LoadHalf(second)));
}

inline Q8_0Pair LoadQ8_0Pair(const uint8_t* w) {
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(Load32(w + 2)), Load32(w + 36), 1);
    return {PairWeightScales(w, w + 34), _mm512_abs_epi8(q), _mm512_movepi8_mask(q)};
}

// The activation pair's values with the weights' signs, and its two scales in 8 lanes each.
inline __m512i SignedPair(const ActPair32& a, __mmask64 negative) {
    const __m512i x = _mm512_loadu_si512(a.q);
    return _mm512_mask_sub_epi8(x, negative, _mm512_setzero_si512(), x);
}

// Two 32-bit values (an activation pair's scales or sums), 8 lanes each.
inline __m512i PairHalves(const void* two) {
    const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_epi32(halves, _mm512_castsi128_si512(_mm_loadl_epi64(static_cast<const __m128i*>(two))));
}

inline __m512 PairScales(const ActPair32& a) { return _mm512_castsi512_ps(PairHalves(a.d)); }

template <int MB>
void DotsQ8_0512(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    const __m512i ones = _mm512_set1_epi16(1);
    __m512 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 68) {
        PrefetchAhead(w, 68);
        const Q8_0Pair q = LoadQ8_0Pair(w);
        for (int i = 0; i < MB; ++i) {
            const ActPair32& a = ActRow<ActPair32>(acts, act_row_bytes, i)[b / 2];
            const __m512i p = _mm512_madd_epi16(_mm512_maddubs_epi16(q.magnitude, SignedPair(a, q.negative)), ones);
            acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(q.dw, PairScales(a)), _mm512_cvtepi32_ps(p), acc[i]);
        }
    }
    float tail[MB] = {};
    if (b < nb) DotsQ8_0<MB>(w, acts + b / 2 * static_cast<int64_t>(sizeof(ActPair32)), act_row_bytes, nb - b, tail);
    for (int i = 0; i < MB; ++i) out[i] = _mm512_reduce_add_ps(acc[i]) + tail[i];
}

// Q4_0: two blocks per instruction as for Q8_0 above. The 16 bytes of
// nibbles of each block give its weights 0-15 (low nibbles) and 16-31 (high);
// one 128-bit lane per half, put in the activation pair's order: block b's
// 32 weights, then block b + 1's. "- 8" comes from the blocks' activation sums.
struct Q4_0Pair {
    __m512  dw;   // the two blocks' scales, 8 lanes each
    __m512i q;    // the nibbles as unsigned bytes
};

inline Q4_0Pair LoadQ4_0Pair(const uint8_t* w) {
    const __m256i both = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 20)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 2)));
    // 128-bit lanes: b low, b + 1 low, b high, b + 1 high.
    const __m512i lanes = _mm512_and_si512(
        _mm512_inserti64x4(_mm512_castsi256_si512(both), _mm256_srli_epi16(both, 4), 1), _mm512_set1_epi8(0x0F));
    return {PairWeightScales(w, w + 18), _mm512_shuffle_i64x2(lanes, lanes, _MM_SHUFFLE(3, 1, 2, 0))};
}

// The pair's two activation sums, 8 lanes each.
inline __m512i PairSums(const ActPair32& a) { return PairHalves(a.sum); }

template <int MB>
void DotsQ4_0512(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    const __m512i ones = _mm512_set1_epi16(1);
    __m512 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 36) {
        PrefetchAhead(w, 36);
        const Q4_0Pair q = LoadQ4_0Pair(w);
        for (int i = 0; i < MB; ++i) {
            const ActPair32& a = ActRow<ActPair32>(acts, act_row_bytes, i)[b / 2];
            // Each block's 8 lanes sum to sum(q a); each less sum(a) gives sum((q - 8) a).
            const __m512i p =
                _mm512_sub_epi32(_mm512_madd_epi16(_mm512_maddubs_epi16(q.q, _mm512_loadu_si512(a.q)), ones), PairSums(a));
            acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(q.dw, PairScales(a)), _mm512_cvtepi32_ps(p), acc[i]);
        }
    }
    float tail[MB] = {};
    if (b < nb) DotsQ4_0<MB>(w, acts + b / 2 * static_cast<int64_t>(sizeof(ActPair32)), act_row_bytes, nb - b, tail);
    for (int i = 0; i < MB; ++i) out[i] = _mm512_reduce_add_ps(acc[i]) + tail[i];
}

#define PREPACK_VNNI __attribute__((target(PREPACK_ISA_TARGET ",avx512vnni")))

template <int MB>
PREPACK_VNNI void DotsQ8_0512Vnni(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb,
                                  float* out) {
    __m512 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 68) {
        PrefetchAhead(w, 68);
        const Q8_0Pair q = LoadQ8_0Pair(w);
        for (int i = 0; i < MB; ++i) {
            const ActPair32& a = ActRow<ActPair32>(acts, act_row_bytes, i)[b / 2];
            const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q.magnitude, SignedPair(a, q.negative));
            acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(q.dw, PairScales(a)), _mm512_cvtepi32_ps(p), acc[i]);
        }
    }
    float tail[MB] = {};
    if (b < nb) DotsQ8_0<MB>(w, acts + b / 2 * static_cast<int64_t>(sizeof(ActPair32)), act_row_bytes, nb - b, tail);
    for (int i = 0; i < MB; ++i) out[i] = _mm512_reduce_add_ps(acc[i]) + tail[i];
}

// Q4_0 as DotsQ4_0512, the four-product sums in one vpdpbusd (16 rows:
// about 10% faster). A copy rather than a shared template: GCC gives a
// lambda or template called from here no AVX-512 VNNI target, and the
// intrinsic then fails to inline.
template <int MB>
PREPACK_VNNI void DotsQ4_0512Vnni(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb,
                                  float* out) {
    __m512 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, w += 36) {
        PrefetchAhead(w, 36);
        const Q4_0Pair q = LoadQ4_0Pair(w);
        for (int i = 0; i < MB; ++i) {
            const ActPair32& a = ActRow<ActPair32>(acts, act_row_bytes, i)[b / 2];
            const __m512i p =
                _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q.q, _mm512_loadu_si512(a.q)), PairSums(a));
            acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(q.dw, PairScales(a)), _mm512_cvtepi32_ps(p), acc[i]);
        }
    }
    float tail[MB] = {};
    if (b < nb) DotsQ4_0<MB>(w, acts + b / 2 * static_cast<int64_t>(sizeof(ActPair32)), act_row_bytes, nb - b, tail);
    for (int i = 0; i < MB; ++i) out[i] = _mm512_reduce_add_ps(acc[i]) + tail[i];
}

// AVX-512 VNNI comes with the avx512-bf16 level (cpu_level.h), which shares
// this level's table.
inline bool UseVnni() { return ActiveCpuLevel() >= CpuLevel::kAvx512Bf16; }

template <int MB>
void DotsQ6_K512(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
    // Lane j of the 32 int16 scale lanes of group g (weights 64 g .. 64 g + 63
    // of a half) takes scale 4 g + j / 8 of the half's eight.
    alignas(64) static const uint16_t kScaleIndex[2][32] = {
        {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
        {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7}};
    const __m512i index0 = _mm512_load_si512(kScaleIndex[0]), index1 = _mm512_load_si512(kScaleIndex[1]);
    __m512 acc[MB];
    for (int i = 0; i < MB; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += 210) {
        PrefetchAhead(w, 210);
        const int8_t* sc = reinterpret_cast<const int8_t*>(w + 192);
        const float d = LoadHalf(w + 208);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
        const __m256i scales32 = _mm256_slli_epi16(sc16, 5);
        __m512i isum[MB];
        for (int i = 0; i < MB; ++i) isum[i] = _mm512_setzero_si512();
        for (int half = 0; half < 2; ++half) {
            const __m512i low = _mm512_loadu_si512(w + 64 * half);   // ql: weights l and l + 32 of each 64
            const __m256i qh = Load32(w + 128 + 32 * half);
            const __m512i q01 = _mm512_or_si512(_mm512_and_si512(low, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(BothHalves(qh, 0, 2), m2), 4));
            const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low, 4), m4),
                                                _mm512_slli_epi16(_mm512_and_si512(BothHalves(qh, 4, 6), m2), 4));
            // The half's eight scales, from lane 8 half of the 16.
            const __m512i half_scales = _mm512_zextsi256_si512(
                half == 0 ? sc16 : _mm256_permute2x128_si256(sc16, sc16, 0x11));
            const __m512i s01 = _mm512_permutexvar_epi16(index0, half_scales);
            const __m512i s23 = _mm512_permutexvar_epi16(index1, half_scales);
            for (int i = 0; i < MB; ++i) {
                const int8_t* aq = ActRow<ActBlock256>(acts, act_row_bytes, i)[b].q + 128 * half;
                isum[i] = _mm512_add_epi32(isum[i], _mm512_madd_epi16(_mm512_maddubs_epi16(q01, _mm512_loadu_si512(aq)), s01));
                isum[i] = _mm512_add_epi32(isum[i],
                                           _mm512_madd_epi16(_mm512_maddubs_epi16(q23, _mm512_loadu_si512(aq + 64)), s23));
            }
        }
        for (int i = 0; i < MB; ++i) {
            const ActBlock256& a = ActRow<ActBlock256>(acts, act_row_bytes, i)[b];
            const __m256i offset = _mm256_madd_epi16(Load32(a.bsums), scales32);
            const __m512 scale = _mm512_set1_ps(d * a.d);
            acc[i] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(isum[i]), acc[i]);
            acc[i] = _mm512_fnmadd_ps(scale, _mm512_zextps256_ps512(_mm256_cvtepi32_ps(offset)), acc[i]);
        }
    }
    for (int i = 0; i < MB; ++i) out[i] = _mm512_reduce_add_ps(acc[i]);
}
#endif

#else   // baseline: the same sums in scalar code

// out[i] = the sum over the row's blocks of block_dot(weight block, row i's
// activations, block index).
template <int MB, typename Act, typename BlockDot>
void ScalarDots(const uint8_t* w, int64_t block_bytes, const uint8_t* acts, int64_t act_row_bytes, int64_t nb,
                float* out, BlockDot block_dot) {
    for (int i = 0; i < MB; ++i) {
        const Act* a = ActRow<Act>(acts, act_row_bytes, i);
        float acc = 0;
        for (int64_t b = 0; b < nb; ++b) {
            if (i == 0) PrefetchAhead(w + block_bytes * b, block_bytes);
            acc += block_dot(w + block_bytes * b, a, b);
        }
        out[i] = acc;
    }
}

template <int MB>
void DotsQ4_0(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    ScalarDots<MB, ActPair32>(w, 18, acts, act_row_bytes, nb, out, [](const uint8_t* blk, const ActPair32* a, int64_t b) {
        const int8_t* aq = ActQ32(a, b);
        int32_t s = 0;
        for (int j = 0; j < 16; ++j) s += (blk[2 + j] & 0x0F) * aq[j] + (blk[2 + j] >> 4) * aq[j + 16];
        return LoadHalf(blk) * ActD32(a, b) * static_cast<float>(s - 8 * ActSum32(a, b));
    });
}

template <int MB>
void DotsQ8_0(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    ScalarDots<MB, ActPair32>(w, 34, acts, act_row_bytes, nb, out, [](const uint8_t* blk, const ActPair32* a, int64_t b) {
        const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
        const int8_t* aq = ActQ32(a, b);
        int32_t s = 0;
        for (int j = 0; j < 32; ++j) s += q[j] * aq[j];
        return LoadHalf(blk) * ActD32(a, b) * static_cast<float>(s);
    });
}

template <int MB, bool kFiveBits, bool kMin>
void DotsQ45_01(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    constexpr int kQh = LegacyQhAt(kMin), kQs = LegacyQsAt(kFiveBits, kMin);
    const auto block_dot = [](const uint8_t* blk, const ActPair32* a, int64_t b) {
        uint32_t qh = 0;
        if (kFiveBits) std::memcpy(&qh, blk + kQh, 4);
        const int8_t* aq = ActQ32(a, b);
        int32_t s = 0;
        for (int j = 0; j < 16; ++j) {
            const int lo = (blk[kQs + j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
            const int hi = (blk[kQs + j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
            s += lo * aq[j] + hi * aq[j + 16];
        }
        const float da = ActD32(a, b);
        const int32_t sum_a = ActSum32(a, b);
        return kMin ? LoadHalf(blk) * da * static_cast<float>(s) + LoadHalf(blk + 2) * da * static_cast<float>(sum_a)
                    : LoadHalf(blk) * da * static_cast<float>(s - 16 * sum_a);
    };
    ScalarDots<MB, ActPair32>(w, kQs + 16, acts, act_row_bytes, nb, out, block_dot);
}

template <int MB, bool kFiveBits>
void DotsQ45_K(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    const auto block_dot = [](const uint8_t* blk, const ActBlock256* a, int64_t b) {
        const uint8_t* qh = blk + 16;
        const uint8_t* qs = blk + (kFiveBits ? 48 : 16);
        uint8_t sc[8], mn[8];
        KQuantScalesMins(blk + 4, sc, mn);
        int32_t sumi = 0, summ = 0;
        for (int s = 0; s < 8; ++s) {
            // Sub-block s: the low (even s) or high nibbles of 32 bytes, and bit s of qh.
            int32_t dot = 0;
            for (int l = 0; l < 32; ++l) {
                int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0F;
                if (kFiveBits) q |= ((qh[l] >> s) & 1) << 4;
                dot += q * a[b].q[32 * s + l];
            }
            sumi += sc[s] * dot;
            summ += mn[s] * (a[b].bsums[2 * s] + a[b].bsums[2 * s + 1]);
        }
        return a[b].d * (LoadHalf(blk) * static_cast<float>(sumi) - LoadHalf(blk + 2) * static_cast<float>(summ));
    };
    ScalarDots<MB, ActBlock256>(w, kFiveBits ? 176 : 144, acts, act_row_bytes, nb, out, block_dot);
}

template <int MB>
void DotsQ6_K(const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    ScalarDots<MB, ActBlock256>(w, 210, acts, act_row_bytes, nb, out, [](const uint8_t* blk, const ActBlock256* a, int64_t b) {
        const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
        int32_t sumi = 0;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* ql = blk + 64 * half;
            const uint8_t* qh = blk + 128 + 32 * half;
            for (int t = 0; t < 4; ++t) {
                for (int l = 0; l < 32; ++l) {
                    const uint8_t low = ql[l + 32 * (t & 1)];
                    const int q = (t < 2 ? (low & 0x0F) : (low >> 4)) | (((qh[l] >> (2 * t)) & 3) << 4);
                    sumi += sc[8 * half + 2 * t + l / 16] * q * a[b].q[128 * half + 32 * t + l];
                }
            }
        }
        int32_t off = 0;
        for (int j = 0; j < 16; ++j) off += sc[j] * a[b].bsums[j];
        return LoadHalf(blk + 208) * a[b].d * static_cast<float>(sumi - 32 * off);
    });
}

#endif

template <int MB>
void Dots(QuantType type, const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb, float* out) {
    switch (type) {
#if PREPACK_ISA_LEVEL == 2
        case QuantType::kQ4_0:
            return UseVnni() ? DotsQ4_0512Vnni<MB>(w, acts, act_row_bytes, nb, out)
                             : DotsQ4_0512<MB>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ8_0:
            return UseVnni() ? DotsQ8_0512Vnni<MB>(w, acts, act_row_bytes, nb, out)
                             : DotsQ8_0512<MB>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ4_K: return DotsQ45_K512<MB, false>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ5_K: return DotsQ45_K512<MB, true>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ6_K: return DotsQ6_K512<MB>(w, acts, act_row_bytes, nb, out);
#else
        case QuantType::kQ4_0: return DotsQ4_0<MB>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ4_K: return DotsQ45_K<MB, false>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ5_K: return DotsQ45_K<MB, true>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ6_K: return DotsQ6_K<MB>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ8_0: return DotsQ8_0<MB>(w, acts, act_row_bytes, nb, out);
#endif
        case QuantType::kQ4_1: return DotsQ45_01<MB, false, true>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ5_0: return DotsQ45_01<MB, true, false>(w, acts, act_row_bytes, nb, out);
        case QuantType::kQ5_1: return DotsQ45_01<MB, true, true>(w, acts, act_row_bytes, nb, out);
    }
}

// The last group of fewer than kGroupRows rows, by its size.
template <int MB = kGroupRows - 1>
void DotsTail(int rows, QuantType type, const uint8_t* w, const uint8_t* acts, int64_t act_row_bytes, int64_t nb,
              float* out) {
    if constexpr (MB > 0) {
        if (rows == MB) return Dots<MB>(type, w, acts, act_row_bytes, nb, out);
        DotsTail<MB - 1>(rows, type, w, acts, act_row_bytes, nb, out);
    }
}

}  // namespace

void QuantLinear(const uint8_t* acts, const QuantSlice& w, float* y, int64_t ldy, int64_t m, int64_t k,
                 bool accumulate) {
    const int64_t row_bytes = QuantRowBytes(w.type, k), act_row_bytes = ActRowBytes(w.type, k);
    const int64_t nb = k / QuantBlockElems(w.type);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < w.rows; ++r) {
        const uint8_t* wrow = w.data + r * row_bytes;
        float dots[kGroupRows];
        for (int64_t i0 = 0; i0 < m; i0 += kGroupRows) {
            const int rows = static_cast<int>(std::min<int64_t>(kGroupRows, m - i0));
            const uint8_t* a = acts + i0 * act_row_bytes;
            if (rows == kGroupRows) {
                Dots<kGroupRows>(w.type, wrow, a, act_row_bytes, nb, dots);
            } else {
                DotsTail(rows, w.type, wrow, a, act_row_bytes, nb, dots);
            }
            for (int i = 0; i < rows; ++i) {
                float& out = y[(i0 + i) * ldy + r];
                out = accumulate ? out + dots[i] : dots[i];
            }
        }
    }
}

PREPACK_ISA_END
