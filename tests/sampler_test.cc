// Tests for core/sampler: parameter validation, the RNG, greedy and
// stochastic sampling (checked against softmax computed independently in
// double precision), the truncation filters and the repetition penalty.
#include "core/request/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <new>
#include <vector>

// Counts heap allocations in this test binary, so the "scratch buffers are
// reused" promise of Sampler can be checked rather than assumed. The
// replacements stay out of line: once inlined, GCC 12 pairs our malloc with
// the library's view of operator new and warns (-Wmismatched-new-delete).
static std::atomic<long> g_allocations{0};

__attribute__((noinline)) void* operator new(std::size_t size) {
    ++g_allocations;
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace prepack {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// softmax(logits / temperature) in double, written naively on purpose: it is
// the independent expectation the sampler's frequencies are compared with.
std::vector<double> Softmax(const std::vector<float>& logits, double temperature = 1.0) {
    double max_scaled = -std::numeric_limits<double>::infinity();
    for (float x : logits) max_scaled = std::max(max_scaled, x / temperature);
    std::vector<double> p(logits.size());
    double sum = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] / temperature - max_scaled);
    for (double& v : p) v /= sum;
    return p;
}

std::vector<float> LogsOf(const std::vector<double>& probs) {
    std::vector<float> logits;
    for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
    return logits;
}

// Draws `n` tokens and returns how often each id came up.
std::vector<int> Histogram(Sampler& sampler, const std::vector<float>& logits, int n,
                           const std::vector<int32_t>& history = {}) {
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < n; ++i) {
        const int32_t id = sampler.Sample(logits, history);
        EXPECT_GE(id, 0);
        EXPECT_LT(id, static_cast<int32_t>(logits.size()));
        if (id >= 0 && id < static_cast<int32_t>(logits.size())) ++counts[id];
    }
    return counts;
}

// Every bucket within 5 standard errors of its expected frequency, and the
// chi-square statistic under its 99.9% critical value. Seeds are fixed, so a
// pass is reproducible; the bounds just keep the expectations honest.
void ExpectMatches(const std::vector<int>& counts, const std::vector<double>& expected) {
    ASSERT_EQ(counts.size(), expected.size());
    const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
    double chi2 = 0.0;
    int dof = -1;
    for (size_t i = 0; i < counts.size(); ++i) {
        const double p = expected[i];
        if (p == 0.0) {
            EXPECT_EQ(counts[i], 0) << "id " << i << " has probability 0";
            continue;
        }
        const double se = std::sqrt(p * (1.0 - p) / n);
        EXPECT_NEAR(counts[i] / n, p, 5.0 * se + 1e-12) << "id " << i;
        chi2 += (counts[i] - n * p) * (counts[i] - n * p) / (n * p);
        ++dof;
    }
    // 99.9% quantiles of chi-square for 1..7 degrees of freedom.
    const double kCritical[] = {0.0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};
    ASSERT_GE(dof, 1);
    ASSERT_LE(dof, 7);
    EXPECT_LT(chi2, kCritical[dof]) << "dof " << dof;
}

// ---------------------------------------------------------------------------
// Validation

TEST(ValidateSamplingParams, DefaultsAreValid) {
    EXPECT_TRUE(ValidateSamplingParams(SamplingParams{}).ok());
}

TEST(ValidateSamplingParams, BoundaryValuesAreValid) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 1.0f;
    p.repetition_penalty = 1e-3f;
    p.repetition_window = 0;
    EXPECT_TRUE(ValidateSamplingParams(p).ok());
    p.min_p = 0.0f;
    p.top_p = 1e-6f;
    p.temperature = 100.0f;
    EXPECT_TRUE(ValidateSamplingParams(p).ok());
}

struct InvalidCase {
    std::string field;
    std::function<void(SamplingParams&)> mutate;
    std::string value_text;   // how the offending value must appear in the message
};

