// prepackd on the real stories260K model against the llama2.c reference
// (reference.json): streamed greedy ids, prompt ids as input, tokenizer
// round trips, logprobs, and GenerateBatch = Generate.
#include <algorithm>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

const std::string kModelDir = std::string(PREPACK_MODELS_DIR) + "/stories260K";

struct Case {
    std::string          name, prompt, greedy_text;
    std::vector<int32_t> prompt_ids, greedy_ids;
    std::vector<std::pair<int32_t, double>> top5;   // (id, logit) after the prompt
};

class StoriesTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!std::filesystem::exists(kModelDir + "/stories260K.gguf")) return;
        std::ifstream in(kModelDir + "/reference.json");
        const nlohmann::json j = nlohmann::json::parse(in);
        for (const auto& c : j.at("cases")) {
            Case k;
            k.name = c.at("name");
            k.prompt = c.at("prompt");
            k.greedy_text = c.at("greedy_text");
            k.prompt_ids = c.at("prompt_ids").get<std::vector<int32_t>>();
            k.greedy_ids = c.at("greedy_ids").get<std::vector<int32_t>>();
            for (const auto& t : c.at("top5_after_prompt")) k.top5.emplace_back(t.at(0), t.at(1));
            cases_->push_back(k);
        }
        std::string error;
        server_ = ServerProcess::Start({"--model", kModelDir + "/stories260K.gguf", "--threads", "1"}, &error)
                      .release();
        if (server_ == nullptr) start_error_ = new std::string(error);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        if (!std::filesystem::exists(kModelDir + "/stories260K.gguf")) {
            GTEST_SKIP() << "stories260K not found in " << kModelDir << " (the shared models folder is absent)";
        }
        ASSERT_NE(server_, nullptr) << *start_error_;
        ASSERT_EQ(cases_->size(), 2u);
        stub_ = prepack::v1::Prepack::NewStub(server_->Channel());
        // The suite's server was started before the first test: wait until it serves.
        WaitUntilServing(server_->Channel());
    }

    static ServerProcess*     server_;
    static std::string*       start_error_;
    static std::vector<Case>* cases_;
    std::unique_ptr<prepack::v1::Prepack::Stub> stub_;
};

ServerProcess*     StoriesTest::server_ = nullptr;
std::string*       StoriesTest::start_error_ = nullptr;
std::vector<Case>* StoriesTest::cases_ = new std::vector<Case>();

TEST_F(StoriesTest, StreamedGreedyIdsEqualReference) {
    for (const Case& c : *cases_) {
        SCOPED_TRACE(c.name);
        const Generated g = RunGenerate(*stub_, Greedy(c.prompt, 48));
        ASSERT_TRUE(g.status.ok()) << g.status.error_message();
        EXPECT_EQ(g.ids, c.greedy_ids);
        EXPECT_EQ(g.text, c.greedy_text);
        EXPECT_EQ(g.finish, prepack::v1::FINISH_REASON_LENGTH);
        EXPECT_EQ(g.usage.prompt_tokens(), static_cast<int>(c.prompt_ids.size()));
        EXPECT_EQ(g.usage.generated_tokens(), 48);
        EXPECT_GT(g.usage.ttft_ms(), 0.0);
        EXPECT_GE(g.usage.total_ms(), g.usage.ttft_ms());
        // Streamed: one message per token, then the last one with the usage.
        EXPECT_EQ(g.messages, 49);
        EXPECT_FALSE(g.tokens_after_finish);
    }
}

TEST_F(StoriesTest, PromptAsTokenIdsGivesTheSameIds) {
    for (const Case& c : *cases_) {
        SCOPED_TRACE(c.name);
        const Generated g = RunGenerate(*stub_, GreedyIds(c.prompt_ids, 48));
        ASSERT_TRUE(g.status.ok()) << g.status.error_message();
        EXPECT_EQ(g.ids, c.greedy_ids);
    }
}

