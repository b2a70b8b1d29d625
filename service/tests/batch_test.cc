// GenerateBatch under the BatchLLM policy: requests that share a long prompt
// prefix are submitted together, so the engine's prefix tree groups them and
// computes the shared part once; every result still equals its own Generate.
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

    int cached = 0;
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
    }
    // Every member reads the group's prefix from shared KV (whole blocks of
    // it at least), so at most one prefix's worth is computed per group.
    EXPECT_GE(cached, kRequests * (kPrefix / 16) * 16) << "the shared prefix was not reused";
}

}  // namespace
}  // namespace prepackd_test