TEST(ValidateSamplingParams, RejectsEachInvalidFieldByName) {
    const std::vector<InvalidCase> cases = {
        {"temperature", [](SamplingParams& p) { p.temperature = -1.0f; }, "got -1"},
        {"temperature", [](SamplingParams& p) { p.temperature = kNaN; }, "nan"},
        {"temperature", [](SamplingParams& p) { p.temperature = kInf; }, "inf"},
        {"top_k", [](SamplingParams& p) { p.top_k = -1; }, "got -1"},
        {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }, "got 0"},
        {"top_p", [](SamplingParams& p) { p.top_p = 1.5f; }, "got 1.5"},
        {"top_p", [](SamplingParams& p) { p.top_p = -0.5f; }, "got -0.5"},
        {"top_p", [](SamplingParams& p) { p.top_p = kNaN; }, "nan"},
        {"top_p", [](SamplingParams& p) { p.top_p = kInf; }, "inf"},
        {"min_p", [](SamplingParams& p) { p.min_p = -0.1f; }, "got -0.1"},
        {"min_p", [](SamplingParams& p) { p.min_p = 1.5f; }, "got 1.5"},
        {"min_p", [](SamplingParams& p) { p.min_p = kNaN; }, "nan"},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }, "got 0"},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = -2.0f; }, "got -2"},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = kNaN; }, "nan"},
        {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = kInf; }, "inf"},
        {"repetition_window", [](SamplingParams& p) { p.repetition_window = -3; }, "got -3"},
    };
    for (const InvalidCase& c : cases) {
        SamplingParams p;
        c.mutate(p);
        const absl::Status status = ValidateSamplingParams(p);
        EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field << " " << c.value_text;
        const std::string message(status.message());
        EXPECT_EQ(message.rfind(c.field, 0), 0u) << "message should start with the field: " << message;
        EXPECT_NE(message.find(c.value_text), std::string::npos) << message;
    }
}

// ---------------------------------------------------------------------------
// Rng

TEST(Rng, MatchesSplitMixSeededXoshiro256StarStar) {
    // Expected values come from an independent Python transcription of the
    // published algorithms (its SplitMix64(0) stream starts 0xe220a8397b1dcdaf,
    // the well-known first value).
    Rng zero(0);
    EXPECT_EQ(zero.NextU64(), 0x99ec5f36cb75f2b4ULL);
    EXPECT_EQ(zero.NextU64(), 0xbf6e1f784956452aULL);
    EXPECT_EQ(zero.NextU64(), 0x1a5f849d4933e6e0ULL);
    Rng r42(42);
    EXPECT_EQ(r42.NextU64(), 0x15780b2e0c2ec716ULL);
    // NextFloat is the top 24 bits scaled by 2^-24.
    EXPECT_EQ(r42.NextFloat(), static_cast<float>(0x6104d9866d113a7eULL >> 40) / 16777216.0f);
}

TEST(Rng, NextFloatIsInUnitIntervalOn24BitGrid) {
    Rng rng(7);
    double sum = 0.0;
    constexpr int kN = 100000;
    for (int i = 0; i < kN; ++i) {
        const float u = rng.NextFloat();
        ASSERT_GE(u, 0.0f);
        ASSERT_LT(u, 1.0f);
        const float scaled = u * 16777216.0f;
        ASSERT_EQ(scaled, std::floor(scaled));
        sum += u;
    }
    // Mean of U[0,1) is 0.5 with standard error 1/sqrt(12 N) ~ 0.0009.
    EXPECT_NEAR(sum / kN, 0.5, 0.005);
}

// ---------------------------------------------------------------------------
// Greedy, ArgMax

TEST(ArgMax, LowestIndexOnTies) {
    EXPECT_EQ(ArgMax(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
    EXPECT_EQ(ArgMax(std::vector<float>{5.0f}), 0);
    EXPECT_EQ(ArgMax(std::vector<float>{-kInf, -kInf, -1.0f}), 2);
    EXPECT_EQ(ArgMax(std::vector<float>{kNaN, -5.0f, kNaN, -4.0f}), 3);
}

TEST(Sampler, GreedyReturnsArgmaxAndIgnoresSeed) {
    const std::vector<float> logits = {0.1f, 2.5f, -3.0f, 2.5f, 1.0f};
    for (uint64_t seed : {0ULL, 1ULL, 12345ULL, ~0ULL}) {
        SamplingParams p;
        p.temperature = 0.0f;
        p.seed = seed;
        Sampler sampler(p);
        for (int i = 0; i < 10; ++i) EXPECT_EQ(sampler.Sample(logits, {}), 1);
    }
}

TEST(Sampler, DoesNotModifyTheCallersLogits) {
    std::vector<float> logits = {1.0f, 2.0f, 3.0f};
    const std::vector<float> before = logits;
    SamplingParams p;
    p.repetition_penalty = 2.0f;
    p.top_k = 2;
    Sampler sampler(p);
    const std::vector<int32_t> history = {2, 1};
    sampler.Sample(logits, history);
    EXPECT_EQ(logits, before);
}

// ---------------------------------------------------------------------------
// Determinism

std::vector<int32_t> DrawSequence(uint64_t seed, const std::vector<float>& logits, int n) {
    SamplingParams p;
    p.seed = seed;
    Sampler sampler(p);
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) out.push_back(sampler.Sample(logits, {}));
    return out;
}

TEST(Sampler, SameSeedGivesSameSequence) {
    std::vector<float> logits(1000);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(0.37f * i) * 2.0f;
    EXPECT_EQ(DrawSequence(99, logits, 500), DrawSequence(99, logits, 500));
}

TEST(Sampler, DifferentSeedsGiveDifferentSequences) {
    // Flat over 8 tokens: two independent 50-token sequences agree with
    // probability 8^-50.
    const std::vector<float> logits(8, 0.0f);
    const auto a = DrawSequence(1, logits, 50);
    const auto b = DrawSequence(2, logits, 50);
    EXPECT_NE(a, b);
    // And the flat distribution really is sampled, not collapsed.
    EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 4u);
}