TEST_F(StoriesTest, TokenizeAndDetokenizeMatchReference) {
    for (const Case& c : *cases_) {
        SCOPED_TRACE(c.name);
        grpc::ClientContext ctx;
        prepack::v1::TokenizeRequest req;
        req.set_text(c.prompt);
        prepack::v1::TokenizeResponse resp;
        ASSERT_TRUE(stub_->Tokenize(&ctx, req, &resp).ok());
        EXPECT_EQ(std::vector<int32_t>(resp.token_ids().begin(), resp.token_ids().end()), c.prompt_ids);

        // Prompt and continuation decode to the prompt text and the
        // reference text (BOS and the dummy-prefix space dropped).
        grpc::ClientContext ctx2;
        prepack::v1::DetokenizeRequest dreq;
        dreq.mutable_token_ids()->Add(c.prompt_ids.begin(), c.prompt_ids.end());
        dreq.mutable_token_ids()->Add(c.greedy_ids.begin(), c.greedy_ids.end());
        prepack::v1::DetokenizeResponse dresp;
        ASSERT_TRUE(stub_->Detokenize(&ctx2, dreq, &dresp).ok());
        EXPECT_EQ(dresp.text(), c.prompt + c.greedy_text);
    }
}

// parse_special: the control token </s> (id 2 in stories260K's vocabulary)
// from its text only when asked; by default its text is ordinary text. The
// same switch on a Generate prompt reaches the engine (one prompt token more
// than BOS alone).
TEST_F(StoriesTest, ParseSpecialMakesControlTextOneToken) {
    auto tokenize = [&](bool parse_special) {
        grpc::ClientContext ctx;
        prepack::v1::TokenizeRequest req;
        req.set_text("</s>");
        req.set_add_bos(false);
        req.set_parse_special(parse_special);
        prepack::v1::TokenizeResponse resp;
        EXPECT_TRUE(stub_->Tokenize(&ctx, req, &resp).ok());
        return std::vector<int32_t>(resp.token_ids().begin(), resp.token_ids().end());
    };
    EXPECT_EQ(tokenize(true), std::vector<int32_t>{2});
    const std::vector<int32_t> plain = tokenize(false);
    EXPECT_GT(plain.size(), 1u);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);

    prepack::v1::GenerateRequest g;
    g.set_text("</s>");
    g.set_parse_special(true);
    g.mutable_sampling()->set_max_tokens(1);
    grpc::ClientContext ctx;
    auto reader = stub_->Generate(&ctx, g);
    prepack::v1::GenerateResponse r, last;
    while (reader->Read(&r)) last = r;
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(last.usage().prompt_tokens(), 2) << "BOS and </s>";
}

TEST_F(StoriesTest, ModelInfoDescribesStories260K) {
    grpc::ClientContext ctx;
    prepack::v1::ModelInfo info;
    ASSERT_TRUE(stub_->GetModelInfo(&ctx, prepack::v1::GetModelInfoRequest(), &info).ok());
    EXPECT_EQ(info.vocab_size(), 512);
    EXPECT_EQ(info.bos_id(), 1);
    EXPECT_EQ(info.architecture(), "llama");
    EXPECT_GT(info.context_length(), 0);
    EXPECT_GT(info.parameters(), 0u);
    EXPECT_FALSE(info.library_version().empty());
}

