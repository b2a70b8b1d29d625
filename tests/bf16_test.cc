// bf16 weights: the rounding itself, the linear layer on every path (few-row
// kernel, widened panels, oneDNN's bf16 matmul) and the f32 few-row kernel
// against a naive double-precision product, then whole models: the bf16
// forward pass against the reference forward on the same rounded weights,
// and stories260K in bf16 against f32 (next-token agreement, logit error).
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/forward/cpu_pass.h"
#include "core/model/reference.h"
#include "core/request/sampler.h"
#include "kernels/cpu/bf16.h"
#include "kernels/cpu/gemm.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using cpu::Bf16ToF32;
using cpu::F32ToBf16;

TEST(Bf16, RoundsToNearestEven) {
    EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
    EXPECT_EQ(F32ToBf16(-2.0f), 0xc000);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
    EXPECT_EQ(F32ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up to even.
    EXPECT_EQ(F32ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
    // Just above the halfway point rounds up.
    EXPECT_EQ(F32ToBf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
    EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(std::numeric_limits<float>::quiet_NaN()))));
    // The largest finite f32 rounds to infinity, as IEEE rounding does.
    EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::max()), 0x7f80);
    // Every bf16 value survives the round trip.
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = Bf16ToF32(static_cast<uint16_t>(h));
        if (!std::isnan(f)) {
            ASSERT_EQ(F32ToBf16(f), h);
        }
    }
}

struct Product {
    std::vector<float> x, y;
    std::vector<float> w32;      // f32 weights (the bf16 values, widened, for the bf16 case)
    std::vector<uint16_t> w16;
};

Product RandomProduct(int64_t m, int64_t n, int64_t k, uint64_t seed) {
    Rng rng(seed);
    Product p;
    p.x.resize(m * k);
    p.y.resize(m * n);
    p.w16.resize(n * k);
    p.w32.resize(n * k);
    for (float& v : p.x) v = rng.NextFloat() * 2 - 1;
    for (float& v : p.y) v = rng.NextFloat() * 2 - 1;
    for (int64_t i = 0; i < n * k; ++i) {
        p.w16[i] = F32ToBf16(rng.NextFloat() * 2 - 1);
        p.w32[i] = Bf16ToF32(p.w16[i]);
    }
    return p;
}

// y (+)= x w^T in double precision.
std::vector<double> Naive(const Product& p, int64_t m, int64_t n, int64_t k, bool accumulate) {
    std::vector<double> y(m * n);
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double s = accumulate ? p.y[i * n + j] : 0.0;
            for (int64_t t = 0; t < k; ++t) s += double(p.x[i * k + t]) * p.w32[j * k + t];
            y[i * n + j] = s;
        }
    }
    return y;
}

// Row counts on both sides of the few-row threshold (16), odd output counts
// (the kernel takes 4 at a time) and inner sizes that are not multiples of 8.
void CheckLinear(bool bf16, double tol) {
    for (int64_t m : {1, 2, 3, 16, 17, 40}) {
        for (int64_t n : {1, 5, 64, 130}) {
            for (int64_t k : {3, 8, 77, 256}) {
                for (bool accumulate : {false, true}) {
                    Product p = RandomProduct(m, n, k, m * 1000 + n * 10 + k);
                    const std::vector<double> want = Naive(p, m, n, k, accumulate);
                    const cpu::Matrix w = bf16 ? cpu::Matrix{nullptr, p.w16.data()} : cpu::Matrix{p.w32.data(), nullptr};
                    cpu::Linear(p.x.data(), w, p.y.data(), m, n, k, accumulate);
                    for (int64_t i = 0; i < m * n; ++i) {
                        ASSERT_NEAR(p.y[i], want[i], tol * std::sqrt(double(k)))
                            << "m " << m << " n " << n << " k " << k << " accumulate " << accumulate;
                    }
                }
            }
        }
    }
}

TEST(Bf16Linear, F32WeightsMatchNaiveProduct) { CheckLinear(false, 1e-5); }

TEST(Bf16Linear, Bf16WeightsMatchNaiveProduct) {
    // Widened bf16 weights are exact, so this is f32 accuracy too (the native
    // oneDNN path rounds activations to bf16: checked separately below).
    const std::string before = cpu::Bf16GemmPath();
    cpu::SetBf16GemmPath("widen");
    CheckLinear(true, 1e-5);
    cpu::SetBf16GemmPath(before.c_str());
}

