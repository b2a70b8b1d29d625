// Quantized weights (kernels/cpu/quant_blocks.h, quant_linear.cpp, quant_gemm.cpp):
//  - each block type decodes to closed-form values, the blocks built here
//    from ggml's layout description (not from our decoder);
//  - the integer dot-product kernels of every level this CPU has equal the
//    decoded weights times the f32 activations within the activations'
//    int8 rounding (a bound computed from the data), and agree across levels;
//  - activations quantize to the same bytes at every level, as written
//    out here from the documented rule (ties to even included);
//  - above 16 rows the int8 GEMM (K-quants without native bf16) meets the
//    same bounds as the few-row kernels;
//  - a fused matrix of mixed types (Q4_K, Q4_K, Q6_K as in Q4_K_M files)
//    gives the same product through the few-row path and every many-row
//    arithmetic this CPU has (int8 GEMM, f32 panels, bf16 panels);
//  - a file with types prepack cannot read names every such tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/model/gguf.h"
#include "kernels/cpu/cpu_level.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_acts.h"
#include "kernels/cpu/quant_blocks.h"
#include "tests/test_util.h"
#include "tests/gguf_builder.h"

namespace prepack {
namespace {

using cpu::QuantType;
using test::GgufBuilder;

void PutHalf(uint8_t* p, float x) {
    const uint16_t h = Fp32ToFp16(x);
    std::memcpy(p, &h, 2);
}

// ggml's get_scale_min_k4 packing, written the other way round: 6-bit scale
// and min of sub-block j; j < 4 in the low bits of bytes j and j + 4, j >= 4
// in byte j + 4's nibbles with their top two bits in bytes j - 4 and j.
void PackScaleMins(const int sc[8], const int mn[8], uint8_t* scales) {
    std::memset(scales, 0, 12);
    for (int j = 0; j < 4; ++j) {
        scales[j] = static_cast<uint8_t>(sc[j]);
        scales[j + 4] = static_cast<uint8_t>(mn[j]);
    }
    for (int j = 4; j < 8; ++j) {
        scales[j + 4] = static_cast<uint8_t>((sc[j] & 0x0F) | ((mn[j] & 0x0F) << 4));
        scales[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
        scales[j] |= static_cast<uint8_t>((mn[j] >> 4) << 6);
    }
}

std::vector<float> Decode(QuantType type, const std::vector<uint8_t>& block) {
    std::vector<float> y(cpu::QuantBlockElems(type));
    cpu::DequantizeQuantRow(type, block.data(), y.data(), static_cast<int64_t>(y.size()));
    return y;
}

TEST(QuantBlocks, Q4_0DecodesToDTimesNibbleMinus8) {
    std::vector<uint8_t> b(18);
    PutHalf(b.data(), 0.5f);
    for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const std::vector<float> y = Decode(QuantType::kQ4_0, b);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.5f * (j - 8)) << j;
        EXPECT_EQ(y[j + 16], 0.5f * (15 - j - 8)) << j;
    }
}

TEST(QuantBlocks, Q8_0DecodesToDTimesQ) {
    std::vector<uint8_t> b(34);
    PutHalf(b.data(), 0.25f);
    for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(4 * j - 64));
    const std::vector<float> y = Decode(QuantType::kQ8_0, b);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * (4 * j - 64)) << j;
}

