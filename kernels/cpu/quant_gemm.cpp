// Per level (kernel_table.h): Y = X W^T for many rows of X (prefill) on
// Q4_0 and K-quant weights (Q4_K, Q5_K, Q6_K), in integer arithmetic, for
// CPUs without native bf16 GEMM. There the alternative, oneDNN's f32 sgemm
// on decoded panels, ran at 75-85% of the f32 peak and still reached only
// 0.84x of llama.cpp's int8 prefill of a Q4_K_M file on an AVX2-only CPU
// (docs/benchmarks.md).
//
// The weights are repacked a panel at a time (about 256 KiB, so it stays in
// L2 while every activation row passes over it) into tiles of 8 rows (16 at
// the AVX-512 level), one row per 32-bit lane: for each 4 consecutive
// weights of a block, 8 rows x 4 unsigned bytes make one 256-bit vector (16
// rows one 512-bit vector). Four weights of one activation row, broadcast to
// all lanes, then meet all the tile's rows in one vpmaddubsw, so the
// products land in the rows' lanes and never need a horizontal sum; int16
// sums run over a whole sub-block (the sub-block's scale is the same in
// every step) before one vpmaddwd by the rows' scales. Each weight vector
// serves kActRows activation rows from registers, each activation broadcast
// serves a tile of weight rows. The 512-bit tile ran the 512-row product
// 1.3-1.6x as fast as two 256-bit ones at the AVX-512 level (Xeon, bench
// kernels). The activations are quantized as for the
// few-row kernels (quant_acts.h), so both paths agree within f32 rounding,
// and llama.cpp, whose many-row path is int8 too, computes the same.
//
// int16 never overflows: a step adds at most 2 * q_max * 127 per lane, 3810
// for Q4_0 and Q4_K (8 steps: 30480), 7874 for Q5_K (4 steps: 31496), 16002
// for Q6_K (2 steps: 32004), so the flush period is 8, 4 and 2 steps. Q8_0's
// signed weights do not fit vpmaddubsw's unsigned operand: it stays on the
// decoded panels (gemm.cpp).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_acts.h"
#include "kernels/cpu/quant_blocks.h"

#include "kernels/cpu/level_kernels.h"   // last: opens the per-level region
#include "kernels/cpu/quant_level_helpers.h"

PREPACK_ISA_BEGIN

#if PREPACK_ISA_LEVEL >= 1

