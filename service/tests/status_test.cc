// Every status code prepackd promises, provoked and checked, on synthetic:tiny
// (no model file needed): INVALID_ARGUMENT naming the field, OUT_OF_RANGE,
// RESOURCE_EXHAUSTED (--max-queue and the engine's KV budget), CANCELLED and
// DEADLINE_EXCEEDED freeing the KV memory, UNAUTHENTICATED.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

using prepack::v1::GenerateRequest;

constexpr int kContext = 2048;   // synthetic:tiny's context length

// A long greedy stream: ~2000 tokens never end early (ignore_eos).
GenerateRequest Long() {
    GenerateRequest r = Greedy("Once upon a time", 2000);
    r.mutable_sampling()->set_ignore_eos(true);
    return r;
}

TEST(StatusTest, InvalidArgumentNamesTheField) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    struct Bad {
        const char*     field;
        GenerateRequest request;
    };
    std::vector<Bad> bad;
    auto add = [&](const char* field, auto&& mutate) {
        GenerateRequest r = Greedy("hello", 4);
        mutate(r);
        bad.push_back({field, r});
    };
    add("prompt", [](GenerateRequest& r) { r.clear_text(); });
    add("text", [](GenerateRequest& r) {   // empty text without BOS: nothing to start from
        r.set_text("");
        r.set_add_bos(false);
    });
    add("token_ids.ids", [](GenerateRequest& r) { r.mutable_token_ids(); });
    add("token_ids.ids[1]", [](GenerateRequest& r) {
        r.mutable_token_ids()->add_ids(1);
        r.mutable_token_ids()->add_ids(512);
    });
    add("add_bos", [](GenerateRequest& r) {
        r.mutable_token_ids()->mutable_ids()->Add(1);
        r.set_add_bos(true);
    });
    add("sampling.max_tokens", [](GenerateRequest& r) { r.mutable_sampling()->set_max_tokens(0); });
    add("sampling.temperature", [](GenerateRequest& r) { r.mutable_sampling()->set_temperature(-1.0f); });
    add("sampling.top_k", [](GenerateRequest& r) { r.mutable_sampling()->set_top_k(-3); });
    add("sampling.top_p", [](GenerateRequest& r) { r.mutable_sampling()->set_top_p(0.0f); });
    add("sampling.min_p", [](GenerateRequest& r) { r.mutable_sampling()->set_min_p(1.5f); });
    add("sampling.repetition_penalty", [](GenerateRequest& r) { r.mutable_sampling()->set_repetition_penalty(0.0f); });
    add("sampling.stop[1]", [](GenerateRequest& r) {
        r.mutable_sampling()->add_stop("ok");
        r.mutable_sampling()->add_stop("");
    });
    add("top_logprobs", [](GenerateRequest& r) { r.set_top_logprobs(21); });
    add("lazy.keep_ratio", [](GenerateRequest& r) { r.mutable_lazy()->set_keep_ratio(0.0f); });
    add("lazy.revive_limit", [](GenerateRequest& r) { r.mutable_lazy()->set_revive_limit(-2); });
    for (const Bad& b : bad) {
        SCOPED_TRACE(b.field);
        const Generated g = RunGenerate(*stub, b.request);
        EXPECT_EQ(g.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << g.status.error_message();
        EXPECT_EQ(g.status.error_message().rfind(std::string(b.field) + ":", 0), 0u) << g.status.error_message();
        EXPECT_TRUE(g.ids.empty());
    }
    // The unary calls name their fields too.
    grpc::ClientContext ctx;
    prepack::v1::DetokenizeRequest d;
    d.add_token_ids(5);
    d.add_token_ids(-1);
    prepack::v1::DetokenizeResponse dr;
    const grpc::Status ds = stub->Detokenize(&ctx, d, &dr);
    EXPECT_EQ(ds.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(ds.error_message().rfind("token_ids[1]:", 0), 0u) << ds.error_message();
    // An empty batch.
    grpc::ClientContext bctx;
    auto reader = stub->GenerateBatch(&bctx, prepack::v1::GenerateBatchRequest());
    prepack::v1::GenerateBatchResponse br;
    EXPECT_FALSE(reader->Read(&br));
    const grpc::Status bs = reader->Finish();
    EXPECT_EQ(bs.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(bs.error_message().rfind("requests:", 0), 0u) << bs.error_message();
    // And a good request still works on the same server.
    EXPECT_TRUE(RunGenerate(*stub, Greedy("hello", 4)).status.ok());
}

TEST(StatusTest, OutOfRangeWhenPromptPlusMaxTokensExceedTheContext) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    grpc::ClientContext ctx;
    prepack::v1::ModelInfo info;
    ASSERT_TRUE(stub->GetModelInfo(&ctx, prepack::v1::GetModelInfoRequest(), &info).ok());
    ASSERT_EQ(info.context_length(), kContext);

    const std::vector<int32_t> prompt(2040, 300);
    // 2040 + 9 > 2048: refused before it reaches the engine.
    Generated g = RunGenerate(*stub, GreedyIds(prompt, 9));
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::OUT_OF_RANGE) << g.status.error_message();
    EXPECT_NE(g.status.error_message().find("context length (2048)"), std::string::npos) << g.status.error_message();
    // A text prompt is measured in tokens: ~1 token per repetition here.
    std::string text;
    for (int i = 0; i < 1100; ++i) text += " hello";
    g = RunGenerate(*stub, Greedy(text, 1000));
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::OUT_OF_RANGE) << g.status.error_message();
    // 2040 + 8 = 2048 fits exactly.
    g = RunGenerate(*stub, GreedyIds(prompt, 8));
    ASSERT_TRUE(g.status.ok()) << g.status.error_message();
    EXPECT_EQ(g.usage.prompt_tokens(), 2040);
    EXPECT_LE(g.ids.size(), 8u);
    EXPECT_GE(g.ids.size(), 1u);
}