// Q4_1, Q5_0, Q5_1 (the K-quant files' fallback types): a fp16 d, then
// (Q4_1, Q5_1) a fp16 m, then (Q5_0, Q5_1) 4 bytes whose little-endian bit j
// is weight j's fifth bit, then Q4_0's 16 bytes of nibbles (weight j low,
// j + 16 high); y = d * q + m, or d * (q - 16) for Q5_0.
void CheckLegacyBlock(QuantType type, bool five_bits, bool has_min) {
    std::vector<uint8_t> b(cpu::QuantBlockBytes(type), 0);
    PutHalf(b.data(), 0.5f);
    if (has_min) PutHalf(b.data() + 2, -1.25f);
    uint8_t* qh = b.data() + (has_min ? 4 : 2);
    uint8_t* qs = qh + (five_bits ? 4 : 0);
    // Fifth bits in all four qh bytes, so their order matters.
    auto q_of = [&](int j) { return ((5 * j + 3) & 15) | (five_bits && (j % 3 == 0 || j == 31) ? 16 : 0); };
    for (int j = 0; j < 32; ++j) {
        qs[j % 16] |= static_cast<uint8_t>((q_of(j) & 15) << (j < 16 ? 0 : 4));
        if (q_of(j) & 16) qh[j / 8] |= static_cast<uint8_t>(1 << (j % 8));
    }
    const std::vector<float> y = Decode(type, b);
    for (int j = 0; j < 32; ++j) {
        const float want = has_min ? 0.5f * q_of(j) - 1.25f : 0.5f * (q_of(j) - 16);
        EXPECT_EQ(y[j], want) << cpu::QuantTypeName(type) << " " << j;
    }
}

TEST(QuantBlocks, Q4_1DecodesToDTimesNibblePlusM) { CheckLegacyBlock(QuantType::kQ4_1, false, true); }
TEST(QuantBlocks, Q5_0DecodesToDTimesFiveBitsMinus16) { CheckLegacyBlock(QuantType::kQ5_0, true, false); }
TEST(QuantBlocks, Q5_1DecodesToDTimesFiveBitsPlusM) { CheckLegacyBlock(QuantType::kQ5_1, true, true); }

// Q4_K and Q5_K: y = d * scale_s * q - dmin * min_s over sub-blocks s of 32,
// with scales and mins past 15 so the packed top bits matter.
void CheckKQuant(bool five_bits) {
    const QuantType type = five_bits ? QuantType::kQ5_K : QuantType::kQ4_K;
    std::vector<uint8_t> b(five_bits ? 176 : 144, 0);
    PutHalf(b.data(), 0.5f);
    PutHalf(b.data() + 2, 0.25f);
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
        sc[j] = 10 + 7 * j;   // 10 .. 59
        mn[j] = 63 - 5 * j;   // 63 .. 28
    }
    PackScaleMins(sc, mn, b.data() + 4);
    uint8_t* qh = b.data() + 16;
    uint8_t* qs = b.data() + (five_bits ? 48 : 16);
    auto q_of = [&](int s, int l) { return ((l + 3 * s) & 15) | (five_bits && (l + s) % 3 == 0 ? 16 : 0); };
    for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 32; ++l) {
            const int q = q_of(s, l);
            // Each 64 weights share 32 bytes: sub-block 2p in the low nibbles, 2p + 1 in the high.
            qs[32 * (s / 2) + l] |= static_cast<uint8_t>((q & 15) << (s % 2 ? 4 : 0));
            if (q & 16) qh[l] |= static_cast<uint8_t>(1 << s);
        }
    }
    const std::vector<float> y = Decode(type, b);
    for (int s = 0; s < 8; ++s) {
        for (int l = 0; l < 32; ++l) {
            EXPECT_FLOAT_EQ(y[32 * s + l], 0.5f * sc[s] * q_of(s, l) - 0.25f * mn[s]) << s << "," << l;
        }
    }
}

TEST(QuantBlocks, Q4_KDecodesToScaledNibblesLessScaledMins) { CheckKQuant(false); }
TEST(QuantBlocks, Q5_KDecodesWithTheFifthBit) { CheckKQuant(true); }