// ---------------------------------------------------------------------------
// Distribution

TEST(Sampler, FrequenciesMatchSoftmaxAtTemperatureOne) {
    const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 0.0f};
    SamplingParams p;
    p.seed = 2024;
    Sampler sampler(p);
    ExpectMatches(Histogram(sampler, logits, 200000), Softmax(logits));
}

TEST(Sampler, FrequenciesMatchSoftmaxAtTemperatureHalf) {
    const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 0.0f};
    SamplingParams p;
    p.temperature = 0.5f;
    p.seed = 77;
    Sampler sampler(p);
    const auto expected = Softmax(logits, 0.5);
    ExpectMatches(Histogram(sampler, logits, 200000), expected);
    // Sanity: sharpening really changed the target compared with T = 1.
    EXPECT_GT(expected[1], Softmax(logits)[1] + 0.1);
}

// ---------------------------------------------------------------------------
// top-k, top-p, min-p

TEST(Sampler, TopKOneEqualsGreedy) {
    std::vector<float> logits(500);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::cos(1.3f * i) * 3.0f;
    SamplingParams p;
    p.top_k = 1;
    p.seed = 5;
    Sampler sampler(p);
    for (int i = 0; i < 200; ++i) EXPECT_EQ(sampler.Sample(logits, {}), ArgMax(logits));
}

TEST(Sampler, TopKNeverLeavesTheTrueTopK) {
    std::vector<float> logits(2000);
    Rng gen(31);
    for (float& x : logits) x = gen.NextFloat() * 4.0f;   // flat-ish: many ids plausible
    constexpr int kK = 10;
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    const std::set<int32_t> top(ids.begin(), ids.begin() + kK);

    SamplingParams p;
    p.top_k = kK;
    p.seed = 8;
    Sampler sampler(p);
    std::set<int32_t> seen;
    for (int i = 0; i < 5000; ++i) {
        const int32_t id = sampler.Sample(logits, {});
        ASSERT_TRUE(top.count(id)) << "id " << id << " is outside the top-" << kK;
        seen.insert(id);
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(kK));   // and all of them are reachable
}

TEST(Sampler, TopKTiesAtBoundaryKeepLowerIds) {
    // Ids 1, 2, 3 tie for first; top_k = 2 must keep 1 and 2, never 3.
    const std::vector<float> logits = {0.0f, 5.0f, 5.0f, 5.0f, 1.0f};
    SamplingParams p;
    p.top_k = 2;
    p.seed = 3;
    Sampler sampler(p);
    const auto counts = Histogram(sampler, logits, 20000);
    EXPECT_EQ(counts[0] + counts[3] + counts[4], 0);
    ExpectMatches(counts, {0.0, 0.5, 0.5, 0.0, 0.0});
}

TEST(Sampler, TopKAtLeastVocabIsOff) {
    const std::vector<float> logits = {1.0f, 0.0f, -1.0f};
    SamplingParams p;
    p.top_k = 3;
    p.seed = 10;
    Sampler sampler(p);
    ExpectMatches(Histogram(sampler, logits, 100000), Softmax(logits));
}

TEST(Sampler, TopPKeepsSmallestNucleusAndRenormalises) {
    const std::vector<float> logits = LogsOf({0.5, 0.3, 0.15, 0.05});
    SamplingParams p;
    p.top_p = 0.8f;
    p.seed = 11;
    Sampler sampler(p);
    const auto counts = Histogram(sampler, logits, 100000);
    EXPECT_EQ(counts[2] + counts[3], 0);
    // Renormalised over {0, 1}: 0.5 : 0.3 = 5 : 3.
    ExpectMatches(counts, {5.0 / 8.0, 3.0 / 8.0, 0.0, 0.0});
}