TEST(StatusTest, ResourceExhaustedWhenTheQueueIsFull) {
    auto server = StartTiny({"--max-queue", "1"});
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());

    // Stream A holds the only slot.
    grpc::ClientContext a_ctx;
    a_ctx.set_deadline(In(std::chrono::seconds(120)));
    auto a = stub->Generate(&a_ctx, Long());
    prepack::v1::GenerateResponse msg;
    ASSERT_TRUE(a->Read(&msg));
    EXPECT_EQ(Stats(*stub).in_flight(), 1u);

    // Stream B (another long stream) is refused at once.
    const auto t0 = std::chrono::steady_clock::now();
    const Generated b = RunGenerate(*stub, Long());
    EXPECT_EQ(b.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << b.status.error_message();
    EXPECT_NE(b.status.error_message().find("--max-queue"), std::string::npos);
    EXPECT_TRUE(b.ids.empty());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    // A batch as well.
    prepack::v1::GenerateBatchRequest batch;
    *batch.add_requests() = Greedy("hi", 4);
    grpc::ClientContext bctx;
    auto reader = stub->GenerateBatch(&bctx, batch);
    prepack::v1::GenerateBatchResponse br;
    while (reader->Read(&br)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

    // Once A is gone, the slot is free again.
    a_ctx.TryCancel();
    while (a->Read(&msg)) {
    }
    EXPECT_EQ(a->Finish().error_code(), grpc::StatusCode::CANCELLED);
    const auto s = WaitForStats(*stub, [](const auto& s) { return s.in_flight() == 0; }, std::chrono::seconds(10));
    EXPECT_EQ(s.in_flight(), 0u);
    EXPECT_GE(s.finished_by_status().at("RESOURCE_EXHAUSTED"), 2u);
    EXPECT_TRUE(RunGenerate(*stub, Greedy("hello", 4)).status.ok());
}

TEST(StatusTest, EngineResourceExhaustedPassesThrough) {
    // A KV budget of ~150 tokens: a 600-token prompt can never fit, which
    // the engine reports as RESOURCE_EXHAUSTED; the service passes its code on.
    auto server = StartTiny({"--kv-memory", "2097152"});
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    const Generated g = RunGenerate(*stub, GreedyIds(std::vector<int32_t>(600, 300), 4));
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << g.status.error_message();
    EXPECT_NE(g.status.error_message().find("KV"), std::string::npos) << g.status.error_message();
}

TEST(StatusTest, CancelledStreamFreesItsKv) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub->Generate(&ctx, Long());
    prepack::v1::GenerateResponse msg;
    int got = 0;
    while (got < 5 && reader->Read(&msg)) got += msg.token_ids_size();
    ASSERT_EQ(got, 5);
    const auto running = Stats(*stub);
    EXPECT_GT(running.kv_bytes_used(), 0u);
    EXPECT_EQ(running.requests_running(), 1u);
    EXPECT_EQ(running.in_flight(), 1u);

    const auto t0 = std::chrono::steady_clock::now();
    ctx.TryCancel();
    while (reader->Read(&msg)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
    const auto s = WaitForStats(
        *stub,
        [](const auto& s) {
            return s.kv_bytes_used() == 0 && s.in_flight() == 0 && s.finished_by_status().count("CANCELLED") > 0;
        },
        std::chrono::seconds(5));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(s.kv_bytes_used(), 0u);
    EXPECT_EQ(s.requests_running(), 0u);
    EXPECT_EQ(s.in_flight(), 0u);
    EXPECT_EQ(s.finished_by_status().count("CANCELLED"), 1u);
    EXPECT_EQ(s.finished_by_reason().at("abort"), 1u);   // vLLM's finished_reason of a cancel
    // ~150 tokens/s here: a hundred more tokens would be most of a second.
    EXPECT_LT(s.generated_tokens(), running.generated_tokens() + 100) << "the request ran on after the cancel";
    std::printf("cancel -> KV freed in %.3f s\n", secs);
}

TEST(StatusTest, DeadlineExceededStopsTheRequest) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    const auto t0 = std::chrono::steady_clock::now();
    const Generated g = RunGenerate(*stub, Long(), std::chrono::milliseconds(700));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << g.status.error_message();
    EXPECT_LT(g.ids.size(), 2000u);
    EXPECT_LT(secs, 3.0);
    const auto s = WaitForStats(
        *stub,
        [](const auto& s) {
            return s.kv_bytes_used() == 0 && s.in_flight() == 0 && s.finished_by_status().count("DEADLINE_EXCEEDED") > 0;
        },
        std::chrono::seconds(5));
    EXPECT_EQ(s.kv_bytes_used(), 0u);
    EXPECT_EQ(s.in_flight(), 0u);
    EXPECT_EQ(s.finished_by_status().count("DEADLINE_EXCEEDED"), 1u);
    EXPECT_LT(s.generated_tokens(), g.ids.size() + 100) << "the request ran on after its deadline";
}