// Q6_K: y = d * scale[i / 16] * (q - 32); weight i = 128 h + 32 t + l keeps
// its low 4 bits in ql[64 h + l + 32 (t % 2)] (the high nibble for t >= 2)
// and its top 2 in bits 2t of qh[32 h + l].
TEST(QuantBlocks, Q6_KDecodesToScaledSixBitValuesMinus32) {
    std::vector<uint8_t> b(210, 0);
    auto q_of = [](int i) { return (i * 7 + 5) & 63; };
    for (int i = 0; i < 256; ++i) {
        const int h = i / 128, t = (i % 128) / 32, l = i % 32, q = q_of(i);
        b[64 * h + l + 32 * (t % 2)] |= static_cast<uint8_t>((q & 15) << (t >= 2 ? 4 : 0));
        b[128 + 32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * t));
    }
    for (int g = 0; g < 16; ++g) b[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(3 * g - 20));
    PutHalf(b.data() + 208, 0.125f);
    const std::vector<float> y = Decode(QuantType::kQ6_K, b);
    for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.125f * (3 * (i / 16) - 20) * (q_of(i) - 32)) << i;
}

// Random blocks of `type`: every byte random, the fp16 scales set to sane
// values (a random half could be inf or NaN).
std::vector<uint8_t> RandomRows(QuantType type, int64_t rows, int64_t k, std::mt19937& rng) {
    std::vector<uint8_t> w(static_cast<size_t>(rows * cpu::QuantRowBytes(type, k)));
    for (uint8_t& x : w) x = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> scale(0.001f, 0.02f);
    const int64_t bytes = cpu::QuantBlockBytes(type);
    for (size_t at = 0; at < w.size(); at += bytes) {
        uint8_t* b = w.data() + at;
        switch (type) {
            case QuantType::kQ4_0:
            case QuantType::kQ5_0:
            case QuantType::kQ8_0: PutHalf(b, scale(rng)); break;
            case QuantType::kQ4_1:
            case QuantType::kQ5_1:   // d, and a min of either sign
                PutHalf(b, scale(rng));
                PutHalf(b + 2, (rng() & 1 ? 8.0f : -8.0f) * scale(rng));
                break;
            case QuantType::kQ4_K:
            case QuantType::kQ5_K:
                PutHalf(b, scale(rng));
                PutHalf(b + 2, scale(rng));
                break;
            case QuantType::kQ6_K: PutHalf(b + 208, scale(rng)); break;
        }
    }
    return w;
}

struct Product {
    std::vector<double> y;           // decoded weights times the f32 activations, in double
    std::vector<double> tol;         // what rounding the activations to int8 may change
    std::vector<double> magnitude;   // sum |w x|: the scale of f32 summation error
    std::vector<double> rounded;     // decoded weights times the activations rounded as the kernels do
};