TEST(Sampler, TopPJustAboveMassIncludesNextToken) {
    const std::vector<float> logits = LogsOf({0.5, 0.3, 0.15, 0.05});
    SamplingParams p;
    p.top_p = 0.81f;
    p.seed = 12;
    Sampler sampler(p);
    ExpectMatches(Histogram(sampler, logits, 100000), {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0});
}

TEST(Sampler, TopPSmallKeepsOnlyTheBest) {
    const std::vector<float> logits = LogsOf({0.2, 0.5, 0.3});
    SamplingParams p;
    p.top_p = 0.01f;
    Sampler sampler(p);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(sampler.Sample(logits, {}), 1);
}

TEST(Sampler, TopPWithLargeNucleusOverManyTokens) {
    // A nucleus of thousands of ids exercises the sampler's growing partial
    // sort; the expected set is computed here with a full sort in double.
    std::vector<float> logits(20000);
    Rng gen(1234);
    for (float& x : logits) x = gen.NextFloat() * 3.0f;
    const auto probs = Softmax(logits);
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
    constexpr double kTopP = 0.6;
    std::set<int32_t> nucleus;
    double cum = 0.0;
    for (int32_t id : ids) {
        nucleus.insert(id);
        cum += probs[id];
        if (cum >= kTopP) break;
    }
    ASSERT_GT(nucleus.size(), 1000u);

    SamplingParams p;
    p.top_p = static_cast<float>(kTopP);
    p.seed = 4;
    Sampler sampler(p);
    for (int i = 0; i < 1000; ++i) {
        const int32_t id = sampler.Sample(logits, {});
        ASSERT_TRUE(nucleus.count(id)) << "id " << id << " p=" << probs[id];
    }
}

TEST(Sampler, TopPBreaksTiesByLowerId) {
    // 1000 equal logits: the nucleus of mass 0.5 is exactly ids 0..499.
    const std::vector<float> logits(1000, 0.0f);
    SamplingParams p;
    p.top_p = 0.5f;
    p.seed = 21;
    Sampler sampler(p);
    int32_t highest = -1;
    for (int i = 0; i < 5000; ++i) highest = std::max(highest, sampler.Sample(logits, {}));
    EXPECT_EQ(highest, 499);
}

TEST(Sampler, TopPIsAppliedBeforeMinP) {
    // probs [0.5, 0.3, 0.15, 0.05], top_p 0.82, min_p 0.2 (drops p < 0.1).
    // top-p first: 0.5 + 0.3 < 0.82, so {0, 1, 2}; min-p then keeps all three.
    // (min-p first would renormalise to 0.526 + 0.316 >= 0.82 and keep {0, 1}.)
    const std::vector<float> logits = LogsOf({0.5, 0.3, 0.15, 0.05});
    SamplingParams p;
    p.top_p = 0.82f;
    p.min_p = 0.2f;
    p.seed = 22;
    Sampler sampler(p);
    ExpectMatches(Histogram(sampler, logits, 100000), {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0});
}

TEST(Sampler, TopKThenTopP) {
    const std::vector<float> logits = LogsOf({0.05, 0.3, 0.15, 0.5});
    SamplingParams p;
    p.top_k = 3;      // drops id 0
    p.top_p = 0.75f;  // of the renormalised {0.5, 0.3, 0.15}/0.95: 0.526 + 0.316 >= 0.75
    p.seed = 13;
    Sampler sampler(p);
    ExpectMatches(Histogram(sampler, logits, 100000), {0.0, 3.0 / 8.0, 0.0, 5.0 / 8.0});
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
    const std::vector<float> logits = LogsOf({0.5, 0.3, 0.15, 0.05});
    SamplingParams p;
    p.min_p = 0.5f;   // threshold 0.25: keeps 0.5 and 0.3
    p.seed = 14;
    Sampler sampler(p);
    const auto counts = Histogram(sampler, logits, 100000);
    EXPECT_EQ(counts[2] + counts[3], 0);
    ExpectMatches(counts, {5.0 / 8.0, 3.0 / 8.0, 0.0, 0.0});
}

TEST(Sampler, MinPOneKeepsOnlyTheMax) {
    const std::vector<float> logits = LogsOf({0.1, 0.6, 0.3});
    SamplingParams p;
    p.min_p = 1.0f;
    Sampler sampler(p);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(sampler.Sample(logits, {}), 1);
}

// ---------------------------------------------------------------------------
// Repetition penalty

