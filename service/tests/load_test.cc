// Load test (loopback, bounded): 64 concurrent streaming clients, each on
// its own connection, run 128 greedy requests of mixed prompt lengths
// (4-128 tokens, max_tokens 16-32) through one prepackd, twice. Every request must come back exactly once with
// exactly the tokens it gets when run alone (measured first, one at a time,
// on the same server); the server's memory must stay bounded; the
// aggregate throughput is reported against the one-at-a-time run.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

constexpr int      kRequests = 128;
constexpr int      kClients = 64;
// Smaller than the peak demand of 64 streams (~85 MiB): the first round
// fills the whole KV pool, so any growth in the second round is a leak,
// not KV pages touched for the first time.
constexpr uint64_t kKvBytes = 48ull << 20;

std::vector<prepack::v1::GenerateRequest> Workload() {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> prompt_len(4, 128), max_tokens(16, 32), id(3, 511);
    std::vector<prepack::v1::GenerateRequest> reqs;
    for (int i = 0; i < kRequests; ++i) {
        std::vector<int32_t> ids = {1};   // BOS, then random ids
        const int n = prompt_len(rng);
        for (int k = 1; k < n; ++k) ids.push_back(id(rng));
        prepack::v1::GenerateRequest r = GreedyIds(ids, max_tokens(rng));
        r.mutable_sampling()->set_ignore_eos(true);   // every request runs its full length
        reqs.push_back(r);
    }
    return reqs;
}

TEST(LoadTest, ConcurrentClientsGetTheirSoloTokens) {
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "2", "--kv-memory",
                                        std::to_string(kKvBytes), "--max-queue", "256"},
                                       &error);
    ASSERT_NE(server, nullptr) << error;
    auto channel = server->Channel();
    WaitUntilServing(channel);
    auto stub = prepack::v1::Prepack::NewStub(channel);
    const auto reqs = Workload();
    int64_t total_tokens = 0;
    for (const auto& r : reqs) total_tokens += r.sampling().max_tokens();

    // 1. One at a time: the expected tokens and the baseline throughput.
    std::vector<std::vector<int32_t>> alone(kRequests);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRequests; ++i) {
        const Generated g = RunGenerate(*stub, reqs[static_cast<size_t>(i)], std::chrono::seconds(60));
        ASSERT_TRUE(g.status.ok()) << "request " << i << ": " << g.status.error_message();
        ASSERT_EQ(static_cast<int>(g.ids.size()), reqs[static_cast<size_t>(i)].sampling().max_tokens());
        alone[static_cast<size_t>(i)] = g.ids;
    }
    const double seq_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long rss_before = server->RssKib();

    // 2. The same requests from 64 concurrent clients, twice: the second
    //    round shows whether memory keeps growing.
    double conc_s = 0.0;
    long rss_after[2] = {0, 0};
    for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE("round " + std::to_string(round + 1));
        std::vector<Generated> got(kRequests);
        std::vector<std::atomic<int>> times_seen(kRequests);
        std::atomic<int> next{0};
        const auto t1 = std::chrono::steady_clock::now();
        std::vector<std::thread> clients;
        for (int c = 0; c < kClients; ++c) {
            clients.emplace_back([&] {
                auto own = prepack::v1::Prepack::NewStub(server->Channel(/*own_connection=*/true));
                for (int i = next.fetch_add(1); i < kRequests; i = next.fetch_add(1)) {
                    got[static_cast<size_t>(i)] = RunGenerate(*own, reqs[static_cast<size_t>(i)], std::chrono::seconds(60),
                                                              /*token=*/"", /*wait_for_ready=*/true);
                    times_seen[static_cast<size_t>(i)].fetch_add(1);
                }
            });
        }
        for (auto& t : clients) t.join();
        conc_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        rss_after[round] = server->RssKib();

        int mismatches = 0;
        for (int i = 0; i < kRequests; ++i) {
            const auto& g = got[static_cast<size_t>(i)];
            EXPECT_EQ(times_seen[static_cast<size_t>(i)].load(), 1) << "request " << i;
            EXPECT_TRUE(g.status.ok()) << "request " << i << ": " << g.status.error_message();
            EXPECT_EQ(g.finish, prepack::v1::FINISH_REASON_LENGTH) << "request " << i;
            EXPECT_FALSE(g.tokens_after_finish) << "request " << i;
            if (g.ids != alone[static_cast<size_t>(i)]) ++mismatches;
        }
        EXPECT_EQ(mismatches, 0) << "requests whose concurrent tokens differ from their solo tokens";
    }

    const auto stats = WaitForStats(*stub, [](const auto& s) { return s.in_flight() == 0 && s.kv_bytes_used() == 0; },
                                    std::chrono::seconds(10));
    EXPECT_EQ(stats.in_flight(), 0u);
    EXPECT_EQ(stats.kv_bytes_used(), 0u);
    EXPECT_EQ(stats.finished_by_status().at("OK"), 3u * kRequests);
    EXPECT_EQ(stats.finished_by_status().size(), 1u) << "some request ended with an error";

    const double seq_tps = static_cast<double>(total_tokens) / seq_s;
    const double conc_tps = static_cast<double>(total_tokens) / conc_s;
    std::printf("load: %d requests, %lld generated tokens, prompts 4-128 tokens, max_tokens 16-32, synthetic:tiny, "
                "--threads 2\n",
                kRequests, static_cast<long long>(total_tokens));
    std::printf("load: one at a time      %7.1f tokens/s (%.2f s)\n", seq_tps, seq_s);
    std::printf("load: %d clients at once %7.1f tokens/s (%.2f s, second round)\n", kClients, conc_tps, conc_s);
    std::printf("load: speedup %.2fx; preemptions %llu\n", conc_tps / seq_tps,
                static_cast<unsigned long long>(stats.preemptions()));
    std::printf("load: server RSS %ld KiB after the solo run, %ld / %ld KiB after concurrent rounds 1 / 2\n",
                rss_before, rss_after[0], rss_after[1]);
    ASSERT_GT(rss_before, 0);
    // Memory: the first concurrent round may touch the whole KV budget
    // (mapped as it is used) and per-stream buffers, nothing more; the
    // second round reuses all of it.
    EXPECT_LT(rss_after[0] - rss_before, static_cast<long>(kKvBytes / 1024) + 64 * 1024);
    EXPECT_LT(rss_after[1] - rss_after[0], 32 * 1024) << "memory grew from one round of the same load to the next";
    // Batching many streams must beat running them one by one.
    EXPECT_GT(conc_tps, seq_tps);
}

}  // namespace
}  // namespace prepackd_test