// x rounded per block of `block` values to multiples of max|x| / 127.
std::vector<float> RoundedActivations(const std::vector<float>& x, int block) {
    std::vector<float> out(x.size());
    for (size_t b0 = 0; b0 < x.size(); b0 += block) {
        float amax = 0;
        for (size_t j = b0; j < b0 + block; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        for (size_t j = b0; j < b0 + block; ++j) out[j] = d == 0 ? 0.0f : d * std::nearbyint(x[j] / d);
    }
    return out;
}

// The reference product and its error bound: each activation block of
// `block` values is rounded to multiples of max|x| / 127, so each moves by at
// most half of that; a weight w turns that into |w| times it.
Product Reference(const cpu::Matrix& w, const std::vector<float>& x, int64_t m, int64_t n, int64_t k, int block) {
    Product p{std::vector<double>(m * n), std::vector<double>(m * n), std::vector<double>(m * n),
              std::vector<double>(m * n)};
    const std::vector<float> xr = RoundedActivations(x, block);
    std::vector<float> row(k);
    for (int64_t r = 0; r < n; ++r) {
        cpu::DecodeMatrixRow(w, r, k, row.data());
        for (int64_t i = 0; i < m; ++i) {
            double sum = 0, bound = 0, magnitude = 0, rounded = 0;
            for (int64_t b0 = 0; b0 < k; b0 += block) {
                double amax = 0, wsum = 0;
                for (int64_t j = b0; j < b0 + block; ++j) {
                    sum += double(row[j]) * x[i * k + j];
                    magnitude += std::fabs(double(row[j]) * x[i * k + j]);
                    rounded += double(row[j]) * xr[i * k + j];
                    amax = std::max(amax, std::fabs(double(x[i * k + j])));
                    wsum += std::fabs(double(row[j]));
                }
                bound += wsum * amax / 127.0 * 0.5;
            }
            p.y[i * n + r] = sum;
            p.magnitude[i * n + r] = magnitude;
            p.rounded[i * n + r] = rounded;
            p.tol[i * n + r] = bound * 1.01 + 1e-6 * magnitude;   // and f32 summation
        }
    }
    return p;
}

class QuantLinearTest : public ::testing::TestWithParam<QuantType> {
protected:
    void SetUp() override { bf16_path_ = cpu::Bf16GemmPath(); }
    void TearDown() override {
        cpu::ForceCpuLevel(cpu::DetectedCpuLevel());
        cpu::SetBf16GemmPath(bf16_path_.c_str());
    }

private:
    std::string bf16_path_;
};

TEST_P(QuantLinearTest, EveryLevelEqualsDecodedWeightsWithinActivationRounding) {
    const QuantType type = GetParam();
    std::mt19937 rng(7);
    // An odd row count; 2 super-blocks, or 17 small blocks (an odd count: the
    // 512-bit kernels take two at a time).
    const bool small_blocks = cpu::QuantBlockElems(type) == 32;
    const int64_t n = 37, k = small_blocks ? 544 : 512;
    const std::vector<uint8_t> data = RandomRows(type, n, k, rng);
    cpu::Matrix w;
    w.quant[0] = {type, data.data(), n};
    w.n_quant = 1;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 16}) {
        std::vector<float> x(m * k);
        for (float& v : x) v = normal(rng);
        x[3] = 40.0f;   // an outlier: its block's scale is coarse, and the bound says so
        const Product want = Reference(w, x, m, n, k, small_blocks ? 32 : 256);
        std::vector<float> base;
        for (cpu::CpuLevel level : testing::CpuLevelsHere()) {
            ASSERT_TRUE(cpu::ForceCpuLevel(level));
            // The int8 GEMM takes batched decode from a few rows on (quant_gemm.cpp); off, the
            // few-row kernels take every m here.
            for (bool int8_gemm : {true, false}) {
                cpu::SetInt8PrefillGemm(int8_gemm);
                const std::string what = std::string(cpu::QuantTypeName(type)) + " " + cpu::CpuLevelName(level) +
                                         " m=" + std::to_string(m) + (int8_gemm ? " gemm allowed" : " few-row");
                std::vector<float> y(m * n, 1.0f);
                cpu::Linear(x.data(), w, y.data(), m, n, k, /*accumulate=*/true);
                for (int64_t i = 0; i < m * n; ++i) {
                    ASSERT_NEAR(y[i] - 1.0f, want.y[i], want.tol[i]) << what << " at " << i;
                    // Sharper: exactly the product with the activations rounded as documented.
                    ASSERT_NEAR(y[i] - 1.0f, want.rounded[i], 2e-6 * want.magnitude[i] + 1e-6) << what << " at " << i;
                }
                // The integer sums are exact, so levels and kernels differ only in the order of f32 adds.
                if (base.empty()) base = y;
                for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(y[i], base[i], 1e-4f * (1 + std::fabs(base[i]))) << what;
            }
            cpu::SetInt8PrefillGemm(true);
        }
    }
}