TEST(Sampler, RepetitionPenaltySwitchesGreedyChoice) {
    const std::vector<float> logits = {3.0f, 1.0f, 2.0f};
    SamplingParams p;
    p.temperature = 0.0f;
    p.repetition_penalty = 1.0f;
    EXPECT_EQ(Sampler(p).Sample(logits, std::vector<int32_t>{0}), 0);
    p.repetition_penalty = 2.0f;   // 3 / 2 = 1.5 < 2
    EXPECT_EQ(Sampler(p).Sample(logits, std::vector<int32_t>{0}), 2);
}

TEST(Sampler, RepetitionPenaltyMultipliesNegativeLogits) {
    // -1 * 2 = -2 < -1.5, so id 1 wins. Dividing instead (-0.5) would keep id 0.
    const std::vector<float> logits = {-1.0f, -1.5f};
    SamplingParams p;
    p.temperature = 0.0f;
    p.repetition_penalty = 2.0f;
    EXPECT_EQ(Sampler(p).Sample(logits, std::vector<int32_t>{0}), 1);
}

TEST(Sampler, RepetitionPenaltyExactValuesByDistribution) {
    // By hand, penalty 2 on ids {0, 1}: [2, -1, 0.5, 0] -> [1, -2, 0.5, 0].
    // Id 0 appears twice in the history but is penalised once.
    const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 0.0f};
    SamplingParams p;
    p.repetition_penalty = 2.0f;
    p.seed = 15;
    Sampler sampler(p);
    const std::vector<int32_t> history = {0, 1, 0};
    ExpectMatches(Histogram(sampler, logits, 200000, history), Softmax({1.0f, -2.0f, 0.5f, 0.0f}));
}

TEST(Sampler, RepetitionWindowLimitsHistory) {
    const std::vector<float> logits = {2.0f, 1.0f, 1.5f};
    const std::vector<int32_t> history = {0, 1};
    SamplingParams p;
    p.temperature = 0.0f;
    p.repetition_penalty = 4.0f;
    p.repetition_window = 1;   // only id 1: [2, 0.25, 1.5]
    EXPECT_EQ(Sampler(p).Sample(logits, history), 0);
    p.repetition_window = 2;   // ids {0, 1}: [0.5, 0.25, 1.5]
    EXPECT_EQ(Sampler(p).Sample(logits, history), 2);
    p.repetition_window = 0;   // all history
    EXPECT_EQ(Sampler(p).Sample(logits, history), 2);
    p.repetition_window = 100;   // longer than the history
    EXPECT_EQ(Sampler(p).Sample(logits, history), 2);
}

TEST(Sampler, RepetitionPenaltyIgnoresOutOfRangeIds) {
    const std::vector<float> logits = {1.0f, 0.0f, -1.0f};
    SamplingParams p;
    p.repetition_penalty = 3.0f;
    p.repetition_window = 0;
    p.seed = 16;
    Sampler sampler(p);
    const std::vector<int32_t> history = {-1, 3, 1 << 30};
    ExpectMatches(Histogram(sampler, logits, 100000, history), Softmax(logits));
}

// ---------------------------------------------------------------------------
// LogSoftmaxAt

TEST(LogSoftmaxAt, MatchesNaiveDoubleComputation) {
    std::vector<float> logits(300);
    Rng gen(17);
    for (float& x : logits) x = (gen.NextFloat() - 0.5f) * 10.0f;
    double sum = 0.0;
    for (float x : logits) sum += std::exp(static_cast<double>(x));
    for (int32_t id : {0, 1, 57, 299}) {
        const double expected = std::log(std::exp(static_cast<double>(logits[id])) / sum);
        EXPECT_NEAR(LogSoftmaxAt(logits, id), expected, 1e-5) << "id " << id;
    }
}

TEST(LogSoftmaxAt, StableForHugeLogits) {
    const std::vector<float> logits = {1e4f, 1e4f - 1.0f, 0.0f, -1e4f};
    // Closed form: logits[i] - 1e4 - log(1 + e^-1) (the other terms underflow).
    const double log_z = std::log1p(std::exp(-1.0));
    const double expected[] = {-log_z, -1.0 - log_z, -1e4 - log_z, -2e4 - log_z};
    for (int32_t id = 0; id < 4; ++id) {
        const float got = LogSoftmaxAt(logits, id);
        EXPECT_TRUE(std::isfinite(got)) << "id " << id;
        EXPECT_NEAR(got, expected[id], 1e-3 * std::max(1.0, std::abs(expected[id]))) << "id " << id;
    }
}

TEST(LogSoftmaxAt, ProbabilitiesSumToOne) {
    const std::vector<float> logits = {3.0f, -2.0f, 0.25f, 7.5f, -kInf};
    double total = 0.0;
    for (int32_t id = 0; id < 5; ++id) total += std::exp(static_cast<double>(LogSoftmaxAt(logits, id)));
    EXPECT_NEAR(total, 1.0, 1e-6);
    EXPECT_EQ(LogSoftmaxAt(logits, 4), -kInf);
}