TEST(Bf16Linear, OneDnnBf16Path) {
    ASSERT_TRUE(cpu::SetBf16GemmPath("onednn"));
    EXPECT_FALSE(cpu::SetBf16GemmPath("fast"));
    const int64_t m = 40, n = 96, k = 256;
    Product p = RandomProduct(m, n, k, 3);
    std::vector<double> want = Naive(p, m, n, k, true);
    cpu::Linear(p.x.data(), cpu::Matrix{nullptr, p.w16.data()}, p.y.data(), m, n, k, true);
    if (std::string(cpu::Bf16GemmPath()) != "onednn") {
        // oneDNN refused the bf16 matmul on this CPU; Linear widened instead (and must still be right).
        for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(p.y[i], want[i], 1e-4);
        GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU (needs AVX-512 BF16 or AMX); the widening path ran";
    }
    cpu::SetBf16GemmPath(cpu::HasNativeBf16Gemm() ? "onednn" : "widen");
    // Activations rounded to bf16: relative error 2^-9 per product term.
    for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(p.y[i], want[i], 0.05) << i;
}

// GQA with 4 query heads per KV head, head_dim 8.
ModelConfig SmallGqaConfig() { return testing::SmallConfig(64, 8, 2, 3, 160, 300); }

// Logits of every position of `ids`, prefilled as one step through the
// optimised forward pass with a KV cache of `kv_dtype`.
std::vector<float> PrefillLogits(const Model& model, const std::vector<int32_t>& ids,
                                 cpu::DType kv_dtype = cpu::DType::kF32) {
    auto pool = KvBlockPool::Create(model.config(), 16, 4u << 20, kv_dtype);
    EXPECT_TRUE(pool.ok());
    ForwardPass fwd(model, **pool);
    BlockTable kv;
    EXPECT_TRUE(kv.Reserve(**pool, static_cast<int32_t>(ids.size())).ok());
    StepPlan plan;
    plan.Add(&kv, ids.data(), static_cast<int32_t>(ids.size()), 0, LogitsWanted::kAll);
    StepOutput out;
    EXPECT_TRUE(fwd.Run(plan, &out).ok());
    return std::vector<float>(out.logits.data(), out.logits.data() + out.logits.size());
}

TEST(Bf16Model, ForwardEqualsReferenceOnTheSameRoundedWeights) {
    // Widened weights: the arithmetic is the reference's (f32), so the
    // tolerance is f32's. (The native path rounds activations too.)
    const std::string path = cpu::Bf16GemmPath();
    cpu::SetBf16GemmPath("widen");
    auto model = Model::FromConfig(SmallGqaConfig(), 7, cpu::DType::kBf16);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ((*model)->weights().dtype, cpu::DType::kBf16);
    EXPECT_NE((*model)->weights().layers[0].wqkv.bf16, nullptr);
    std::vector<int32_t> ids;
    for (int i = 0; i < 40; ++i) ids.push_back((i * 37 + 11) % 300);
    const std::vector<float> got = PrefillLogits(**model, ids);
    ReferenceForward ref(**model);
    const int vocab = (*model)->config().vocab_size;
    for (size_t t = 0; t < ids.size(); ++t) {
        const std::vector<float>& want = ref.Step(ids[t]);
        EXPECT_LT(testing::MaxRelDiff(got.data() + t * vocab, want.data(), vocab), 2e-4) << "token " << t;
    }
    cpu::SetBf16GemmPath(path.c_str());
}

TEST(Bf16KvCache, ForwardStaysCloseToTheF32Reference) {
    // f32 weights, K/V rounded to bf16 as they are stored (relative error
    // 2^-9 each): prefill and then decode steps, which read the cache by
    // the prefill tile and the decode dot-product paths. Logits move by
    // ~3e-3 (relative to the largest); f32 KV stays below 2e-4.
    auto model = Model::FromConfig(SmallGqaConfig(), 7);
    ASSERT_TRUE(model.ok()) << model.status();
    auto pool = KvBlockPool::Create((*model)->config(), 16, 4u << 20, cpu::DType::kBf16);
    ASSERT_TRUE(pool.ok()) << pool.status();
    EXPECT_EQ((*pool)->bytes_per_block(), (*model)->config().KvBytesPerToken(cpu::DType::kBf16) * 16);
    EXPECT_EQ((*model)->config().KvBytesPerToken(cpu::DType::kBf16) * 2, (*model)->config().KvBytesPerToken());
    ForwardPass fwd(**model, **pool);
    ReferenceForward ref(**model);
    BlockTable kv;
    const int vocab = (*model)->config().vocab_size;
    std::vector<int32_t> ids;
    for (int i = 0; i < 40; ++i) ids.push_back((i * 37 + 11) % 300);
    for (int step = 0; step < 10; ++step) {
        const int32_t done = kv.num_tokens(), n = static_cast<int32_t>(ids.size()) - done;
        ASSERT_TRUE(kv.Reserve(**pool, done + n).ok());
        StepPlan plan;
        plan.Add(&kv, ids.data() + done, n, done, LogitsWanted::kAll);
        StepOutput out;
        ASSERT_TRUE(fwd.Run(plan, &out).ok());
        for (int32_t t = 0; t < n; ++t) {
            const std::vector<float>& want = ref.Step(ids[done + t]);
            EXPECT_LT(testing::MaxRelDiff(out.logits.data() + size_t(t) * vocab, want.data(), vocab), 1e-2)
                << "token " << done + t;
        }
        ids.push_back((step * 53 + 7) % 300);
    }
}

