// Small synchronous client helpers shared by the integration tests.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "prepack/v1/prepack.grpc.pb.h"
#include "server_process.h"

namespace prepackd_test {

// Everything one Generate call returned.
struct Generated {
    std::vector<int32_t>                   ids;
    std::string                            text;
    std::string                            reasoning;   // chat: the thinking, apart from text
    std::vector<prepack::v1::TokenLogprob> logprobs;
    prepack::v1::FinishReason              finish = prepack::v1::FINISH_REASON_UNSPECIFIED;
    prepack::v1::Usage                     usage;
    int                                    messages = 0;
    bool                                   tokens_after_finish = false;   // a protocol error
    grpc::Status                           status;
};

// A greedy request for `text` (or for `ids` taken as given).
prepack::v1::GenerateRequest Greedy(const std::string& text, int max_tokens);
prepack::v1::GenerateRequest GreedyIds(const std::vector<int32_t>& ids, int max_tokens);

// Runs one Generate call to its end (at most `timeout`). `token` adds
// "authorization: Bearer <token>".
// wait_for_ready: the call waits (until its deadline) for a connection that
// is still being set up instead of failing fast; load tests open many.
Generated RunGenerate(prepack::v1::Prepack::Stub& stub, const prepack::v1::GenerateRequest& request,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120), const std::string& token = "",
                      bool wait_for_ready = false);

// Runs one Chat call to its end, as RunGenerate does.
// Greedy tokens of one request computed two ways (its prompt's start read
// from a shared prefix's KV, or all its own): equal, or equal up to a token
// where `alone` (run with top_logprobs >= 2) had its best two candidates
// within `gap` of each other and `got` took the other one: a near-tie that
// the other kernels' rounding may tip (it did on an AVX2 Debug build).
// Nothing after that token is compared.
// Runs a GenerateBatch to its end (2 minutes at most): each result by index.
grpc::Status RunBatch(prepack::v1::Prepack::Stub& stub, const prepack::v1::GenerateBatchRequest& batch,
                      std::map<uint32_t, prepack::v1::GenerateResult>* results);

bool SameUpToANearTie(const std::vector<int32_t>& got, const Generated& alone, float gap, std::string* why);

Generated RunChat(prepack::v1::Prepack::Stub& stub, const prepack::v1::ChatRequest& request,
                  std::chrono::milliseconds timeout = std::chrono::seconds(120));

// GetStats, failing the current test on error.
prepack::v1::Stats Stats(prepack::v1::Prepack::Stub& stub);

// Polls GetStats (every 20 ms, up to `timeout`) until `done(stats)`; returns
// the last stats seen.
template <typename Pred>
prepack::v1::Stats WaitForStats(prepack::v1::Prepack::Stub& stub, Pred done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    prepack::v1::Stats s = Stats(stub);
    while (!done(s) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        s = Stats(stub);
    }
    return s;
}

// The health status of `service` ("" = the server), or UNKNOWN on error.
grpc::health::v1::HealthCheckResponse::ServingStatus HealthOf(const std::shared_ptr<grpc::Channel>& channel,
                                                              const std::string& service = "");

// Waits (polling, up to 10 s) until the server reports SERVING. False if it never does.
bool WaitUntilServing(const std::shared_ptr<grpc::Channel>& channel);

// A prepackd on synthetic:tiny with one thread (plus `extra` flags), serving
// when returned; null (with a test failure) when it did not start.
std::unique_ptr<ServerProcess> StartTiny(std::vector<std::string> extra = {});
// The same on `model` (a GGUF path or synthetic:NAME).
std::unique_ptr<ServerProcess> StartModel(const std::string& model, std::vector<std::string> extra = {});

// One call of `method` ("/prepack.v1.Prepack/Generate") whose request is
// `request` exactly as given: a GenericStub serializes nothing, so the bytes
// may be anything (invalid UTF-8 in a string field, garbage). Fills
// *responses (raw) when given. Works for unary and streaming methods alike.
grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& request, std::vector<std::string>* responses = nullptr,
                     const std::string& token = "", std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A file name under /tmp, unique to this process and `stem`; the file is
// removed when this goes.
class TempPath {
public:
    explicit TempPath(const std::string& stem);
    ~TempPath();
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// The lines of the file at `path` that contain every one of `parts`.
std::vector<std::string> GrepLines(const std::string& path, const std::vector<std::string>& parts);

// The number after "KEY=" in `line` (e.g. total_ms), or -1.
double FieldOf(const std::string& line, const std::string& key);

// Four conversations for a chat model's batch tests: one long system prompt
// and a question each. Their greedy answers on SmolLM2-135M-Instruct have
// clear margins, so they survive the rounding that computing the shared
// prefix apart changes (another system prompt may hit a near tie).
inline const std::string kLibrarySystem =
    "You are a careful assistant for a small library. You answer questions about opening hours, "
    "borrowing rules and events. Keep every answer short, friendly and exact. If you do not know "
    "something, say so and suggest asking the front desk. Never invent events or rules.";
inline const std::vector<std::string> kLibraryQuestions = {"When do you open on Mondays?",
                                                           "How many books can I borrow?", "Is there a reading club?",
                                                           "Can I renew a loan online?"};

// A deadline `d` from now.
std::chrono::system_clock::time_point In(std::chrono::milliseconds d);

}  // namespace prepackd_test