// ---------------------------------------------------------------------------
// Degenerate rows

TEST(Sampler, NeverReturnsImpossibleOrOutOfRangeIds) {
    // All -inf except one id, in several positions (first, middle, last),
    // under every filter combination: that id is the only possible answer.
    constexpr int kVocab = 16;
    struct Config {
        float temperature;
        int32_t top_k;
        float top_p;
        float min_p;
    };
    const Config configs[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 3, 1.0f, 0.0f}, {1.0f, 0, 0.5f, 0.0f},
                              {1.0f, 0, 1.0f, 0.2f},  {2.0f, 5, 0.9f, 0.1f}, {1.0f, 32, 0.99f, 0.0f},
                              {0.0f, 0, 1.0f, 0.0f}};
    for (int32_t live : {0, 7, kVocab - 1}) {
        std::vector<float> logits(kVocab, -kInf);
        logits[live] = -3.0f;
        for (const Config& c : configs) {
            SamplingParams p;
            p.temperature = c.temperature;
            p.top_k = c.top_k;
            p.top_p = c.top_p;
            p.min_p = c.min_p;
            p.seed = 100 + live;
            Sampler sampler(p);
            for (int i = 0; i < 200; ++i) ASSERT_EQ(sampler.Sample(logits, {}), live);
        }
    }
}

TEST(Sampler, AllNegativeInfinityOrNaNStaysInRange) {
    SamplingParams p;
    p.seed = 18;
    Sampler sampler(p);
    const std::vector<float> all_inf(10, -kInf);
    const std::vector<float> all_nan(10, kNaN);
    for (int i = 0; i < 20; ++i) {
        const int32_t a = sampler.Sample(all_inf, {});
        const int32_t b = sampler.Sample(all_nan, {});
        EXPECT_TRUE(a >= 0 && a < 10) << a;
        EXPECT_TRUE(b >= 0 && b < 10) << b;
    }
    // A NaN logit is treated as impossible, not as a candidate.
    const std::vector<float> some_nan = {kNaN, 0.0f, kNaN, 1.0f};
    const auto counts = Histogram(sampler, some_nan, 50000);
    EXPECT_EQ(counts[0] + counts[2], 0);
    ExpectMatches(counts, {0.0, Softmax({0.0f, 1.0f})[0], 0.0, Softmax({0.0f, 1.0f})[1]});
}

TEST(Sampler, LargeVocabularyWithTopKAndTopP) {
    // Smoke test at a real vocabulary size with the usual chat settings.
    std::vector<float> logits(128000);
    Rng gen(19);
    for (float& x : logits) x = gen.NextFloat() * 10.0f - 5.0f;
    logits[4242] = 12.0f;
    SamplingParams p;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.repetition_penalty = 1.1f;
    p.seed = 20;
    Sampler sampler(p);
    std::vector<int32_t> history;
    for (int i = 0; i < 50; ++i) {
        const int32_t id = sampler.Sample(logits, history);
        ASSERT_GE(id, 0);
        ASSERT_LT(id, 128000);
        history.push_back(id);
    }
}

TEST(Sampler, NoAllocationAfterFirstCall) {
    std::vector<float> logits(32000);
    Rng gen(23);
    for (float& x : logits) x = gen.NextFloat() * 8.0f;
    std::vector<int32_t> history(100);
    for (int32_t& id : history) id = static_cast<int32_t>(gen.NextU64() % logits.size());

    const SamplingParams configs[] = {
        {1.0f, 0, 1.0f, 0.0f, 1.0f, 64, 1},  {0.8f, 40, 1.0f, 0.0f, 1.1f, 64, 2},
        {1.0f, 0, 0.9f, 0.0f, 1.1f, 0, 3},   {1.0f, 50, 0.95f, 0.05f, 1.3f, 32, 4},
        {0.7f, 0, 1.0f, 0.05f, 1.0f, 64, 5}, {0.0f, 0, 1.0f, 0.0f, 1.2f, 64, 6},
    };
    for (const SamplingParams& p : configs) {
        Sampler sampler(p);
        sampler.Sample(logits, history);   // first call sizes the scratch buffers
        const long before = g_allocations.load();
        for (int i = 0; i < 20; ++i) sampler.Sample(logits, history);
        EXPECT_EQ(g_allocations.load() - before, 0) << "top_k " << p.top_k << " top_p " << p.top_p;
    }
}

