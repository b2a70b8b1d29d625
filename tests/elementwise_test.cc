// Row-wise kernels against their textbook formulas in double precision,
// including arguments where a careless formula overflows.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/bf16.h"
#include "kernels/cpu/cpu_level.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/simd.h"
#include "tests/test_util.h"

namespace prepack::cpu {
namespace {

TEST(Elementwise, SwiGluMatchesFormulaEverywhere) {
    std::vector<float> gates;
    for (float g = -120.0f; g <= 120.0f; g += 0.37f) gates.push_back(g);
    for (float g : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 1e4f, -1e4f}) gates.push_back(g);
    const int64_t hidden = static_cast<int64_t>(gates.size());
    std::vector<float> gu(2 * hidden), out(hidden);
    for (int64_t i = 0; i < hidden; ++i) {
        gu[i] = gates[i];
        gu[hidden + i] = 0.5f + 0.001f * static_cast<float>(i);
    }
    // Every level: eight at a time from AVX2 up (and in SSE pairs at the
    // baseline), the scalar tail too (hidden is not a multiple of 8).
    ASSERT_NE(hidden % 8, 0);
    for (CpuLevel level : testing::CpuLevelsHere()) {
        ASSERT_TRUE(ForceCpuLevel(level));
        SwiGlu(gu.data(), out.data(), 1, hidden);
        for (int64_t i = 0; i < hidden; ++i) {
            const double g = gates[i];
            const double want = g / (1.0 + std::exp(-g)) * gu[hidden + i];
            ASSERT_TRUE(std::isfinite(out[i])) << "g " << g << " at " << CpuLevelName(level);
            ASSERT_NEAR(out[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "g " << g << " at " << CpuLevelName(level);
        }
    }
    ForceCpuLevel(DetectedCpuLevel());
}

// GeGLU (Gemma): gelu in its tanh form times up, at every level, through
// the vector body and the scalar tail; tanh's absolute error (~1e-7) is
// scaled by g/2, so the bound grows with |g|.
TEST(Elementwise, GeGluMatchesFormulaEverywhere) {
    std::vector<float> gates;
    for (float g = -60.0f; g <= 60.0f; g += 0.29f) gates.push_back(g);
    for (float g : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e4f, -1e4f}) gates.push_back(g);
    const int64_t hidden = static_cast<int64_t>(gates.size());
    ASSERT_NE(hidden % 8, 0);
    std::vector<float> gu(2 * hidden), out(hidden);
    for (int64_t i = 0; i < hidden; ++i) {
        gu[i] = gates[i];
        gu[hidden + i] = 0.5f + 0.001f * static_cast<float>(i);
    }
    for (CpuLevel level : testing::CpuLevelsHere()) {
        ASSERT_TRUE(ForceCpuLevel(level));
        GeGlu(gu.data(), out.data(), 1, hidden);
        for (int64_t i = 0; i < hidden; ++i) {
            const double g = gates[i], u = gu[hidden + i];
            const double want = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))) * u;
            ASSERT_TRUE(std::isfinite(out[i])) << "g " << g << " at " << CpuLevelName(level);
            ASSERT_NEAR(out[i], want, 1e-6 * std::max(1.0, std::fabs(want)) + 2e-7 * std::fabs(g * u))
                << "g " << g << " at " << CpuLevelName(level);
        }
    }
    ForceCpuLevel(DetectedCpuLevel());
}

// Soft-caps (Gemma 2): cap * tanh(x / cap), bounded by the cap however large x is.
TEST(Elementwise, SoftCapMatchesFormulaAndStaysWithinTheCap) {
    std::vector<float> x;
    for (float v = -400.0f; v <= 400.0f; v += 0.77f) x.push_back(v);
    for (float v : {0.0f, 1e-30f, 1e30f, -1e30f}) x.push_back(v);
    ASSERT_NE(x.size() % 8, 0u);
    for (CpuLevel level : testing::CpuLevelsHere()) {
        ASSERT_TRUE(ForceCpuLevel(level));
        for (float cap : {30.0f, 1.5f}) {
            std::vector<float> y = x;
            SoftCap(y.data(), static_cast<int64_t>(y.size()), cap);
            for (size_t i = 0; i < x.size(); ++i) {
                const double want = cap * std::tanh(double(x[i]) / cap);
                ASSERT_NEAR(y[i], want, 2e-7 * cap) << "x " << x[i] << " cap " << cap << " at " << CpuLevelName(level);
                ASSERT_LE(std::fabs(y[i]), cap) << "x " << x[i] << " at " << CpuLevelName(level);
            }
        }
    }
    ForceCpuLevel(DetectedCpuLevel());
}

TEST(Elementwise, ExpNonPositiveIsAccurateAndUnderflowsToZero) {
    for (float x = -90.0f; x <= 0.0f; x += 0.013f) {
        const double want = std::exp(double(x));
        ASSERT_NEAR(ExpNonPositive(x), want, 3e-7 * want + 2e-38) << x;   // below -87: 0
    }
    EXPECT_EQ(ExpNonPositive(-INFINITY), 0.0f);
    EXPECT_EQ(ExpNonPositive(0.0f), 1.0f);
}

TEST(Elementwise, GatherWidensBf16Rows) {
    const int64_t dim = 19;
    std::vector<uint16_t> table(5 * dim);
    for (size_t i = 0; i < table.size(); ++i) table[i] = F32ToBf16(0.25f * static_cast<float>(i) - 7.0f);
    const int32_t ids[] = {4, 0, 4, 2};
    std::vector<float> out(4 * dim);
    Gather(Matrix{nullptr, table.data()}, ids, out.data(), 4, dim);
    for (int r = 0; r < 4; ++r) {
        for (int64_t i = 0; i < dim; ++i) {
            ASSERT_EQ(out[r * dim + i], 0.25f * static_cast<float>(ids[r] * dim + i) - 7.0f);   // exact in bf16
        }
    }
}

}  // namespace
}  // namespace prepack::cpu
