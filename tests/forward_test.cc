// The optimised forward pass against the naive reference forward, on random
// synthetic models of several shapes: full prefill, chunked prefill, prefill
// then decode, and many sequences in one ragged step.
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/forward/cpu_pass.h"
#include "core/model/reference.h"
#include "core/request/sampler.h"
#include "tests/family_configs.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using testing::MaxRelDiff;
using testing::SmallConfig;

constexpr double kTol = 2e-4;

struct Shape {
    const char* name;
    ModelConfig config;
};

// The optional parts of the model description (model_config.h), each on
// its own and all together as Qwen3 has them.
ModelConfig With(ModelConfig c, void (*edit)(ModelConfig&)) {
    edit(c);
    return c;
}

std::vector<Shape> Shapes() {
    std::vector<Shape> shapes = {
        {"mha", SmallConfig(64, 4, 4, 2, 96, 300)},
        {"gqa2", SmallConfig(64, 8, 4, 3, 128, 320)},
        {"gqa4", SmallConfig(128, 8, 2, 2, 160, 400)},
        {"mqa", SmallConfig(96, 6, 1, 2, 200, 290)},
        {"partial_rope", SmallConfig(64, 2, 1, 2, 64, 280, 16)},
        {"qkv_bias", With(SmallConfig(64, 8, 4, 2, 128, 300), [](ModelConfig& c) { c.qkv_bias = true; })},
        {"neox_rope", With(SmallConfig(64, 4, 2, 2, 96, 300), [](ModelConfig& c) { c.rope_style = RopeStyle::kNeox; })},
        {"rope_freqs_and_scale", With(SmallConfig(64, 4, 2, 2, 96, 300), [](ModelConfig& c) {
             c.rope_freqs = true;
             c.rope_scale = 4.0f;
         })},
        {"qwen3_like", With(SmallConfig(64, 4, 2, 2, 96, 300), [](ModelConfig& c) {
             c.head_dim = 24;   // not dim / heads: Q is 96 wide, K and V 48
             c.rope_dim = 24;
             c.qk_norm = true;
             c.rope_style = RopeStyle::kNeox;
             c.tied_output = true;
         })},
        {"qwen2_like", With(SmallConfig(64, 8, 2, 2, 128, 300), [](ModelConfig& c) {
             c.qkv_bias = true;
             c.rope_style = RopeStyle::kNeox;
             c.tied_output = true;
             c.norm_eps = 1e-6f;
         })},
    };
    // Gemma 2/3, Phi-4-mini, Granite (tests/family_configs.h).
    for (const testing::NamedConfig& f : testing::FamilyConfigs()) shapes.push_back({f.name, f.config});
    return shapes;
}

std::vector<int32_t> RandomTokens(int n, int vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> t(n);
    for (int& x : t) x = static_cast<int32_t>(rng.NextU64() % vocab);
    return t;
}

// Logits of the reference forward after each of `tokens`.
std::vector<std::vector<float>> ReferenceLogits(const Model& m, const std::vector<int32_t>& tokens) {
    ReferenceForward ref(m);
    std::vector<std::vector<float>> out;
    for (int32_t t : tokens) out.push_back(ref.Step(t));
    return out;
}

class ForwardTest : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override {
        shape_ = Shapes()[GetParam()];
        auto m = Model::FromConfig(shape_.config, 7 + GetParam());
        ASSERT_TRUE(m.ok()) << m.status();
        model_ = std::move(*m);
    }
    std::unique_ptr<KvBlockPool> Pool(int block_size) {
        auto p = KvBlockPool::Create(model_->config(), block_size, 64ull << 20);
        EXPECT_TRUE(p.ok()) << p.status();
        return std::move(*p);
    }
    Shape shape_;
    std::unique_ptr<Model> model_;
};

TEST_P(ForwardTest, PrefillMatchesReferenceAtEveryPosition) {
    const int vocab = model_->config().vocab_size;
    for (int block_size : {1, 3, 16}) {
        for (int n : {1, 2, 7, 33, 100}) {
            auto pool = Pool(block_size);
            ForwardPass fwd(*model_, *pool);
            const std::vector<int32_t> tokens = RandomTokens(n, vocab, 100 + n);
            const auto want = ReferenceLogits(*model_, tokens);
            BlockTable kv;
            ASSERT_TRUE(kv.Reserve(*pool, n).ok());
            StepPlan plan;
            plan.Add(&kv, tokens.data(), n, 0, LogitsWanted::kAll);
            StepOutput out;
            ASSERT_TRUE(fwd.Run(plan, &out).ok());
            ASSERT_EQ(out.rows, n);
            EXPECT_EQ(kv.num_tokens(), n);
            for (int i = 0; i < n; ++i) {
                EXPECT_LT(MaxRelDiff(out.logits.data() + size_t(i) * vocab, want[i].data(), vocab), kTol)
                    << shape_.name << " block " << block_size << " n " << n << " row " << i;
            }
        }
    }
}

TEST_P(ForwardTest, ChunkedPrefillThenDecodeMatchesReference) {
    const int vocab = model_->config().vocab_size;
    const int n = 60;
    const std::vector<int32_t> tokens = RandomTokens(n, vocab, 5);
    const auto want = ReferenceLogits(*model_, tokens);
    auto pool = Pool(4);
    ForwardPass fwd(*model_, *pool);
    BlockTable kv;
    StepOutput out;
    // Prefill 0..36 in chunks of 9, then decode one token at a time.
    int pos = 0;
    for (int chunk = 9; pos < n;) {
        const int len = pos < 36 ? std::min(chunk, 36 - pos) : 1;
        ASSERT_TRUE(kv.Reserve(*pool, pos + len).ok());
        StepPlan plan;
        plan.Add(&kv, tokens.data() + pos, len, pos, LogitsWanted::kLast);
        ASSERT_TRUE(fwd.Run(plan, &out).ok());
        pos += len;
        EXPECT_LT(MaxRelDiff(out.logits.data(), want[pos - 1].data(), vocab), kTol)
            << shape_.name << " after " << pos << " tokens";
    }
}