// ---------------------------------------------------------------------------
// A grammar's mask (SampleAllowed)

// A mask over `vocab` ids with each id allowed with probability `density`
// (at least one id allowed).
std::vector<uint64_t> RandomMask(size_t vocab, double density, uint64_t seed) {
    std::vector<uint64_t> words((vocab + 63) / 64, 0);
    Rng gen(seed);
    bool any = false;
    for (size_t id = 0; id < vocab; ++id) {
        if (gen.NextFloat() < density) {
            words[id / 64] |= uint64_t{1} << (id % 64);
            any = true;
        }
    }
    if (!any) words[0] |= 1;
    return words;
}

bool Allowed(const std::vector<uint64_t>& mask, size_t id) { return (mask[id / 64] >> (id % 64)) & 1; }

// The naive expectation: the logits with every forbidden id at -inf.
std::vector<float> Forbidden(std::vector<float> logits, const std::vector<uint64_t>& mask) {
    for (size_t id = 0; id < logits.size(); ++id) {
        if (!Allowed(mask, id)) logits[id] = -kInf;
    }
    return logits;
}

// Every combination of filters the engine passes through.
const SamplingParams kMaskConfigs[] = {
    {1.0f, 0, 1.0f, 0.0f, 1.0f, 64, 0},    {0.0f, 0, 1.0f, 0.0f, 1.0f, 64, 0},
    {0.7f, 5, 1.0f, 0.0f, 1.0f, 64, 0},    {1.0f, 0, 0.8f, 0.0f, 1.0f, 64, 0},
    {1.3f, 0, 1.0f, 0.1f, 1.0f, 64, 0},    {1.0f, 40, 0.9f, 0.05f, 1.2f, 16, 0},
    {0.9f, 0, 0.95f, 0.02f, 1.1f, 0, 0},   {0.0f, 0, 1.0f, 0.0f, 1.5f, 8, 0},
    {1.0f, 500, 1.0f, 0.0f, 1.0f, 64, 0},  // top-k larger than the allowed set
};

TEST(SamplerMask, ForbiddenIdsAreNeverDrawnUnderAnyFilterAndSeed) {
    constexpr size_t kVocab = 300;
    std::vector<float> logits(kVocab);
    Rng gen(31);
    for (float& x : logits) x = gen.NextFloat() * 6.0f - 3.0f;
    // The best logits are forbidden: an unmasked sampler would pick them often.
    std::vector<uint64_t> mask = RandomMask(kVocab, 0.1, 32);
    for (size_t id = 0; id < kVocab; id += 7) {
        if (!Allowed(mask, id)) logits[id] = 20.0f;
    }
    std::vector<int32_t> history;
    for (const SamplingParams& base : kMaskConfigs) {
        for (uint64_t seed = 0; seed < 40; ++seed) {
            SamplingParams p = base;
            p.seed = seed;
            Sampler sampler(p);
            for (int i = 0; i < 25; ++i) {
                const int32_t id = sampler.SampleAllowed(logits, history, mask);
                ASSERT_GE(id, 0);
                ASSERT_LT(id, static_cast<int32_t>(kVocab));
                ASSERT_TRUE(Allowed(mask, static_cast<size_t>(id)))
                    << "forbidden id " << id << " drawn, top_k " << p.top_k << " top_p " << p.top_p << " seed " << seed;
                history.push_back(id);
            }
            history.clear();
        }
    }
}

TEST(SamplerMask, DrawsWhatTheUnmaskedSamplerDrawsWithForbiddenIdsAtMinusInfinity) {
    // Same seed, same draw: the mask is exactly "forbidden logits are -inf"
    // put before every filter, whatever the filters and the penalty do.
    constexpr size_t kVocab = 1000;
    for (double density : {0.003, 0.05, 0.5, 1.0}) {
        std::vector<float> logits(kVocab);
        Rng gen(static_cast<uint64_t>(density * 1000) + 1);
        for (float& x : logits) x = gen.NextFloat() * 10.0f - 5.0f;
        const std::vector<uint64_t> mask = RandomMask(kVocab, density, 77);
        const std::vector<float> naive = Forbidden(logits, mask);
        for (const SamplingParams& base : kMaskConfigs) {
            for (uint64_t seed = 0; seed < 8; ++seed) {
                SamplingParams p = base;
                p.seed = seed;
                Sampler masked(p), reference(p);
                std::vector<int32_t> history;
                for (int i = 0; i < 20; ++i) {
                    const int32_t want = reference.Sample(naive, history);
                    ASSERT_EQ(masked.SampleAllowed(logits, history, mask), want)
                        << "density " << density << " top_k " << p.top_k << " top_p " << p.top_p << " min_p "
                        << p.min_p << " seed " << seed << " draw " << i;
                    history.push_back(want);
                }
            }
        }
    }
}