// Above 16 rows, with the int8 GEMM allowed and not, at every level: the
// int8 GEMM (Q4_0 and the K-quants on rows of whole 256-weight blocks, from
// AVX2 up) within the activation rounding, as the few-row kernels, and
// exactly the product of the rounded activations; decoded f32 panels (the
// rest, and everything at the baseline) within f32 rounding; bf16 panels
// (native bf16 GEMM, forced off here) are MixedSlicesThroughEveryPath's.
// 17 and 23 rows leave 1 and 3 over the GEMM's 4-row groups, 37 weight
// rows 5 over its tiles (8 rows at AVX2, 16 at AVX-512); Q4_0 also on a row
// of 17 blocks of 32, which the GEMM leaves to the panels.
TEST_P(QuantLinearTest, EveryLevelManyRowsWithinTheirArithmeticsBound) {
    const QuantType type = GetParam();
    std::mt19937 rng(9);
    const bool small_blocks = cpu::QuantBlockElems(type) == 32;
    std::vector<int64_t> ks = {768};
    if (small_blocks) ks.push_back(544);
    const int64_t n = 37;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t k : ks) {
        const std::vector<uint8_t> data = RandomRows(type, n, k, rng);
        cpu::Matrix w;
        w.quant[0] = {type, data.data(), n};
        w.n_quant = 1;
        for (int64_t m : {17, 23}) {
            std::vector<float> x(m * k);
            for (float& v : x) v = normal(rng);
            x[3] = 40.0f;
            const Product want = Reference(w, x, m, n, k, small_blocks ? 32 : 256);
            for (cpu::CpuLevel level : testing::CpuLevelsHere()) {
                ASSERT_TRUE(cpu::ForceCpuLevel(level));
                ASSERT_TRUE(cpu::SetBf16GemmPath("widen"));
                for (bool int8 : {true, false}) {
                    cpu::SetInt8PrefillGemm(int8);
                    const std::string arithmetic = cpu::QuantPrefillArithmetic(type, k);
                    const std::string what = std::string(cpu::QuantTypeName(type)) + " " + cpu::CpuLevelName(level) +
                                             " k=" + std::to_string(k) + " m=" + std::to_string(m) + " " + arithmetic;
                    const bool tiled = type == QuantType::kQ4_0 || !small_blocks;   // quant_gemm.cpp's types
                    if (int8 && level != cpu::CpuLevel::kBaseline && tiled && k % 256 == 0) {
                        ASSERT_EQ(arithmetic, "int8") << what;
                    }
                    std::vector<float> y(m * n, 1.0f);
                    cpu::Linear(x.data(), w, y.data(), m, n, k, /*accumulate=*/true);
                    for (int64_t i = 0; i < m * n; ++i) {
                        if (arithmetic == "int8") {
                            ASSERT_NEAR(y[i] - 1.0f, want.y[i], want.tol[i]) << what << " at " << i;
                            ASSERT_NEAR(y[i] - 1.0f, want.rounded[i], 2e-6 * want.magnitude[i] + 1e-6) << what << " at " << i;
                        } else {
                            ASSERT_EQ(arithmetic, "f32") << what;
                            ASSERT_NEAR(y[i] - 1.0f, want.y[i], 1e-6 * want.magnitude[i] + 1e-6) << what << " at " << i;
                        }
                    }
                }
                cpu::SetInt8PrefillGemm(true);
            }
        }
    }
}

