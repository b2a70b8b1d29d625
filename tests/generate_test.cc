// Generation loop: input errors, KV exhaustion, seeds, stop strings.
#include <gtest/gtest.h>

#include "core/engine/generate.h"
#include "core/forward/cpu_pass.h"
#include "core/request/stop_strings.h"

namespace prepack {
namespace {

class GenerateTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto m = Model::Load("synthetic:tiny");
        ASSERT_TRUE(m.ok()) << m.status();
        model_ = std::move(*m);
        auto p = KvBlockPool::Create(model_->config(), 16, 64ull << 20);
        ASSERT_TRUE(p.ok());
        pool_ = std::move(*p);
        fwd_ = std::make_unique<ForwardPass>(*model_, *pool_);
    }
    absl::StatusOr<GenerateResult> Run(GenerateRequest r) { return Generate(*fwd_, r); }
    std::unique_ptr<Model> model_;
    std::unique_ptr<KvBlockPool> pool_;
    std::unique_ptr<ForwardPass> fwd_;
};

TEST_F(GenerateTest, InvalidRequestsAreRejectedWithTheProblemNamed) {
    GenerateRequest r;
    r.prompt = "";
    r.add_bos = false;   // an empty prompt without BOS is nothing to start from
    auto s = Run(r);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find("empty"), std::string::npos);
    r.add_bos = true;   // with BOS it is BOS alone, as in llama.cpp
    r.max_tokens = 2;
    s = Run(r);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->prompt_tokens, (std::vector<int32_t>{fwd_->model().tokenizer().bos_id()}));
    EXPECT_EQ(s->tokens.size(), 2u);

    r.prompt = "hello";
    r.sampling.top_k = -1;
    s = Run(r);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find("top_k"), std::string::npos);

    r.sampling = SamplingParams{};
    r.max_tokens = -3;
    EXPECT_EQ(Run(r).status().code(), absl::StatusCode::kInvalidArgument);

    r.max_tokens = 4;
    r.prompt_tokens = {1, 5, 512};   // vocab is 512
    s = Run(r);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find("512"), std::string::npos);

    r.prompt_tokens.assign(model_->config().max_context, 7);   // no room to generate
    s = Run(r);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find("context"), std::string::npos);

    r.prompt_tokens.clear();
    r.prompt = std::string("bad \xff utf-8");
    EXPECT_EQ(Run(r).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(pool_->num_free(), pool_->num_blocks());
}

TEST_F(GenerateTest, KvExhaustionIsReportedAndFreesEverything) {
    auto small = KvBlockPool::Create(model_->config(), 16, model_->config().KvBytesPerToken() * 32);
    ASSERT_TRUE(small.ok());
    ForwardPass fwd(*model_, **small);
    GenerateRequest r;
    r.prompt_tokens.assign(100, 9);
    auto s = Generate(fwd, r);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ((*small)->num_free(), (*small)->num_blocks());
}

TEST_F(GenerateTest, SameSeedSameTokensDifferentSeedDifferentTokens) {
    GenerateRequest r;
    r.prompt = "The cat";
    r.max_tokens = 24;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 11;
    auto a = Run(r), b = Run(r);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->tokens, b->tokens);
    r.sampling.seed = 12;
    auto c = Run(r);
    ASSERT_TRUE(c.ok());
    EXPECT_NE(a->tokens, c->tokens);
}

TEST_F(GenerateTest, MaxTokensAndContextEndWithLength) {
    GenerateRequest r;
    r.prompt = "abc";
    r.max_tokens = 5;
    r.sampling.temperature = 0.0f;
    auto a = Run(r);
    ASSERT_TRUE(a.ok());
    EXPECT_LE(a->tokens.size(), 5u);
    if (a->finish_reason == FinishReason::kLength) {
        EXPECT_EQ(a->tokens.size(), 5u);
    }
    // A prompt one short of the context leaves room for exactly one token.
    r.prompt.clear();
    r.prompt_tokens.assign(model_->config().max_context - 1, 300);
    r.max_tokens = 10;
    auto b = Run(r);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->tokens.size(), 1u);
    EXPECT_EQ(pool_->num_free(), pool_->num_blocks());
}

TEST(StopMatcher, HoldsBackPossibleStartsAndCutsAtTheStop) {
    StopMatcher m({"END", "xyz"});
    EXPECT_EQ(m.Push("hello E"), "hello ");   // "E" may start "END"
    EXPECT_EQ(m.Push("N"), "");
    EXPECT_EQ(m.Push("Dless"), "");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(m.Push("more"), "");

    StopMatcher n({"END"});
    EXPECT_EQ(n.Push("EN"), "");
    EXPECT_EQ(n.Push("X"), "ENX");   // not a stop after all
    EXPECT_EQ(n.Push("ab"), "ab");
    EXPECT_EQ(n.Push("E"), "");
    EXPECT_EQ(n.Flush(), "E");
    EXPECT_FALSE(n.stopped());

    StopMatcher earliest({"bc", "abcd"});
    EXPECT_EQ(earliest.Push("xabcd"), "x");   // "abcd" starts first
    StopMatcher none({});
    EXPECT_EQ(none.Push("anything"), "anything");
}

}  // namespace
}  // namespace prepack