TEST(SamplerMask, FrequenciesMatchTheSoftmaxOverTheAllowedIds) {
    const std::vector<float> logits = {2.0f, 0.5f, 3.0f, 1.0f, -1.0f, 0.0f};
    const std::vector<uint64_t> mask = {0b110010};   // ids 1, 4, 5
    SamplingParams p;
    p.temperature = 0.8f;
    p.seed = 5;
    Sampler sampler(p);
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < 40000; ++i) ++counts[sampler.SampleAllowed(logits, {}, mask)];
    const std::vector<double> allowed = Softmax({0.5f, -1.0f, 0.0f}, 0.8);
    ExpectMatches(counts, {0.0, allowed[0], 0.0, 0.0, allowed[1], allowed[2]});
}

TEST(SamplerMask, GreedyPicksTheBestAllowedId) {
    SamplingParams p;
    p.temperature = 0.0f;
    Sampler sampler(p);
    const std::vector<float> logits = {9.0f, 1.0f, 7.0f, 3.0f, 7.0f, 8.5f};
    EXPECT_EQ(sampler.SampleAllowed(logits, {}, std::vector<uint64_t>{0b011110}), 2) << "ties: the lower id";
    EXPECT_EQ(sampler.SampleAllowed(logits, {}, std::vector<uint64_t>{0b001010}), 3);
    EXPECT_EQ(sampler.SampleAllowed(logits, {}, std::vector<uint64_t>{0b111111}), 0);
    // Allowed ids whose logits are all -inf: the lowest allowed id, never a
    // forbidden one (SampleAllowed reads NaN as -inf).
    const std::vector<float> dead = {5.0f, -kInf, kNaN, -kInf};
    EXPECT_EQ(sampler.SampleAllowed(dead, {}, std::vector<uint64_t>{0b1110}), 1);
    // As ArgMax: a number (even -inf) beats NaN; all NaN: the lowest allowed.
    EXPECT_EQ(ArgMaxAllowed(dead, std::vector<uint64_t>{0b1100}), 3);
    EXPECT_EQ(ArgMaxAllowed(std::vector<float>{kNaN, kNaN, kNaN}, std::vector<uint64_t>{0b110}), 1);
    // Across a word boundary of the mask.
    std::vector<float> wide(130, 0.0f);
    wide[3] = 4.0f;
    wide[100] = 2.0f;
    wide[129] = 3.0f;
    EXPECT_EQ(sampler.SampleAllowed(wide, {}, std::vector<uint64_t>{0, uint64_t{1} << 36, 2}), 129);
}

TEST(SamplerMask, NoAllowedIdGivesMinusOne) {
    const std::vector<float> logits(70, 1.0f);
    for (float t : {0.0f, 1.0f}) {
        SamplingParams p;
        p.temperature = t;
        Sampler sampler(p);
        EXPECT_EQ(sampler.SampleAllowed(logits, {}, std::vector<uint64_t>{0, 0}), -1);
        // Ids past the mask, and bits past the vocabulary, are not allowed.
        EXPECT_EQ(sampler.SampleAllowed(logits, {}, std::vector<uint64_t>{0}), -1);
        EXPECT_EQ(sampler.SampleAllowed(logits, {}, std::vector<uint64_t>{0, uint64_t{1} << 10}), -1);
        EXPECT_EQ(sampler.SampleAllowed(logits, {}, std::vector<uint64_t>{0, (uint64_t{1} << 10) | 2}), 65);
    }
}

TEST(SamplerMask, NoAllocationAfterFirstCall) {
    std::vector<float> logits(32000);
    Rng gen(29);
    for (float& x : logits) x = gen.NextFloat() * 8.0f;
    std::vector<int32_t> history(100);
    for (int32_t& id : history) id = static_cast<int32_t>(gen.NextU64() % logits.size());
    const std::vector<uint64_t> mask = RandomMask(logits.size(), 0.2, 30);
    for (SamplingParams p : kMaskConfigs) {
        Sampler sampler(p);
        sampler.SampleAllowed(logits, history, mask);   // first call sizes the scratch buffers
        const long before = g_allocations.load();
        for (int i = 0; i < 20; ++i) sampler.SampleAllowed(logits, history, mask);
        EXPECT_EQ(g_allocations.load() - before, 0) << "top_k " << p.top_k << " top_p " << p.top_p;
    }
}

}  // namespace
}  // namespace prepack