TEST(StatusTest, UnauthenticatedWithoutTheToken) {
    char dir[] = "/tmp/prepackd_auth_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/token";
    std::ofstream(path) << "s3cret-token\n";
    auto server = StartTiny({"--auth-token-file", path});
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());

    Generated g = RunGenerate(*stub, Greedy("hello", 4));
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << g.status.error_message();
    g = RunGenerate(*stub, Greedy("hello", 4), std::chrono::seconds(30), "wrong-token");
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << g.status.error_message();
    grpc::ClientContext ctx;
    prepack::v1::Stats stats;
    EXPECT_EQ(stub->GetStats(&ctx, prepack::v1::GetStatsRequest(), &stats).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    // The right token works; health needs none.
    GenerateRequest ok = Greedy("hello", 4);
    ok.mutable_sampling()->set_ignore_eos(true);
    g = RunGenerate(*stub, ok, std::chrono::seconds(30), "s3cret-token");
    EXPECT_TRUE(g.status.ok()) << g.status.error_message();
    EXPECT_EQ(g.ids.size(), 4u);
    EXPECT_EQ(HealthOf(server->Channel()), grpc::health::v1::HealthCheckResponse::SERVING);
    server.reset();
    std::remove(path.c_str());
    rmdir(dir);
}

}  // namespace
}  // namespace prepackd_test