TEST_F(StoriesTest, LogprobsRankTheReferenceLogits) {
    const Case& c = cases_->front();
    prepack::v1::GenerateRequest req = Greedy(c.prompt, 4);
    req.set_top_logprobs(5);
    const Generated g = RunGenerate(*stub_, req);
    ASSERT_TRUE(g.status.ok()) << g.status.error_message();
    ASSERT_EQ(g.logprobs.size(), 4u);
    for (size_t i = 0; i < g.logprobs.size(); ++i) {
        const auto& lp = g.logprobs[i];
        EXPECT_EQ(lp.token_id(), g.ids[i]);
        ASSERT_EQ(lp.top_size(), 5);
        EXPECT_EQ(lp.top(0).token_id(), lp.token_id());   // greedy: the best is the one chosen
        EXPECT_NEAR(lp.top(0).logprob(), lp.logprob(), 1e-4);
        EXPECT_LE(lp.logprob(), 0.0f);
    }
    // After the prompt, log p differences are the reference's logit differences.
    const auto& first = g.logprobs[0];
    for (int k = 0; k < 5; ++k) {
        EXPECT_EQ(first.top(k).token_id(), c.top5[static_cast<size_t>(k)].first) << "rank " << k;
        EXPECT_NEAR(first.top(0).logprob() - first.top(k).logprob(), c.top5[0].second - c.top5[static_cast<size_t>(k)].second,
                    2e-3)
            << "rank " << k;
    }
}

TEST_F(StoriesTest, GenerateBatchEqualsGenerate) {
    // Greedy, sampled with a seed, token-id prompt, one bad request, a stop string.
    std::vector<prepack::v1::GenerateRequest> reqs;
    reqs.push_back(Greedy((*cases_)[0].prompt, 48));
    reqs.push_back(Greedy((*cases_)[1].prompt, 48));
    prepack::v1::GenerateRequest sampled = Greedy((*cases_)[0].prompt, 32);
    sampled.mutable_sampling()->set_temperature(0.8f);
    sampled.mutable_sampling()->set_top_p(0.9f);
    sampled.mutable_sampling()->set_seed(7);
    reqs.push_back(sampled);
    prepack::v1::GenerateRequest bad = Greedy("x", 8);
    bad.mutable_sampling()->set_top_p(2.0f);
    reqs.push_back(bad);
    reqs.push_back(GreedyIds((*cases_)[1].prompt_ids, 20));
    prepack::v1::GenerateRequest stop = Greedy((*cases_)[0].prompt, 48);
    stop.mutable_sampling()->add_stop("park");
    reqs.push_back(stop);

    prepack::v1::GenerateBatchRequest batch;
    for (const auto& r : reqs) *batch.add_requests() = r;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub_->GenerateBatch(&ctx, batch);
    std::map<uint32_t, prepack::v1::GenerateResult> results;
    prepack::v1::GenerateBatchResponse resp;
    while (reader->Read(&resp)) {
        EXPECT_EQ(results.count(resp.index()), 0u) << "index " << resp.index() << " twice";
        results[resp.index()] = resp.result();
    }
    const grpc::Status st = reader->Finish();
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(results.size(), reqs.size());

    EXPECT_EQ(results[3].status_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(results[3].status_message().find("requests[3].sampling.top_p"), std::string::npos)
        << results[3].status_message();
    EXPECT_EQ(std::vector<int32_t>(results[0].token_ids().begin(), results[0].token_ids().end()),
              (*cases_)[0].greedy_ids);
    EXPECT_EQ(std::vector<int32_t>(results[1].token_ids().begin(), results[1].token_ids().end()),
              (*cases_)[1].greedy_ids);
    EXPECT_EQ(results[5].finish_reason(), prepack::v1::FINISH_REASON_STOP);
    for (size_t i = 0; i < reqs.size(); ++i) {
        if (i == 3) continue;
        SCOPED_TRACE("request " + std::to_string(i));
        const Generated g = RunGenerate(*stub_, reqs[i]);
        ASSERT_TRUE(g.status.ok()) << g.status.error_message();
        const auto& r = results[static_cast<uint32_t>(i)];
        EXPECT_EQ(r.status_code(), 0) << r.status_message();
        EXPECT_EQ(std::vector<int32_t>(r.token_ids().begin(), r.token_ids().end()), g.ids);
        EXPECT_EQ(r.text(), g.text);
        EXPECT_EQ(r.finish_reason(), g.finish);
        EXPECT_EQ(r.usage().prompt_tokens(), g.usage.prompt_tokens());
        EXPECT_EQ(r.usage().generated_tokens(), g.usage.generated_tokens());
    }
}

}  // namespace
}  // namespace prepackd_test
