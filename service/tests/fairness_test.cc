// Fair admission: while one client's 3,000-request GenerateBatch runs, 30
// interactive Generate calls all succeed (before the admission window,
// 19-21 of 28 were refused RESOURCE_EXHAUSTED: the batch took every one of
// the 256 slots). The batch holds at most its window of slots
// (--batch-share), interactive calls keep their reserve
// (--interactive-reserve), and every batch member still comes back exactly
// once. Default flags: what a deployment gets.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

constexpr int kBatch = 3000;
constexpr int kInteractive = 30;
constexpr uint64_t kWindow = 128;   // --batch-share 0.5 of --max-queue 256 (the defaults)

std::vector<std::string> ModelArgs() {
    // stories260K is the fastest real model; synthetic:tiny works too, slower.
    const std::string stories = std::string(PREPACK_MODELS_DIR) + "/stories260K/stories260K.gguf";
    if (std::filesystem::exists(stories)) return {"--model", stories};
    return {"--model", "synthetic:tiny"};
}

// What one run saw.
struct Outcome {
    int      interactive_ok = 0;
    int      interactive_exhausted = 0;   // RESOURCE_EXHAUSTED
    uint64_t batch_peak = 0;              // slots in flight with the batch alone
};

// Starts a server (with `extra` flags), runs the 3000-request batch, and
// once it holds `window` slots, the 30 interactive calls. Checks the batch
// (every member once, all OK) whatever happens to the interactive calls.
Outcome RunScenario(const std::vector<std::string>& extra, uint64_t window) {
    Outcome out;
    std::vector<std::string> args = ModelArgs();
    args.insert(args.end(), {"--threads", "2"});
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    auto server = ServerProcess::Start(args, &error);
    EXPECT_NE(server, nullptr) << error;
    if (server == nullptr || !WaitUntilServing(server->Channel())) return out;
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());

    // The batch: 3000 short greedy requests, read on their own thread.
    prepack::v1::GenerateBatchRequest batch;
    for (int i = 0; i < kBatch; ++i) {
        prepack::v1::GenerateRequest r = Greedy("Once upon a time, " + std::to_string(i), 4);
        r.mutable_sampling()->set_ignore_eos(true);
        *batch.add_requests() = r;
    }
    std::vector<int> seen(kBatch, 0);
    std::atomic<int> results{0}, failed_members{0};
    grpc::Status batch_status;
    std::thread batch_client([&] {
        auto own = prepack::v1::Prepack::NewStub(server->Channel(/*own_connection=*/true));
        grpc::ClientContext ctx;
        ctx.set_deadline(In(std::chrono::seconds(600)));
        auto reader = own->GenerateBatch(&ctx, batch);
        prepack::v1::GenerateBatchResponse resp;
        while (reader->Read(&resp)) {
            if (resp.index() < kBatch) ++seen[resp.index()];
            if (resp.result().status_code() != 0 || resp.result().token_ids_size() != 4) failed_members++;
            results++;
        }
        batch_status = reader->Finish();
    });

    // Wait until the batch fills its window; it never holds more.
    uint64_t batch_peak = 0;
    const auto filled = WaitForStats(
        *stub,
        [&](const auto& s) {
            batch_peak = std::max(batch_peak, s.in_flight());
            return s.in_flight() >= window;
        },
        std::chrono::seconds(60));
    EXPECT_EQ(filled.in_flight(), window) << "the batch should hold exactly its window of slots";
    EXPECT_EQ(filled.max_queue(), 256u);

    // 30 interactive calls at once, each on its own connection.
    std::vector<Generated> got(kInteractive);
    std::vector<std::thread> clients;
    for (int c = 0; c < kInteractive; ++c) {
        clients.emplace_back([&, c] {
            auto own = prepack::v1::Prepack::NewStub(server->Channel(/*own_connection=*/true));
            got[static_cast<size_t>(c)] = RunGenerate(*own, Greedy("Hello " + std::to_string(c), 4),
                                                      std::chrono::seconds(120), "", /*wait_for_ready=*/true);
        });
    }
    // While they run, the batch stays within its window: at most the
    // window plus the interactive calls hold slots.
    uint64_t mixed_peak = 0;
    std::atomic<bool> clients_done{false};
    std::thread sampler([&] {
        auto own = prepack::v1::Prepack::NewStub(server->Channel());
        while (!clients_done.load()) {
            mixed_peak = std::max(mixed_peak, Stats(*own).in_flight());
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    for (auto& t : clients) t.join();
    const int results_when_interactive_done = results.load();
    clients_done.store(true);
    sampler.join();

    for (const Generated& g : got) {
        out.interactive_ok += g.status.ok() && !g.ids.empty();
        out.interactive_exhausted += g.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
    }
    out.batch_peak = batch_peak;
    // The test means something only if the batch was still running.
    EXPECT_LT(results_when_interactive_done, kBatch) << "the batch ended before the interactive calls did";
    EXPECT_LE(mixed_peak, window + kInteractive);

    batch_client.join();
    EXPECT_TRUE(batch_status.ok()) << batch_status.error_message();
    EXPECT_EQ(results.load(), kBatch);
    EXPECT_EQ(failed_members.load(), 0);
    int once = 0;
    for (int n : seen) once += n == 1;
    EXPECT_EQ(once, kBatch) << "every member must come back exactly once";
    std::printf("fairness: batch peak %llu slots, with interactive calls %llu; %d of %d interactive calls OK, %d "
                "RESOURCE_EXHAUSTED, while the batch had %d of %d results\n",
                static_cast<unsigned long long>(batch_peak), static_cast<unsigned long long>(mixed_peak),
                out.interactive_ok, kInteractive, out.interactive_exhausted, results_when_interactive_done, kBatch);
    const auto idle = WaitForStats(*stub, [](const auto& s) { return s.in_flight() == 0; }, std::chrono::seconds(10));
    EXPECT_EQ(idle.in_flight(), 0u);
    return out;
}

TEST(FairnessTest, InteractiveCallsSucceedDuringAHugeBatch) {
    const Outcome o = RunScenario({}, kWindow);   // the defaults
    EXPECT_EQ(o.interactive_ok, kInteractive);
    EXPECT_EQ(o.interactive_exhausted, 0);
    EXPECT_EQ(o.batch_peak, kWindow);
}

// The control: with the window and the reserve switched off, the batch
// takes every slot again and interactive calls are refused, as before the
// fix. So the test above fails without them.
TEST(FairnessTest, WithoutWindowAndReserveTheBatchCrowdsInteractiveCallsOut) {
    const Outcome o = RunScenario({"--batch-share", "1", "--interactive-reserve", "0"}, 256);
    EXPECT_GT(o.interactive_exhausted, 0);
    EXPECT_LT(o.interactive_ok, kInteractive);
}

}  // namespace
}  // namespace prepackd_test
