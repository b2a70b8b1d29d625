// Bounded cost of hostile input. A 15 MB prompt used to be tokenized in full
// (4-8 s) on a gRPC thread before the context check refused it, and with 8
// such clients a health check took 3.9 s. Now text longer than any prompt
// that fits the context (--max-prompt-bytes, by default context length x
// the longest token's bytes) is refused before tokenizing, and tokenizing
// (of text within the bound) runs on the call's own thread, never on the
// threads health checks need.
//
// Latency bounds: each refusal within 100 ms measured by the server (from
// the handler's start to the refusal: the request log's total_ms; the
// client-side time also includes moving 15 MB over loopback, which a loaded
// shared machine can stretch), and every health check within 100 ms
// measured by the client, in one of up to three trials (see kTrials).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

constexpr double kBoundMs = 100.0;

double MsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Health checks every 10 ms on their own connection until stopped; keeps
// every latency.
class HealthProbe {
public:
    explicit HealthProbe(const ServerProcess& server) : channel_(server.Channel(/*own_connection=*/true)) {
        WaitUntilServing(channel_);   // connected before the flood starts
        thread_ = std::thread([this] {
            while (!stop_.load()) {
                const auto t0 = std::chrono::steady_clock::now();
                const auto status = HealthOf(channel_);
                const double ms = MsSince(t0);
                {
                    std::lock_guard<std::mutex> lock(mu_);
                    latencies_.push_back(ms);
                    if (status != grpc::health::v1::HealthCheckResponse::SERVING) ++not_serving_;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
    }
    // Stops and returns the latencies (ms).
    std::vector<double> Stop(int* not_serving) {
        stop_.store(true);
        thread_.join();
        *not_serving = not_serving_;
        return latencies_;
    }

private:
    std::shared_ptr<grpc::Channel> channel_;
    std::thread                    thread_;
    std::atomic<bool>              stop_{false};
    std::mutex                     mu_;
    std::vector<double>            latencies_;   // guarded by mu_
    int                            not_serving_ = 0;
};

// Stops the probe: the slowest health check it saw (ms), after checking
// that it saw enough and every one said SERVING.
double Slowest(HealthProbe* probe) {
    int not_serving = 0;
    const std::vector<double> ms = probe->Stop(&not_serving);
    EXPECT_GE(ms.size(), 2u) << "too few health checks ran during the flood";
    EXPECT_EQ(not_serving, 0);
    const double worst = ms.empty() ? 1e9 : *std::max_element(ms.begin(), ms.end());
    std::printf("health: %zu checks during the flood, slowest %.1f ms\n", ms.size(), worst);
    return worst;
}

// The health bound is wall-clock time on a machine other jobs share: one
// trial can lose the CPU for 100 ms to them. So a test gets a few trials
// and passes when one of them keeps every health check within the bound.
// The failure this guards against is no near miss: tokenizing on gRPC's
// threads made health checks take seconds, in every trial.
constexpr int kTrials = 3;

// 8 clients at once each send a 15 MB prompt (the default
// --max-message-bytes is 16 MiB, so it is received). Returns the slowest
// health check meanwhile.
double FloodTrial(const ServerProcess& server, const std::string& log, const std::string& huge) {
    constexpr int kClients = 8;
    const size_t lines_before = GrepLines(log, {"rpc=Generate ", "status=OUT_OF_RANGE"}).size();
    // Connected first, so the flood measures refusals, not connection setup.
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    for (int c = 0; c < kClients; ++c) {
        channels.push_back(server.Channel(/*own_connection=*/true));
        EXPECT_TRUE(WaitUntilServing(channels.back()));
    }
    HealthProbe probe(server);
    std::vector<grpc::Status> got(kClients);
    std::vector<double> client_ms(kClients);
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
        clients.emplace_back([&, c] {
            const auto t0 = std::chrono::steady_clock::now();
            got[static_cast<size_t>(c)] = RawCall(channels[static_cast<size_t>(c)], "/prepack.v1.Prepack/Generate", huge);
            client_ms[static_cast<size_t>(c)] = MsSince(t0);
        });
    }
    for (auto& t : clients) t.join();
    const double slowest = Slowest(&probe);

    for (int c = 0; c < kClients; ++c) {
        const grpc::Status& g = got[static_cast<size_t>(c)];
        EXPECT_EQ(g.error_code(), grpc::StatusCode::OUT_OF_RANGE) << g.error_message();
        EXPECT_EQ(g.error_message().rfind("text: 15728640 bytes", 0), 0u) << g.error_message();
        EXPECT_NE(g.error_message().find("--max-prompt-bytes"), std::string::npos) << g.error_message();
    }
    std::printf("clients: refused after %.0f-%.0f ms (client side: includes sending 15 MB)\n",
                *std::min_element(client_ms.begin(), client_ms.end()),
                *std::max_element(client_ms.begin(), client_ms.end()));
    // Server side, every trial: each refusal within the bound.
    const auto lines = GrepLines(log, {"rpc=Generate ", "status=OUT_OF_RANGE", "--max-prompt-bytes"});
    EXPECT_EQ(lines.size(), lines_before + kClients);
    double server_worst = 0.0;
    for (size_t i = lines_before; i < lines.size(); ++i) {
        const double ms = FieldOf(lines[i], "total_ms");
        EXPECT_GE(ms, 0.0) << lines[i];
        EXPECT_LT(ms, kBoundMs) << lines[i];
        server_worst = std::max(server_worst, ms);
    }
    std::printf("server: slowest refusal %.2f ms after the call arrived\n", server_worst);
    return slowest;
}

TEST(HostileInputTest, HugePromptsAreRefusedAtOnceAndHealthStaysFast) {
    TempPath log("hostile_log");
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1"}, &error,
                                       std::chrono::seconds(60), log.path());
    ASSERT_NE(server, nullptr) << error;
    ASSERT_TRUE(WaitUntilServing(server->Channel()));
    // Serialized once: the clients only send, so the test's own CPU use
    // disturbs the measurement as little as it can.
    const std::string huge = Greedy(std::string(15 << 20, 'a'), 4).SerializeAsString();
    double best = 1e9;
    int trials = 0;
    while (trials < kTrials && best >= kBoundMs) {
        ++trials;
        best = std::min(best, FloodTrial(*server, log.path(), huge));
    }
    EXPECT_LT(best, kBoundMs) << "a health check took longer than " << kBoundMs << " ms in each of " << trials
                              << " trials";
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    EXPECT_EQ(Stats(*stub).finished_by_status().at("OUT_OF_RANGE"), static_cast<uint64_t>(8 * trials));
    // A huge Tokenize is bounded the same way.
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(60)));
    prepack::v1::TokenizeRequest req;
    req.set_text(std::string(15 << 20, 'b'));
    prepack::v1::TokenizeResponse resp;
    const auto t0 = std::chrono::steady_clock::now();
    const grpc::Status s = stub->Tokenize(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE) << s.error_message();
    EXPECT_EQ(s.error_message().rfind("text: 15728640 bytes", 0), 0u) << s.error_message();
    std::printf("tokenize: 15 MB refused after %.0f ms (client side)\n", MsSince(t0));
    EXPECT_TRUE(RunGenerate(*stub, Greedy("still fine", 4)).status.ok());
}