namespace {

// A tile's rows sit one per 32-bit lane of a vector: 8 rows in a 256-bit
// vector at the AVX2 level, 16 in a 512-bit one at the AVX-512 level, where
// each activation broadcast then meets twice the rows per instruction.
#if PREPACK_ISA_LEVEL == 2
// GCC 12's AVX-512 headers pass _mm512_undefined_*() through many intrinsics
// and then warn "may be used uninitialized" where they are inlined (GCC bug
// 105593, fixed in GCC 13): a false alarm this file would otherwise print.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
using TileI = __m512i;
using TileF = __m512;
inline TileI TLoad(const void* p) { return _mm512_loadu_si512(p); }
inline TileI TZero() { return _mm512_setzero_si512(); }
inline TileI TSet1(int32_t v) { return _mm512_set1_epi32(v); }
inline TileI TMaddUbs(TileI u8, TileI s8) { return _mm512_maddubs_epi16(u8, s8); }
inline TileI TMadd16(TileI a, TileI b) { return _mm512_madd_epi16(a, b); }
inline TileI TAdd16(TileI a, TileI b) { return _mm512_add_epi16(a, b); }
inline TileI TAdd32(TileI a, TileI b) { return _mm512_add_epi32(a, b); }
inline TileI TSub32(TileI a, TileI b) { return _mm512_sub_epi32(a, b); }
inline TileF TLoadF(const uint8_t* p) { return _mm512_loadu_ps(p); }
inline TileF TZeroF() { return _mm512_setzero_ps(); }
inline TileF TSet1F(float v) { return _mm512_set1_ps(v); }
inline TileF TCvtF(TileI v) { return _mm512_cvtepi32_ps(v); }
inline TileF TMulF(TileF a, TileF b) { return _mm512_mul_ps(a, b); }
inline TileF TFmaddF(TileF a, TileF b, TileF c) { return _mm512_fmadd_ps(a, b, c); }
inline TileF TFnmaddF(TileF a, TileF b, TileF c) { return _mm512_fnmadd_ps(a, b, c); }
inline void TStoreF(float* p, TileF v) { _mm512_storeu_ps(p, v); }
inline void TStore(uint8_t* p, TileI v) { _mm512_storeu_si512(p, v); }
inline TileI TAnd(TileI a, TileI b) { return _mm512_and_si512(a, b); }
inline TileI TOr(TileI a, TileI b) { return _mm512_or_si512(a, b); }
inline TileI TSrli32(TileI v, unsigned n) { return _mm512_srli_epi32(v, n); }
inline TileI TSlli32(TileI v, unsigned n) { return _mm512_slli_epi32(v, n); }
inline TileI TSrai32(TileI v, unsigned n) { return _mm512_srai_epi32(v, n); }
// Lane r: the 4 bytes at base + offset[r].
inline TileI TGather(const uint8_t* base, TileI offset) { return _mm512_i32gather_epi32(offset, base, 1); }
// Lane r: the fp16 value in the low 16 bits of lane r of v, as a float.
inline TileF THalvesToFloat(TileI v) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v)); }
// An empty asm the compiler must assume reads and changes v: it keeps each
// running sum a single chain. Without it GCC reassociates the int16 adds of
// a sub-block into a tree, computes every product first and spills them
// (the sums are exact either way).
inline void KeepInRegister(TileI& v) { asm("" : "+v"(v)); }
#else
using TileI = __m256i;
using TileF = __m256;
inline TileI TLoad(const void* p) { return Load32(p); }
inline TileI TZero() { return _mm256_setzero_si256(); }
inline TileI TSet1(int32_t v) { return _mm256_set1_epi32(v); }
inline TileI TMaddUbs(TileI u8, TileI s8) { return _mm256_maddubs_epi16(u8, s8); }
inline TileI TMadd16(TileI a, TileI b) { return _mm256_madd_epi16(a, b); }
inline TileI TAdd16(TileI a, TileI b) { return _mm256_add_epi16(a, b); }
inline TileI TAdd32(TileI a, TileI b) { return _mm256_add_epi32(a, b); }
inline TileI TSub32(TileI a, TileI b) { return _mm256_sub_epi32(a, b); }
inline TileF TLoadF(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
inline TileF TZeroF() { return _mm256_setzero_ps(); }
inline TileF TSet1F(float v) { return _mm256_set1_ps(v); }
inline TileF TCvtF(TileI v) { return _mm256_cvtepi32_ps(v); }
inline TileF TMulF(TileF a, TileF b) { return _mm256_mul_ps(a, b); }
inline TileF TFmaddF(TileF a, TileF b, TileF c) { return _mm256_fmadd_ps(a, b, c); }
inline TileF TFnmaddF(TileF a, TileF b, TileF c) { return _mm256_fnmadd_ps(a, b, c); }
inline void TStoreF(float* p, TileF v) { _mm256_storeu_ps(p, v); }
inline void TStore(uint8_t* p, TileI v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline TileI TAnd(TileI a, TileI b) { return _mm256_and_si256(a, b); }
inline TileI TOr(TileI a, TileI b) { return _mm256_or_si256(a, b); }
inline TileI TSrli32(TileI v, unsigned n) { return _mm256_srli_epi32(v, static_cast<int>(n)); }
inline TileI TSlli32(TileI v, unsigned n) { return _mm256_slli_epi32(v, static_cast<int>(n)); }
inline TileI TSrai32(TileI v, unsigned n) { return _mm256_srai_epi32(v, static_cast<int>(n)); }
// Eight loads rather than vpgatherdd: under QEMU 7.2 (Debian 12's
// qemu-user, how the AVX2 kernels are checked on AVX-512 machines) this
// file's vpgatherdd gave wrong Q4_K/Q5_K headers once the compiler allocated
// registers differently (quant_test failed under -cpu Haswell; it passed
// natively and with these loads), and the loads measured as fast (bench
// kernels, Xeon, AVX2 level: GEMM within noise at 8, 16 and 512 rows).
inline TileI TGather(const uint8_t* base, TileI offset) {
    alignas(32) int32_t at[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(at), offset);
    int32_t v[8];
    for (int i = 0; i < 8; ++i) std::memcpy(&v[i], base + at[i], 4);
    return _mm256_setr_epi32(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
}
inline TileF THalvesToFloat(TileI v) {   // the 8 low halves packed into 128 bits (each < 2^16: no saturation)
    const __m256i low = _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF));
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(low, low), 0x08)));
}
// See the AVX-512 version above.
inline void KeepInRegister(TileI& v) { asm("" : "+x"(v)); }
#endif
constexpr int kVecBytes = sizeof(TileI);    // bytes of one step, scale or d vector of a tile
constexpr int kTileRows = kVecBytes / 4;    // weight rows of a tile
// Activation rows sharing each weight vector: their int16 and int32 sums and
// float totals take 12 of AVX2's 16 vector registers. (At the AVX-512 level,
// with 32, 6 and 8 rows on the 256-bit tile measured 119 GMAC/s against 4
// rows' 190 on Q4_K; not measured again with the 512-bit tile.)
constexpr int kActRows = 4;
constexpr int kSteps = 64;     // 4-weight steps of a 256-weight block
// Bytes of repacked weights a thread keeps per panel: half of a Zen 3's 512
// KiB L2. (On the Xeon, AVX2 level, 16 KiB to 1 MiB measured within 7%;
// -DPREPACK_GEMM_PANEL_KIB=N measures another size.)
#ifndef PREPACK_GEMM_PANEL_KIB
#define PREPACK_GEMM_PANEL_KIB 256
#endif
constexpr int64_t kPanelBytes = int64_t{PREPACK_GEMM_PANEL_KIB} << 10;