// The decoding of the many-row path (per level, laid out for vectorising)
// equals the reference decoding exactly.
TEST_P(QuantLinearTest, EveryLevelDecodesRowsAsTheReference) {
    const QuantType type = GetParam();
    std::mt19937 rng(3);
    const int64_t k = 1024;
    const std::vector<uint8_t> data = RandomRows(type, 3, k, rng);
    std::vector<float> want(3 * k), got(3 * k);
    cpu::DequantizeQuantRow(type, data.data(), want.data(), 3 * k);
    for (cpu::CpuLevel level : testing::CpuLevelsHere()) {
        ASSERT_TRUE(cpu::ForceCpuLevel(level));
        std::fill(got.begin(), got.end(), -1.0f);
        cpu::ActiveKernels().decode_quant_row(type, data.data(), got.data(), 3 * k);
        ASSERT_EQ(got, want) << cpu::QuantTypeName(type) << " at " << cpu::CpuLevelName(level);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantLinearTest,
                         ::testing::Values(QuantType::kQ4_0, QuantType::kQ4_1, QuantType::kQ5_0, QuantType::kQ5_1,
                                           QuantType::kQ8_0, QuantType::kQ4_K, QuantType::kQ5_K, QuantType::kQ6_K),
                         [](const auto& info) { return std::string(cpu::QuantTypeName(info.param)); });

// The rule of quant_acts.h written out: d = max|x| / 127, q = x * (1 / d)
// to the nearest integer, ties to even; sums of each 16 codes (per 256) or
// of the block (per 32, blocks in pairs, an odd last one beside zeros).
std::vector<uint8_t> ReferenceActs(QuantType type, const std::vector<float>& x, int64_t m, int64_t k) {
    std::vector<uint8_t> out(static_cast<size_t>(m * cpu::ActRowBytes(type, k)), 0);
    const int64_t block = cpu::UsesActBlock256(type) ? 256 : 32;
    for (int64_t i = 0; i < m; ++i) {
        uint8_t* row = out.data() + i * cpu::ActRowBytes(type, k);
        for (int64_t b = 0; b < k / block; ++b) {
            const float* xb = x.data() + i * k + b * block;
            float amax = 0;
            for (int64_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(xb[j]));
            const float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
            int8_t q[256];
            for (int64_t j = 0; j < block; ++j) {
                const float v = xb[j] * inv;
                float r = std::floor(v);
                if (v - r > 0.5f || (v - r == 0.5f && std::fmod(r, 2.0f) != 0)) r += 1;   // ties to even
                q[j] = static_cast<int8_t>(r);
            }
            if (block == 256) {
                auto& a = reinterpret_cast<cpu::ActBlock256*>(row)[b];
                a.d = d;
                std::memcpy(a.q, q, 256);
                for (int g = 0; g < 16; ++g) {
                    int sum = 0;
                    for (int j = 0; j < 16; ++j) sum += q[16 * g + j];
                    a.bsums[g] = static_cast<int16_t>(sum);
                }
            } else {
                auto& p = reinterpret_cast<cpu::ActPair32*>(row)[b / 2];
                p.d[b % 2] = d;
                std::memcpy(p.q + 32 * (b % 2), q, 32);
                int sum = 0;
                for (int j = 0; j < 32; ++j) sum += q[j];
                p.sum[b % 2] = sum;
            }
        }
    }
    return out;
}

TEST(QuantActs, EveryLevelQuantizesAsTheRuleSays) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (QuantType type : {QuantType::kQ4_K, QuantType::kQ8_0}) {
        // Q8_0's 17 blocks of 32 leave the last pair half empty.
        const int64_t m = 3, k = type == QuantType::kQ4_K ? 512 : 544;
        std::vector<float> x(m * k);
        for (float& v : x) v = normal(rng);
        // Row 0's first block: max 127, so d = 1 and the values below are exact ties.
        x[0] = 127.0f;
        x[1] = 2.5f;
        x[2] = -3.5f;
        x[3] = 0.5f;
        std::fill(x.begin() + k, x.begin() + k + 256, 0.0f);   // row 1's first block all zero: d = 0
        const std::vector<uint8_t> want = ReferenceActs(type, x, m, k);
        for (cpu::CpuLevel level : testing::CpuLevelsHere()) {
            ASSERT_TRUE(cpu::ForceCpuLevel(level));
            std::vector<uint8_t> got(want.size(), 0);
            cpu::ActiveKernels().quantize_act_rows(type, x.data(), m, k, got.data());
            EXPECT_EQ(got, want) << cpu::QuantTypeName(type) << " at " << cpu::CpuLevelName(level);
            // The parallel front end (rows split across threads) writes the same.
            std::fill(got.begin(), got.end(), 0);
            cpu::QuantizeActs(type, x.data(), m, k, got.data());
            EXPECT_EQ(got, want) << cpu::QuantTypeName(type) << " through QuantizeActs at " << cpu::CpuLevelName(level);
        }
        cpu::ForceCpuLevel(cpu::DetectedCpuLevel());
    }
}