TEST(Bf16Model, HalvesTheMatrixBytes) {
    const ModelConfig c = SmallGqaConfig();
    const double ratio = double(WeightBytes(c, cpu::DType::kBf16)) / double(WeightBytes(c, cpu::DType::kF32));
    EXPECT_GT(ratio, 0.49);
    EXPECT_LT(ratio, 0.52);   // only the norm vectors stay f32
    EXPECT_EQ(ParseDType("bf16").value(), cpu::DType::kBf16);
    EXPECT_EQ(ParseDType("fp8").status().code(), absl::StatusCode::kInvalidArgument);
}

// stories260K, every position of every reference prompt and its greedy
// continuation (teacher-forced): bf16 weights pick the same next token as f32
// almost everywhere and move the logits little. Checked on the widening
// path (bf16 weights only) and, where the CPU has native bf16 GEMM, on
// oneDNN's path too (activations rounded as well: looser bounds).
class Bf16Stories : public ::testing::Test {
protected:
    void SetUp() override {
        PREPACK_REQUIRE_STORIES();
        const std::string path = testing::StoriesDir() + "/stories260K.gguf";
        auto f32 = Model::Load(path, cpu::DType::kF32);
        auto bf16 = Model::Load(path, cpu::DType::kBf16);
        ASSERT_TRUE(f32.ok() && bf16.ok());
        f32_ = std::move(*f32);
        bf16_ = std::move(*bf16);
        reference_ = nlohmann::json::parse(testing::ReadFile(testing::StoriesDir() + "/reference.json"));
    }

    // `model` with a KV cache of `kv_dtype` against f32 weights and KV.
    void ExpectClose(const Model& model, cpu::DType kv_dtype, const char* gemm_path, double min_agreement,
                     double max_logit_diff) {
        const std::string before = cpu::Bf16GemmPath();
        ASSERT_TRUE(cpu::SetBf16GemmPath(gemm_path));
        const int vocab = f32_->config().vocab_size;
        int same = 0, total = 0;
        double worst = 0.0;
        for (const auto& tc : reference_["cases"]) {
            std::vector<int32_t> ids = tc["prompt_ids"].get<std::vector<int32_t>>();
            for (int32_t id : tc["greedy_ids"].get<std::vector<int32_t>>()) ids.push_back(id);
            const std::vector<float> a = PrefillLogits(*f32_, ids), b = PrefillLogits(model, ids, kv_dtype);
            for (size_t t = 0; t < ids.size(); ++t) {
                const float* la = a.data() + t * vocab;
                const float* lb = b.data() + t * vocab;
                same += std::max_element(la, la + vocab) - la == std::max_element(lb, lb + vocab) - lb;
                ++total;
                for (int i = 0; i < vocab; ++i) worst = std::max(worst, std::fabs(double(la[i]) - lb[i]));
            }
        }
        cpu::SetBf16GemmPath(before.c_str());
        const double agreement = double(same) / total;
        std::printf("stories260K %s weights, %s KV (%s) vs f32: top-1 agreement %.4f over %d positions, "
                    "max |logit diff| %.4f\n",
                    cpu::DTypeName(model.weights().dtype), cpu::DTypeName(kv_dtype), gemm_path, agreement, total,
                    worst);
        EXPECT_GE(agreement, min_agreement);
        EXPECT_LT(worst, max_logit_diff);
    }

    std::unique_ptr<Model> f32_, bf16_;
    nlohmann::json reference_;
};

TEST_F(Bf16Stories, WidenedBf16WeightsAgreeWithF32) { ExpectClose(*bf16_, cpu::DType::kF32, "widen", 0.95, 0.5); }

TEST_F(Bf16Stories, Bf16KvCacheAgreesWithF32) { ExpectClose(*f32_, cpu::DType::kBf16, "widen", 0.95, 0.5); }

TEST_F(Bf16Stories, Bf16WeightsAndKvCacheAgreeWithF32) {
    ExpectClose(*bf16_, cpu::DType::kBf16, "widen", 0.95, 0.5);
}

TEST_F(Bf16Stories, NativeBf16GemmAgreesWithF32) {
    if (!cpu::HasNativeBf16Gemm()) GTEST_SKIP() << "no native bf16 GEMM on this CPU (AVX-512 BF16 or AMX)";
    ExpectClose(*bf16_, cpu::DType::kF32, "onednn", 0.90, 1.0);
}

}  // namespace
}  // namespace prepack