// One block (256 weights) of a tile, repacked, in vectors of kVecBytes:
//   q      kSteps vectors: step t holds weights 4t..4t+3 of each row, row r in lane r;
//   scales one vector per scale group (32 weights for Q4_K/Q5_K, 16 for Q6_K):
//          each lane the row's scale twice as int16, the vpmaddwd multiplier;
//   mins   8 vectors, vector p against the activation sums of 16-weight groups
//          2p and 2p+1 (vpmaddwd): a Q4_K/Q5_K row's min of sub-block p in both
//          int16 halves, a Q6_K row's 32 * scale of groups 2p and 2p+1 (its "- 32");
//   d      the rows' block scales as floats; dmin the mins' (Q6_K: d again).
struct TileFormat {
    int flush_steps;   // steps summed in int16 before the vpmaddwd
    int scale_steps;   // steps under one scale
    constexpr int64_t ScaleGroups() const { return kSteps / scale_steps; }
    constexpr int64_t ScalesAt() const { return kVecBytes * kSteps; }
    constexpr int64_t MinsAt() const { return ScalesAt() + kVecBytes * ScaleGroups(); }
    constexpr int64_t DAt() const { return MinsAt() + kVecBytes * 8; }
    constexpr int64_t DminAt() const { return DAt() + kVecBytes; }
    constexpr int64_t BlockBytes() const { return DminAt() + kVecBytes; }
};

constexpr TileFormat FormatOf(QuantType type) {
    return type == QuantType::kQ4_K ? TileFormat{8, 8} : type == QuantType::kQ5_K ? TileFormat{4, 8} : TileFormat{2, 4};
}

// Q4_0 has no sub-block scales or mins, only each 32-weight block's d: a
// tile's 256 weights (8 blocks) are q as above, then 8 vectors of the
// rows' d, one per block. Its "- 8" comes from the activations' block sums.
constexpr int64_t kQ4_0BlockBytes = kVecBytes * (kSteps + 8);

// Bytes of one repacked 256-weight block of a tile.
constexpr int64_t TileBlockBytes(QuantType type) {
    return type == QuantType::kQ4_0 ? kQ4_0BlockBytes : FormatOf(type).BlockBytes();
}

