// The real stories260K model against reference outputs of llama2.c (fp32),
// cross-checked with llama.cpp: prompt ids, top-5 logits after the prompt,
// and 48 greedy tokens, through the library and through the CLI.
#include <cstdio>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/forward/cpu_pass.h"
#include "core/engine/generate.h"
#include "core/model/reference.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

class StoriesTest : public ::testing::Test {
protected:
    void SetUp() override {
        PREPACK_REQUIRE_STORIES();
        reference_ = nlohmann::json::parse(testing::ReadFile(testing::StoriesDir() + "/reference.json"));
        auto m = Model::Load(testing::StoriesDir() + "/stories260K.gguf");
        ASSERT_TRUE(m.ok()) << m.status();
        model_ = std::move(*m);
        auto p = KvBlockPool::Create(model_->config(), 16, 16ull << 20);
        ASSERT_TRUE(p.ok()) << p.status();
        pool_ = std::move(*p);
    }
    nlohmann::json reference_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<KvBlockPool> pool_;
};

// Checks that `logits` has the reference's top-5 ids, each within 1e-3.
void ExpectTop5(const float* logits, int vocab, const nlohmann::json& top5, const std::string& what) {
    std::vector<int> order(vocab);
    for (int i = 0; i < vocab; ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b]; });
    for (int i = 0; i < 5; ++i) {
        const int id = top5[i][0];
        const double value = top5[i][1];
        EXPECT_EQ(order[i], id) << what << " rank " << i;
        EXPECT_NEAR(logits[id], value, 1e-3) << what << " id " << id;
    }
}

TEST_F(StoriesTest, MetadataDescribesTheModel) {
    const ModelConfig& c = model_->config();
    EXPECT_EQ(c.dim, 64);
    EXPECT_EQ(c.hidden_dim, 172);
    EXPECT_EQ(c.n_layers, 5);
    EXPECT_EQ(c.n_heads, 8);
    EXPECT_EQ(c.n_kv_heads, 4);
    EXPECT_EQ(c.vocab_size, 512);
    EXPECT_EQ(c.max_context, 512);
}

TEST_F(StoriesTest, PromptIdsMatch) {
    for (const auto& tc : reference_["cases"]) {
        auto ids = model_->tokenizer().Encode(tc["prompt"].get<std::string>(), true);
        ASSERT_TRUE(ids.ok());
        EXPECT_EQ(*ids, tc["prompt_ids"].get<std::vector<int32_t>>()) << tc["name"];
    }
}

TEST_F(StoriesTest, Top5LogitsAfterPromptMatch) {
    const int vocab = model_->config().vocab_size;
    ForwardPass fwd(*model_, *pool_);
    for (const auto& tc : reference_["cases"]) {
        const auto ids = tc["prompt_ids"].get<std::vector<int32_t>>();
        BlockTable kv;
        ASSERT_TRUE(kv.Reserve(*pool_, static_cast<int32_t>(ids.size())).ok());
        StepPlan plan;
        plan.Add(&kv, ids.data(), static_cast<int32_t>(ids.size()), 0);
        StepOutput out;
        ASSERT_TRUE(fwd.Run(plan, &out).ok());
        ExpectTop5(out.logits.data(), vocab, tc["top5_after_prompt"], tc["name"].get<std::string>() + " (forward)");

        ReferenceForward ref(*model_);
        const std::vector<float>* logits = nullptr;
        for (int32_t id : ids) logits = &ref.Step(id);
        ExpectTop5(logits->data(), vocab, tc["top5_after_prompt"], tc["name"].get<std::string>() + " (reference)");
    }
}

TEST_F(StoriesTest, GreedyGenerationMatches) {
    ForwardPass fwd(*model_, *pool_);
    for (const auto& tc : reference_["cases"]) {
        GenerateRequest req;
        req.prompt = tc["prompt"];
        req.max_tokens = 48;
        req.sampling.temperature = 0.0f;
        std::string streamed;
        auto r = Generate(fwd, req, [&](std::string_view s) { streamed.append(s); });
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->prompt_tokens, tc["prompt_ids"].get<std::vector<int32_t>>());
        EXPECT_EQ(r->tokens, tc["greedy_ids"].get<std::vector<int32_t>>()) << tc["name"];
        EXPECT_EQ(r->text, tc["greedy_text"].get<std::string>());
        EXPECT_EQ(streamed, r->text);
        // A completion's ids alone decode to exactly its text (its first
        // token's space included).
        EXPECT_EQ(model_->tokenizer().Decode(r->tokens), r->text);
        EXPECT_EQ(r->finish_reason, FinishReason::kLength);
    }
    EXPECT_EQ(pool_->num_free(), pool_->num_blocks()) << "generation leaked KV blocks";
}

TEST_F(StoriesTest, StopStringEndsGenerationBeforeIt) {
    ForwardPass fwd(*model_, *pool_);
    GenerateRequest req;
    req.prompt = "Once upon a time";
    req.max_tokens = 48;
    req.sampling.temperature = 0.0f;
    req.stop = {"Lily"};
    auto r = Generate(fwd, req);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->text, ", there was a little girl named ");
    EXPECT_EQ(r->finish_reason, FinishReason::kStop);
}

TEST_F(StoriesTest, CliPrintsTheReferenceContinuation) {
    const auto& tc = reference_["cases"][0];
    int code = 0;
    const std::string out = testing::RunCli("generate --model " + testing::StoriesDir() +
                                       "/stories260K.gguf --prompt \"Once upon a time\" --max-tokens 48 --temperature 0",
                                   &code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(out, tc["greedy_text"].get<std::string>() + "\n");
}

TEST_F(StoriesTest, CliJsonCarriesIdsAndTimings) {
    const auto& tc = reference_["cases"][1];
    int code = 0;
    const std::string out = testing::RunCli("generate --json --model " + testing::StoriesDir() +
                                       "/stories260K.gguf --prompt \"" + tc["prompt"].get<std::string>() +
                                       "\" --max-tokens 48 --temperature 0",
                                   &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["prompt_tokens"], tc["prompt_ids"]);
    EXPECT_EQ(j["tokens"], tc["greedy_ids"]);
    EXPECT_EQ(j["text"], tc["greedy_text"]);
    EXPECT_EQ(j["finish_reason"], "length");
    EXPECT_GT(j["prefill_ms"].get<double>(), 0.0);
    EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0.0);
}

TEST(CliErrors, BadInputGivesAClearMessage) {
    int code = 0;
    testing::ExpectCliFailsSaying("generate --model /nonexistent/model.gguf --prompt hi", "/nonexistent/model.gguf");
    testing::ExpectCliFailsSaying("generate --model synthetic:nope --prompt hi", "unknown synthetic model 'nope'");
    // An empty prompt is BOS alone (llama.cpp, llama2.c), not an error.
    const std::string out =
        testing::RunCli("generate --model synthetic:tiny --prompt \"\" --max-tokens 3 --json", &code, true);
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("\"prompt_tokens\":[1]"), std::string::npos) << out;
    testing::ExpectCliFailsSaying("generate --model synthetic:tiny --prompt hi --top-p 1.5", "top_p");
    testing::ExpectCliFailsSaying("generate --model synthetic:tiny --prompt hi --temperature -1", "temperature");
}

}  // namespace
}  // namespace prepack