// Q|K|V of a Q4_K_M file: two Q4_K slices and a Q6_K one, through every
// many-row arithmetic this CPU has and the few-row path. Decoded f32 panels
// are exact against the decoded weights in f32; bf16 panels (native bf16
// GEMM) within bf16 rounding of weights and activations; the int8 GEMM
// (no native bf16 path) and the few-row path within the activation rounding.
TEST(QuantLinear, MixedSlicesThroughEveryPath) {
    std::mt19937 rng(11);
    const int64_t k = 256, rows[3] = {64, 16, 16}, n = 96;
    const QuantType types[3] = {QuantType::kQ4_K, QuantType::kQ4_K, QuantType::kQ6_K};
    std::vector<std::vector<uint8_t>> data;
    cpu::Matrix w;
    for (int s = 0; s < 3; ++s) {
        data.push_back(RandomRows(types[s], rows[s], k, rng));
        w.quant[s] = {types[s], data.back().data(), rows[s]};
    }
    w.n_quant = 3;
    const std::string bf16_path = cpu::Bf16GemmPath();
    struct Path {
        const char* bf16;
        bool        int8;
    };
    std::vector<Path> paths = {{"widen", true}, {"widen", false}};
    if (cpu::HasNativeBf16Gemm()) paths.push_back({"onednn", true});
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t m : {3, 40}) {
        std::vector<float> x(m * k);
        for (float& v : x) v = normal(rng);
        const Product want = Reference(w, x, m, n, k, 256);
        for (const Path& path : paths) {
            ASSERT_TRUE(cpu::SetBf16GemmPath(path.bf16));
            cpu::SetInt8PrefillGemm(path.int8);
            const std::string arithmetic = m > 16 ? cpu::QuantPrefillArithmetic(QuantType::kQ4_K, k) : "few-row int8";
            std::vector<float> y(m * n);
            cpu::Linear(x.data(), w, y.data(), m, n, k, /*accumulate=*/false);
            for (int64_t i = 0; i < m * n; ++i) {
                const double tol = arithmetic == "bf16"  ? 2.0 / 256 * want.magnitude[i]   // 2 x 2^-8
                                   : arithmetic == "f32" ? 1e-6 * want.magnitude[i]
                                                         : want.tol[i];
                ASSERT_NEAR(y[i], want.y[i], tol) << "m=" << m << " through " << arithmetic << " at " << i;
            }
        }
    }
    cpu::SetBf16GemmPath(bf16_path.c_str());
    cpu::SetInt8PrefillGemm(true);
}

TEST(QuantGguf, EveryTensorOfAnUnreadableTypeIsNamed) {
    GgufBuilder b;
    b.AddString("general.architecture", "llama");
    // IQ4_NL (20) and Q3_K (11): real types prepack has no kernels for.
    b.AddTensorRaw("blk.0.attn_q.weight", {32, 2}, 20, std::vector<uint8_t>(2 * 18));
    b.AddTensorF32("blk.0.attn_norm.weight", {4}, {1, 1, 1, 1});
    b.AddTensorRaw("blk.1.ffn_down.weight", {256, 1}, 11, std::vector<uint8_t>(110));
    auto f = GgufFile::FromBytes(b.Build());
    ASSERT_FALSE(f.ok());
    const std::string msg(f.status().message());
    EXPECT_NE(msg.find("2 of 3 tensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'blk.0.attn_q.weight' (type 20, IQ4_NL)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'blk.1.ffn_down.weight' (type 11, Q3_K)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Q4_K"), std::string::npos) << "names what it does read: " << msg;
}

}  // namespace
}  // namespace prepack