inline void Store32(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

// A Q4_K/Q5_K row's 256 weights of one block as unsigned bytes in weight
// order (its scales, mins, d and dmin are PutKScales's).
template <bool kFiveBits>
void UnpackQ45_K(const uint8_t* blk, uint8_t q[256]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const uint8_t* qs = blk + (kFiveBits ? 48 : 16);
    const __m256i qh = kFiveBits ? Load32(blk + 16) : _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {   // 32 bytes: sub-block 2j in the low nibbles, 2j + 1 in the high
        const __m256i v = Load32(qs + 32 * j);
        __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (kFiveBits) {   // bit s of qh[l] is the fifth bit of weight l of sub-block s
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
        }
        Store32(q + 64 * j, lo);
        Store32(q + 64 * j + 32, hi);
    }
}

// The gather offsets of a tile's rows for the Put*Scales below:
// row r's at r * row_bytes; lanes past `valid` read row 0 (their products
// are never written out).
TileI RowOffsets(int64_t row_bytes, int valid) {
    alignas(64) int32_t offsets[kTileRows];
    for (int r = 0; r < kTileRows; ++r) offsets[r] = static_cast<int32_t>((r < valid ? r : 0) * row_bytes);
    return TLoad(offsets);
}

// The scales, min multipliers, d and dmin of one block of a tile's Q4_K or
// Q5_K rows (`blocks` is row 0's block, the others row_bytes apart), worked
// out with the rows in lanes, which is the tile's layout: gathers of each 4
// header bytes and the bit steps of KQuantScalesMins, instead of a scalar
// decode and 18 scattered stores per row.
void PutKScales(const uint8_t* blocks, int64_t row_bytes, int valid, const TileFormat& f, uint8_t* dst) {
    const TileI at = RowOffsets(row_bytes, valid);
    const TileI u0 = TGather(blocks + 4, at), u1 = TGather(blocks + 8, at), u2 = TGather(blocks + 12, at);
    const TileI low6 = TSet1(0x3f3f3f3f), low4 = TSet1(0x0f0f0f0f), low2 = TSet1(0x03030303);
    // Bytes 0-3 then 4-7 of each row's 8 scales and 8 mins.
    const TileI sc[2] = {TAnd(u0, low6), TOr(TAnd(u2, low4), TSlli32(TAnd(TSrli32(u0, 6), low2), 4))};
    const TileI mn[2] = {TAnd(u1, low6), TOr(TAnd(TSrli32(u2, 4), low4), TSlli32(TAnd(TSrli32(u1, 6), low2), 4))};
    const TileI byte = TSet1(0xFF);
    for (int g = 0; g < 8; ++g) {   // as int16 in both halves of each lane
        const TileI s = TAnd(TSrli32(sc[g / 4], 8 * (g % 4)), byte), m = TAnd(TSrli32(mn[g / 4], 8 * (g % 4)), byte);
        TStore(dst + f.ScalesAt() + kVecBytes * g, TOr(s, TSlli32(s, 16)));
        TStore(dst + f.MinsAt() + kVecBytes * g, TOr(m, TSlli32(m, 16)));
    }
    const TileI dd = TGather(blocks, at);   // d in the low 16 bits, dmin in the high
    TStoreF(reinterpret_cast<float*>(dst + f.DAt()), THalvesToFloat(dd));
    TStoreF(reinterpret_cast<float*>(dst + f.DminAt()), THalvesToFloat(TSrli32(dd, 16)));
}

// A Q6_K row's 256 weights of one block as unsigned bytes in weight order
// (the "- 32" is applied through the tile's mins: PutQ6_KScales).
void UnpackQ6_K(const uint8_t* blk, uint8_t q[256]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = blk + 64 * half;
        const __m256i qh = Load32(blk + 128 + 32 * half);
        const __m256i low0 = Load32(ql), low1 = Load32(ql + 32);
        // Weights 32t + l of the half: low nibble of ql[l] (t = 0) or ql[l + 32]
        // (t = 1), high nibble (t = 2, 3); bits 2t, 2t + 1 of qh[l] on top.
        const __m256i nib[4] = {_mm256_and_si256(low0, m4), _mm256_and_si256(low1, m4),
                                _mm256_and_si256(_mm256_srli_epi16(low0, 4), m4),
                                _mm256_and_si256(_mm256_srli_epi16(low1, 4), m4)};
        for (int t = 0; t < 4; ++t) {
            const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * t), m2), 4);
            Store32(q + 128 * half + 32 * t, _mm256_or_si256(nib[t], high));
        }
    }
}

