// GenerateBatch under the BatchLLM policy: requests that share a long prompt
// prefix are submitted together, so the engine's prefix tree groups them and
// computes the shared part once; every result still equals its own Generate.
// And a batch whose deadline expires ends DEADLINE_EXCEEDED, never OK.
#include <gtest/gtest.h>

#include <map>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

TEST(BatchTest, SharedPrefixesAreComputedOnceAndResultsEqualGenerate) {
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1", "--policy", "batchllm"}, &error);
    ASSERT_NE(server, nullptr) << error;
    ASSERT_TRUE(WaitUntilServing(server->Channel()));
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());

    // Six prompts: one 96-token prefix, then a different 4-token tail each.
    constexpr int kRequests = 6, kPrefix = 96, kTail = 4;
    std::vector<int32_t> prefix;
    for (int t = 0; t < kPrefix; ++t) prefix.push_back(1 + (t * 7) % 200);
    prepack::v1::GenerateBatchRequest batch;
    std::vector<prepack::v1::GenerateRequest> reqs;
    for (int i = 0; i < kRequests; ++i) {
        std::vector<int32_t> ids = prefix;
        for (int t = 0; t < kTail; ++t) ids.push_back(300 + 10 * i + t);
        reqs.push_back(GreedyIds(ids, 6));
        *batch.add_requests() = reqs.back();
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub->GenerateBatch(&ctx, batch);
    std::map<uint32_t, prepack::v1::GenerateResult> results;
    prepack::v1::GenerateBatchResponse resp;
    while (reader->Read(&resp)) results[resp.index()] = resp.result();
    const grpc::Status st = reader->Finish();
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(results.size(), static_cast<size_t>(kRequests));

    int cached = 0, by_length = 0;
    for (int i = 0; i < kRequests; ++i) {
        SCOPED_TRACE("request " + std::to_string(i));
        const auto& r = results[static_cast<uint32_t>(i)];
        ASSERT_EQ(r.status_code(), 0) << r.status_message();
        EXPECT_EQ(r.usage().prompt_tokens(), kPrefix + kTail);
        cached += r.usage().cached_prefix_tokens();
        // Generate runs alone, nothing shared: the tokens must not change.
        const Generated g = RunGenerate(*stub, reqs[static_cast<size_t>(i)]);
        ASSERT_TRUE(g.status.ok()) << g.status.error_message();
        EXPECT_EQ(std::vector<int32_t>(r.token_ids().begin(), r.token_ids().end()), g.ids);
        EXPECT_EQ(g.usage.cached_prefix_tokens(), 0);
        by_length += (r.finish_reason() == prepack::v1::FINISH_REASON_LENGTH) +
                     (g.finish == prepack::v1::FINISH_REASON_LENGTH);
    }
    // Every member reads the group's prefix from shared KV (whole blocks of
    // it at least), so at most one prefix's worth is computed per group.
    EXPECT_GE(cached, kRequests * (kPrefix / 16) * 16) << "the shared prefix was not reused";
    // The engine's prefix counters add up what the results reported, and
    // both calls' requests reach the finish-reason counters (GET /metrics').
    const prepack::v1::Stats s = Stats(*stub);
    EXPECT_EQ(s.prefix_hit_tokens(), static_cast<uint64_t>(cached));
    EXPECT_EQ(s.prefix_hit_requests(), static_cast<uint64_t>(kRequests));
    EXPECT_EQ(s.prefix_query_requests(), static_cast<uint64_t>(2 * kRequests));
    EXPECT_EQ(s.prefix_query_tokens(), static_cast<uint64_t>(2 * kRequests * (kPrefix + kTail)));
    uint64_t ended = 0;
    for (const auto& [reason, n] : s.finished_by_reason()) ended += n;
    EXPECT_EQ(ended, static_cast<uint64_t>(2 * kRequests));
    EXPECT_EQ(s.finished_by_reason().at("length"), static_cast<uint64_t>(by_length));
}