// 4 clients at once: two Generate calls with 4 MB prompts (tokenized on
// their pump threads, then refused for the context), two Tokenize calls of
// 4 MB (on the worker pool). Returns the slowest health check meanwhile.
double TokenizeTrial(const ServerProcess& server, const std::string& text) {
    constexpr int kClients = 4;
    std::vector<std::unique_ptr<prepack::v1::Prepack::Stub>> stubs;
    for (int c = 0; c < kClients; ++c) {
        auto channel = server.Channel(/*own_connection=*/true);
        EXPECT_TRUE(WaitUntilServing(channel));
        stubs.push_back(prepack::v1::Prepack::NewStub(channel));
    }
    HealthProbe probe(server);
    std::vector<grpc::Status> got(kClients);
    std::vector<std::thread> clients;
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < kClients; ++c) {
        clients.emplace_back([&, c] {
            if (c % 2 == 0) {
                got[static_cast<size_t>(c)] = RunGenerate(*stubs[static_cast<size_t>(c)], Greedy(text, 4)).status;
                return;
            }
            grpc::ClientContext ctx;
            ctx.set_deadline(In(std::chrono::seconds(120)));
            prepack::v1::TokenizeRequest req;
            req.set_text(text);
            prepack::v1::TokenizeResponse resp;
            got[static_cast<size_t>(c)] = stubs[static_cast<size_t>(c)]->Tokenize(&ctx, req, &resp);
            if (got[static_cast<size_t>(c)].ok() && resp.token_ids_size() < 100000) {
                got[static_cast<size_t>(c)] = grpc::Status(grpc::StatusCode::INTERNAL, "too few tokens");
            }
        });
    }
    for (auto& t : clients) t.join();
    const double total_ms = MsSince(t0);
    const double slowest = Slowest(&probe);
    for (int c = 0; c < kClients; ++c) {
        const grpc::Status& s = got[static_cast<size_t>(c)];
        if (c % 2 == 0) {
            EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE) << s.error_message();
            EXPECT_NE(s.error_message().find("context length"), std::string::npos) << s.error_message();
        } else {
            EXPECT_TRUE(s.ok()) << s.error_message();
        }
    }
    std::printf("tokenizing 4 x 4 MB took %.0f ms in all\n", total_ms);
    // The trial means something only if tokenizing took long enough for the
    // probe to matter.
    EXPECT_GT(total_ms, 3 * kBoundMs);
    return slowest;
}

// Text within the bound is still tokenized, which takes a while for
// megabytes: that must happen off the threads health checks use. The bound
// is raised here so that 4 MB prompts are tokenized before the context
// check refuses them.
TEST(HostileInputTest, TokenizingLongTextDoesNotDelayHealth) {
    std::string error;
    auto server = ServerProcess::Start(
        {"--model", "synthetic:tiny", "--threads", "1", "--max-prompt-bytes", "8000000"}, &error);
    ASSERT_NE(server, nullptr) << error;
    ASSERT_TRUE(WaitUntilServing(server->Channel()));
    std::string text;
    while (text.size() < (4u << 20)) text += "Once upon a time there was a little fox. ";
    double best = 1e9;
    for (int trial = 0; trial < kTrials && best >= kBoundMs; ++trial) {
        best = std::min(best, TokenizeTrial(*server, text));
    }
    EXPECT_LT(best, kBoundMs) << "a health check took longer than " << kBoundMs << " ms in every trial";
}

}  // namespace
}  // namespace prepackd_test