// PutKScales for Q6_K: its 16 signed 8-bit scales as int16 pairs, the mins
// vectors as 32 * the scales of groups 2p and 2p + 1 (its "- 32"), d (and
// dmin = d) from the fp16 at byte 208, read as the high half of bytes
// 206-209 so no gather reads past the 210-byte block.
void PutQ6_KScales(const uint8_t* blocks, int64_t row_bytes, int valid, const TileFormat& f, uint8_t* dst) {
    const TileI at = RowOffsets(row_bytes, valid);
    TileI sc[4];
    for (int i = 0; i < 4; ++i) sc[i] = TGather(blocks + 192 + 4 * i, at);
    const TileI low16 = TSet1(0xFFFF);
    auto scale = [&](int g) { return TSrai32(TSlli32(sc[g / 4], 24 - 8 * (g % 4)), 24); };   // sign-extended
    for (int g = 0; g < 16; ++g) {
        const TileI s = scale(g);
        TStore(dst + f.ScalesAt() + kVecBytes * g, TOr(TAnd(s, low16), TSlli32(s, 16)));
    }
    for (int p = 0; p < 8; ++p) {
        TStore(dst + f.MinsAt() + kVecBytes * p, TOr(TAnd(TSlli32(scale(2 * p), 5), low16), TSlli32(scale(2 * p + 1), 21)));
    }
    const TileF d = THalvesToFloat(TSrli32(TGather(blocks + 206, at), 16));
    TStoreF(reinterpret_cast<float*>(dst + f.DAt()), d);
    TStoreF(reinterpret_cast<float*>(dst + f.DminAt()), d);
}

// Eight Q4_0 blocks of a row (256 weights) as unsigned nibbles in weight
// order (their d are PutQ4_0Scales's).
void UnpackQ4_0(const uint8_t* blk, uint8_t q[256]) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (int j = 0; j < 8; ++j, blk += 18) {   // byte l: weight l low, weight l + 16 high
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * j), _mm_and_si128(v, m4));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * j + 16), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
    }
}

// The d of a tile's eight Q4_0 blocks of 32 (`blocks` is row 0's first, the
// other rows row_bytes apart), gathered with the rows in lanes as
// PutKScales does: each d is the low half of the 4 bytes at its block.
void PutQ4_0Scales(const uint8_t* blocks, int64_t row_bytes, int valid, uint8_t* dst) {
    const TileI at = RowOffsets(row_bytes, valid);
    for (int j = 0; j < 8; ++j) {
        TStoreF(reinterpret_cast<float*>(dst + kVecBytes * (kSteps + j)), THalvesToFloat(TGather(blocks + 18 * j, at)));
    }
}

// Rows 8h..8h+7 of StoreSteps (below): 32 bytes of each step vector.
void StoreSteps8(const uint8_t* const q[8], uint8_t* dst) {
    for (int c = 0; c < kSteps; c += 8, dst += kVecBytes * 8) {
        __m256i r[8], t[8], u[8];
        for (int i = 0; i < 8; ++i) r[i] = Load32(q[i] + 4 * c);
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);       // per 128-bit lane: a0 b0 a1 b1
            t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);   // a2 b2 a3 b3
        }
        for (int i = 0; i < 8; i += 4) {
            u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);        // dword 0 of 4 rows (4 in the high lane)
            u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);    // dword 1 (5)
            u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);   // dword 2 (6)
            u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);   // dword 3 (7)
        }
        for (int i = 0; i < 4; ++i) {
            Store32(dst + kVecBytes * i, _mm256_permute2x128_si256(u[i], u[i + 4], 0x20));
            Store32(dst + kVecBytes * (i + 4), _mm256_permute2x128_si256(u[i], u[i + 4], 0x31));
        }
    }
}

// Writes the 64 step vectors of a block from its rows' weights in weight
// order (q[r], 256 bytes each): step t holds dword t of each row, row r in
// lane r. That is a kTileRows x 64 transpose of dwords, done 8 x 8 at a time
// in registers. It replaced a 4-byte copy per row and step, which the
// batched decode's few rows per repack could not amortise: 12-16-row
// products ran 6-14% faster with the transpose (bench kernels --rows 12,16).
void StoreSteps(const uint8_t* const q[kTileRows], uint8_t* dst) {
    for (int h = 0; h < kTileRows / 8; ++h) StoreSteps8(q + 8 * h, dst + 32 * h);
}