// Runs `batch` under `timeout`; returns the call's status, the results seen.
grpc::Status RunBatch(prepack::v1::Prepack::Stub& stub, const prepack::v1::GenerateBatchRequest& batch,
                      std::chrono::milliseconds timeout, std::map<uint32_t, prepack::v1::GenerateResult>* results) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(timeout));
    auto reader = stub.GenerateBatch(&ctx, batch);
    prepack::v1::GenerateBatchResponse resp;
    while (reader->Read(&resp)) (*results)[resp.index()] = resp.result();
    return reader->Finish();
}

// The call's own log line (id without a member suffix), for the calls that
// reached the server.
std::vector<std::string> CallLines(const std::string& log, const std::string& status) {
    std::vector<std::string> out;
    for (const std::string& line : GrepLines(log, {"rpc=GenerateBatch ", "status=" + status})) {
        const size_t id = line.find("id=");
        if (id != std::string::npos && line.substr(id, line.find(' ', id) - id).find('.') == std::string::npos) {
            out.push_back(line);
        }
    }
    return out;
}

TEST(BatchTest, OneMillisecondDeadlineIsDeadlineExceededEveryTime) {
    TempPath log("batch_deadline");
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1"}, &error,
                                       std::chrono::seconds(60), log.path());
    ASSERT_NE(server, nullptr) << error;
    ASSERT_TRUE(WaitUntilServing(server->Channel()));
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    prepack::v1::GenerateBatchRequest batch;
    for (int i = 0; i < 8; ++i) *batch.add_requests() = Greedy("Once upon a time " + std::to_string(i), 16);
    int exceeded = 0;
    for (int attempt = 0; attempt < 10; ++attempt) {
        std::map<uint32_t, prepack::v1::GenerateResult> results;
        const grpc::Status s = RunBatch(*stub, batch, std::chrono::milliseconds(1), &results);
        EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << "attempt " << attempt << ": "
                                                                       << s.error_message();
        exceeded += s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    }
    EXPECT_EQ(exceeded, 10);
    // Whatever reached the server was answered DEADLINE_EXCEEDED there too.
    EXPECT_TRUE(CallLines(log.path(), "OK").empty()) << CallLines(log.path(), "OK").front();
    // The server is fine afterwards: the same batch with time to run succeeds.
    std::map<uint32_t, prepack::v1::GenerateResult> results;
    const grpc::Status s = RunBatch(*stub, batch, std::chrono::seconds(60), &results);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(results.size(), 8u);
    EXPECT_EQ(CallLines(log.path(), "OK").size(), 1u);
}

// A deadline that expires while the members run: the server itself ends the
// call DEADLINE_EXCEEDED (its log says so), and nothing is left running.
TEST(BatchTest, DeadlineDuringTheBatchIsDeadlineExceeded) {
    TempPath log("batch_deadline_mid");
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1"}, &error,
                                       std::chrono::seconds(60), log.path());
    ASSERT_NE(server, nullptr) << error;
    ASSERT_TRUE(WaitUntilServing(server->Channel()));
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    prepack::v1::GenerateBatchRequest batch;
    for (int i = 0; i < 4; ++i) {
        prepack::v1::GenerateRequest r = Greedy("Once upon a time", 1500);
        r.mutable_sampling()->set_ignore_eos(true);
        *batch.add_requests() = r;
    }
    std::map<uint32_t, prepack::v1::GenerateResult> results;
    const grpc::Status s = RunBatch(*stub, batch, std::chrono::milliseconds(800), &results);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
    const auto idle = WaitForStats(
        *stub, [](const auto& st) { return st.in_flight() == 0 && st.kv_bytes_used() == 0; }, std::chrono::seconds(10));
    EXPECT_EQ(idle.in_flight(), 0u);
    EXPECT_EQ(idle.kv_bytes_used(), 0u);
    EXPECT_EQ(CallLines(log.path(), "DEADLINE_EXCEEDED").size(), 1u);
    EXPECT_TRUE(CallLines(log.path(), "OK").empty());
}

}  // namespace
}  // namespace prepackd_test