TEST_P(ForwardTest, RaggedBatchEqualsSequencesAlone) {
    const int vocab = model_->config().vocab_size;
    const std::vector<int> lengths = {5, 1, 40, 17, 3};
    auto pool = Pool(8);
    ForwardPass fwd(*model_, *pool);
    std::vector<BlockTable> kv(lengths.size());
    std::vector<std::vector<int32_t>> prompts;
    StepPlan plan;
    for (size_t s = 0; s < lengths.size(); ++s) {
        prompts.push_back(RandomTokens(lengths[s], vocab, 900 + s));
        ASSERT_TRUE(kv[s].Reserve(*pool, lengths[s] + 1).ok());
    }
    for (size_t s = 0; s < lengths.size(); ++s) plan.Add(&kv[s], prompts[s].data(), lengths[s], 0);
    StepOutput out;
    ASSERT_TRUE(fwd.Run(plan, &out).ok());
    for (size_t s = 0; s < lengths.size(); ++s) {
        const auto want = ReferenceLogits(*model_, prompts[s]);
        EXPECT_LT(MaxRelDiff(out.logits.data() + size_t(out.first_row[s]) * vocab, want.back().data(), vocab), kTol)
            << shape_.name << " sequence " << s;
    }
    // One decode step for all sequences together (continuous batching).
    StepPlan decode;
    std::vector<int32_t> next(lengths.size());
    for (size_t s = 0; s < lengths.size(); ++s) {
        next[s] = static_cast<int32_t>((s * 31 + 7) % vocab);
        decode.Add(&kv[s], &next[s], 1, lengths[s]);
    }
    ASSERT_TRUE(fwd.Run(decode, &out).ok());
    for (size_t s = 0; s < lengths.size(); ++s) {
        std::vector<int32_t> full = prompts[s];
        full.push_back(next[s]);
        const auto want = ReferenceLogits(*model_, full);
        EXPECT_LT(MaxRelDiff(out.logits.data() + size_t(out.first_row[s]) * vocab, want.back().data(), vocab), kTol)
            << shape_.name << " decode of sequence " << s;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ForwardTest, ::testing::Range(0, static_cast<int>(Shapes().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return std::string(Shapes()[info.param].name); });

TEST(ForwardValidation, RejectsBadPlans) {
    auto m = Model::FromConfig(SmallConfig(32, 2, 1, 1, 48, 270), 1);
    ASSERT_TRUE(m.ok());
    auto pool = KvBlockPool::Create((*m)->config(), 4, 1 << 20);
    ASSERT_TRUE(pool.ok());
    ForwardPass fwd(**m, **pool);
    StepOutput out;
    BlockTable kv;
    ASSERT_TRUE(kv.Reserve(**pool, 4).ok());
    const int32_t bad_id = 270, ok_id = 5;
    StepPlan p1;
    p1.Add(&kv, &bad_id, 1, 0);
    EXPECT_EQ(fwd.Run(p1, &out).code(), absl::StatusCode::kInvalidArgument);
    StepPlan p2;
    p2.Add(&kv, &ok_id, 1, 512);   // position past the context
    EXPECT_EQ(fwd.Run(p2, &out).code(), absl::StatusCode::kInvalidArgument);
    const std::vector<int32_t> five(5, ok_id);
    StepPlan p3;
    p3.Add(&kv, five.data(), 5, 0);   // only 4 slots reserved
    EXPECT_EQ(fwd.Run(p3, &out).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(kv.num_tokens(), 0);
    EXPECT_EQ(fwd.Run(StepPlan{}, &out).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SyntheticModels, ActivationsStayFinite) {
    for (const char* name : {"tiny", "110m"}) {
        auto m = Model::Load(std::string("synthetic:") + name);
        ASSERT_TRUE(m.ok()) << m.status();
        auto pool = KvBlockPool::Create((*m)->config(), 16, 64ull << 20);
        ASSERT_TRUE(pool.ok());
        ForwardPass fwd(**m, **pool);
        const std::vector<int32_t> tokens = RandomTokens(24, (*m)->config().vocab_size, 3);
        BlockTable kv;
        ASSERT_TRUE(kv.Reserve(**pool, 24).ok());
        StepPlan plan;
        plan.Add(&kv, tokens.data(), 24, 0, LogitsWanted::kAll);
        StepOutput out;
        ASSERT_TRUE(fwd.Run(plan, &out).ok());
        float lo = 1e30f, hi = -1e30f;
        for (size_t i = 0; i < size_t(out.rows) * (*m)->config().vocab_size; ++i) {
            ASSERT_TRUE(std::isfinite(out.logits[i])) << name;
            lo = std::min(lo, out.logits[i]);
            hi = std::max(hi, out.logits[i]);
        }
        // Logits neither collapse to a constant nor explode.
        EXPECT_GT(hi - lo, 1.0f) << name;
        EXPECT_LT(hi - lo, 1e4f) << name;
    }
}

}  // namespace
}  // namespace prepack