// Repacks `valid` rows (the rest of the tile zero weights) of `nb` 256-weight blocks into `dst`.
void RepackTile(QuantType type, const uint8_t* rows, int64_t row_bytes, int valid, int64_t nb, uint8_t* dst) {
    const int64_t block_bytes = QuantRowBytes(type, 256);   // of 256 weights: 8 blocks of Q4_0, 1 of a K-quant
    alignas(32) uint8_t q[kTileRows][256] = {};   // rows past `valid` stay zero
    const uint8_t* qs[kTileRows];
    for (int r = 0; r < kTileRows; ++r) qs[r] = q[r];
    for (int64_t b = 0; b < nb; ++b, dst += TileBlockBytes(type)) {
        for (int r = 0; r < valid; ++r) {
            const uint8_t* blk = rows + r * row_bytes + b * block_bytes;
            PrefetchAhead(blk, block_bytes);
            switch (type) {
                case QuantType::kQ4_0: UnpackQ4_0(blk, q[r]); break;
                case QuantType::kQ4_K: UnpackQ45_K<false>(blk, q[r]); break;
                case QuantType::kQ5_K: UnpackQ45_K<true>(blk, q[r]); break;
                default: UnpackQ6_K(blk, q[r]); break;
            }
        }
        const uint8_t* blocks = rows + b * block_bytes;
        switch (type) {
            case QuantType::kQ4_0: PutQ4_0Scales(blocks, row_bytes, valid, dst); break;
            case QuantType::kQ6_K: PutQ6_KScales(blocks, row_bytes, valid, FormatOf(type), dst); break;
            default: PutKScales(blocks, row_bytes, valid, FormatOf(type), dst); break;
        }
        StoreSteps(qs, dst);
    }
}

inline TileI Broadcast4(const void* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return TSet1(v);
}

// part[i] += the int16 sums over kN steps from `w` (kVecBytes each) of the
// tile's rows times activation row i's codes from q[i] (4 each).
template <int NA, int kN>
inline void StepSums(const uint8_t* w, const int8_t* const* q, TileI* part) {
    for (int s = 0; s < kN; ++s) {
        const TileI ws = TLoad(w + kVecBytes * s);
        for (int i = 0; i < NA; ++i) {
            part[i] = TAdd16(part[i], TMaddUbs(ws, Broadcast4(q[i] + 4 * s)));
            KeepInRegister(part[i]);
        }
    }
}

// out[i][r] = row r of the tile times activation row i, for NA rows `act_row_bytes` apart.
template <int NA, QuantType kType>
void TileDots(const uint8_t* tile, int64_t nb, const uint8_t* acts, int64_t act_row_bytes, float out[][kTileRows]) {
    constexpr TileFormat f = FormatOf(kType);
    constexpr int kFlush = f.flush_steps, kScaleSteps = f.scale_steps;
    TileF acc[NA];
    for (int i = 0; i < NA; ++i) acc[i] = TZeroF();
    for (int64_t b = 0; b < nb; ++b, tile += f.BlockBytes()) {
        const ActBlock256* a[NA];
        for (int i = 0; i < NA; ++i) a[i] = reinterpret_cast<const ActBlock256*>(acts + i * act_row_bytes) + b;
        TileI isum[NA];
        for (int i = 0; i < NA; ++i) isum[i] = TZero();
        for (int s0 = 0; s0 < kSteps; s0 += kFlush) {
            TileI part[NA];
            const int8_t* q[NA];
            for (int i = 0; i < NA; ++i) {
                part[i] = TZero();
                q[i] = a[i]->q + 4 * s0;
            }
            StepSums<NA, kFlush>(tile + kVecBytes * s0, q, part);
            const TileI scale = TLoad(tile + f.ScalesAt() + kVecBytes * (s0 / kScaleSteps));
            for (int i = 0; i < NA; ++i) isum[i] = TAdd32(isum[i], TMadd16(part[i], scale));
        }
        const TileF d = TLoadF(tile + f.DAt()), dmin = TLoadF(tile + f.DminAt());
        for (int i = 0; i < NA; ++i) {
            TileI msum = TZero();
            for (int p = 0; p < 8; ++p) {
                msum = TAdd32(msum, TMadd16(TLoad(tile + f.MinsAt() + kVecBytes * p), Broadcast4(a[i]->bsums + 2 * p)));
            }
            const TileF da = TSet1F(a[i]->d);
            acc[i] = TFmaddF(TMulF(d, da), TCvtF(isum[i]), acc[i]);
            acc[i] = TFnmaddF(TMulF(dmin, da), TCvtF(msum), acc[i]);
        }
    }
    for (int i = 0; i < NA; ++i) TStoreF(out[i], acc[i]);
}

// Q4_0: per 32-weight block, 8 steps of int16 sums (at most 8 * 2 * 15 *
// 127 = 30480), to int32, less 8 times the activations' block sum, by d.
template <int NA>
void TileDotsQ4_0(const uint8_t* tile, int64_t nb, const uint8_t* acts, int64_t act_row_bytes,
                  float out[][kTileRows]) {
    const TileI ones = TSet1(0x00010001);   // int16 ones
    TileF acc[NA];
    for (int i = 0; i < NA; ++i) acc[i] = TZeroF();
    for (int64_t b = 0; b < 8 * nb; ++b) {   // 32-weight blocks
        const uint8_t* w = tile + (b / 8) * kQ4_0BlockBytes;
        const int j = static_cast<int>(b % 8);
        const ActPair32* a[NA];
        TileI part[NA];
        const int8_t* q[NA];
        for (int i = 0; i < NA; ++i) {
            a[i] = reinterpret_cast<const ActPair32*>(acts + i * act_row_bytes);
            q[i] = ActQ32(a[i], b);
            part[i] = TZero();
        }
        StepSums<NA, 8>(w + kVecBytes * 8 * j, q, part);
        const TileF d = TLoadF(w + kVecBytes * (kSteps + j));
        for (int i = 0; i < NA; ++i) {
            const TileI sum = TSub32(TMadd16(part[i], ones), TSet1(8 * ActSum32(a[i], b)));
            acc[i] = TFmaddF(TMulF(d, TSet1F(ActD32(a[i], b))), TCvtF(sum), acc[i]);
        }
    }
    for (int i = 0; i < NA; ++i) TStoreF(out[i], acc[i]);
}

// The kernel for `rows` (1..NA) activation rows, by recursion down from NA.
template <QuantType kType, int NA = kActRows>
void TileDotsRows(int rows, const uint8_t* tile, int64_t nb, const uint8_t* acts, int64_t act_row_bytes,
                  float out[][kTileRows]) {
    if constexpr (NA > 1) {
        if (rows < NA) return TileDotsRows<kType, NA - 1>(rows, tile, nb, acts, act_row_bytes, out);
    }
    if constexpr (kType == QuantType::kQ4_0) {
        TileDotsQ4_0<NA>(tile, nb, acts, act_row_bytes, out);
    } else {
        TileDots<NA, kType>(tile, nb, acts, act_row_bytes, out);
    }
}

void Dots(QuantType type, int rows, const uint8_t* tile, int64_t nb, const uint8_t* acts, int64_t act_row_bytes,
          float out[][kTileRows]) {
    switch (type) {
        case QuantType::kQ4_K: return TileDotsRows<QuantType::kQ4_K>(rows, tile, nb, acts, act_row_bytes, out);
        case QuantType::kQ5_K: return TileDotsRows<QuantType::kQ5_K>(rows, tile, nb, acts, act_row_bytes, out);
        case QuantType::kQ6_K: return TileDotsRows<QuantType::kQ6_K>(rows, tile, nb, acts, act_row_bytes, out);
        default: return TileDotsRows<QuantType::kQ4_0>(rows, tile, nb, acts, act_row_bytes, out);
    }
}

}  // namespace

int64_t QuantGemmMinRows(QuantType type, int64_t k) {
    // Q8_0 is not taken: its signed weights need llama.cpp's sign trick
    // (vpsignb, and int16 pairs that fill after one step), twice the work per
    // weight of Q4_K, about what sgemm on its decoded panels costs. (Widening
    // them to int16 for vpmaddwd was tried: 92-99 GMAC/s against sgemm's
    // ~105, and a slower prefill; docs/benchmarks.md.) Nor are Q4_1, Q5_0
    // and Q5_1: K-quant files hold them exactly where rows are not a multiple
    // of 256 weights, which the tiles' 256-weight blocks cannot take (a GEMM
    // for them would need partial blocks); they stay on the decoded panels.
    const bool tiled = type == QuantType::kQ4_0 || type == QuantType::kQ4_K || type == QuantType::kQ5_K ||
                       type == QuantType::kQ6_K;
    if (!tiled || k <= 0 || k % 256 != 0) return 0;
    // The repack gathers a tile's headers at int32 offsets (RowOffsets).
    if ((kTileRows - 1) * QuantRowBytes(type, k) > INT32_MAX) return 0;
    // Below 17 rows the few-row kernels are the alternative. Where the GEMM,
    // repacking included, measured at least 1.1x faster (2048 x 2048 and
    // 2048 x 8192, 2 threads, on the Xeon of docs/benchmarks.md) it takes
    // over from these row counts: Q4_0 from 4 at AVX2 (1.17x) and 6 at
    // AVX-512 (1.12x; 0.92x at 4), Q4_K and Q5_K from 8 at both (1.12x and
    // up; 0.96-1.08x at 6); Q6_K, whose flush every 2 steps costs most, from
    // 12 at AVX-512 (1.11x; 0.91x at 8) and never at AVX2 (1.03-1.14x at 16).
    const bool wide = PREPACK_ISA_LEVEL == 2;
    switch (type) {
        case QuantType::kQ4_0: return wide ? 6 : 4;
        case QuantType::kQ4_K:
        case QuantType::kQ5_K: return 8;
        default: return wide ? 12 : 17;   // Q6_K
    }
}

bool QuantGemm(const uint8_t* acts, const QuantSlice& w, float* y, int64_t ldy, int64_t m, int64_t k,
               bool accumulate) {
    if (QuantGemmMinRows(w.type, k) == 0) return false;
    if (w.rows <= 0 || m <= 0) return true;   // nothing to write (and std::clamp below needs a tile)
    const int64_t nb = k / 256, row_bytes = QuantRowBytes(w.type, k), act_row_bytes = ActRowBytes(w.type, k);
    const int64_t tile_bytes = nb * TileBlockBytes(w.type);
    const int64_t n_tiles = (w.rows + kTileRows - 1) / kTileRows;
    const int64_t panel_tiles = std::clamp<int64_t>(kPanelBytes / tile_bytes, 1, n_tiles);
    const int64_t n_panels = (n_tiles + panel_tiles - 1) / panel_tiles;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t p = 0; p < n_panels; ++p) {
        static thread_local std::vector<uint8_t> panel;
        panel.resize(static_cast<size_t>(panel_tiles * tile_bytes));
        const int64_t t0 = p * panel_tiles, tiles = std::min(panel_tiles, n_tiles - t0);
        for (int64_t t = 0; t < tiles; ++t) {
            const int64_t r0 = (t0 + t) * kTileRows;
            const int valid = static_cast<int>(std::min<int64_t>(kTileRows, w.rows - r0));
            RepackTile(w.type, w.data + r0 * row_bytes, row_bytes, valid, nb, panel.data() + t * tile_bytes);
        }
        float dots[kActRows][kTileRows];
        for (int64_t i0 = 0; i0 < m; i0 += kActRows) {
            const int rows = static_cast<int>(std::min<int64_t>(kActRows, m - i0));
            for (int64_t t = 0; t < tiles; ++t) {
                Dots(w.type, rows, panel.data() + t * tile_bytes, nb, acts + i0 * act_row_bytes, act_row_bytes, dots);
                const int64_t r0 = (t0 + t) * kTileRows;
                const int valid = static_cast<int>(std::min<int64_t>(kTileRows, w.rows - r0));
                for (int i = 0; i < rows; ++i) {
                    float* out = y + (i0 + i) * ldy + r0;
                    for (int r = 0; r < valid; ++r) out[r] = accumulate ? out[r] + dots[i][r] : dots[i][r];
                }
            }
        }
    }
    return true;
}

#else   // baseline: no int8 GEMM; the caller decodes panels for sgemm

int64_t QuantGemmMinRows(QuantType, int64_t) { return 0; }

bool QuantGemm(const uint8_t*, const QuantSlice&, float*, int64_t, int64_t, int64_t, bool) { return false; }

#endif

PREPACK_ISA_END
