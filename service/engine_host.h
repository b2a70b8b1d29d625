// EngineHost: the one prepack_engine every handler shares, and the service's
// bookkeeping around it: the serving phase (loading, serving, draining), the
// bounded admission of requests (admission.h), the longest prompt worth
// tokenizing (prompt_limit.h), the calls still running (so shutdown can wait
// for them and the engine outlives them), per-status counters and the
// Prometheus metrics (metrics.h).
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "admission.h"
#include "metrics.h"
#include "prepack/prepack.h"
#include "server_options.h"

namespace prepackd {

enum class Phase { kLoading, kServing, kDraining };

// A running call that shutdown can stop once the grace period is over.
class Cancellable {
public:
    virtual void CancelFromServer() = 0;

protected:
    ~Cancellable() = default;
};

class EngineHost {
public:
    explicit EngineHost(const ServerOptions& options);
    // Destroys the engine. Call after WaitCallsEnded() has returned true.
    ~EngineHost();
    EngineHost(const EngineHost&) = delete;
    EngineHost& operator=(const EngineHost&) = delete;

    // Loads the model (blocks for as long as that takes) and, unless a drain
    // began meanwhile, enters kServing. Errors carry the library's code.
    grpc::Status Load(const ServerOptions& options);
    // Stops accepting work: later requests get UNAVAILABLE.
    void BeginDrain();
    Phase phase() const { return phase_.load(); }
    // OK while serving; UNAVAILABLE (loading or draining) otherwise. New
    // generation work needs this.
    grpc::Status CheckServing() const;
    // OK once the model is loaded, draining included; UNAVAILABLE while
    // loading. Queries (stats, tokenizer) need only this.
    grpc::Status CheckLoaded() const;

    // Valid once Load() succeeded; never freed before the host.
    prepack_engine* engine() const { return engine_; }
    const prepack_model_desc& model() const { return model_; }
    // The model's id in OpenAI's API and batch lines (ServedModelId).
    const std::string& model_id() const { return model_id_; }
    Metrics& metrics() const { return *metrics_; }

    // prepack_stream_next() for every handler, gRPC and HTTP alike: the one
    // place the service reads events, so each request's END event is
    // counted in metrics() exactly once, whatever brought the request.
    prepack_status NextEvent(prepack_stream* stream, int64_t timeout_ms, prepack_event* event);

    // A slot per request running or waiting in the engine, whichever
    // protocol brought it (gRPC and HTTP share them).
    Admission& admission() { return admission_; }
    // RESOURCE_EXHAUSTED saying which limit is full: every slot (an
    // interactive request) or the slots batch members may take.
    grpc::Status QueueFull(bool batch) const;
    uint64_t in_flight() const { return admission_.in_flight(); }
    int32_t max_queue() const { return admission_.max_queue(); }
    // Text prompts longer than this are refused before tokenizing
    // (--max-prompt-bytes, or derived from the model). Valid once loaded.
    uint64_t max_prompt_bytes() const { return max_prompt_bytes_; }

    // Calls that run a pump thread: counted from reactor creation to the
    // pump's last instruction, so nothing touches the engine after
    // WaitCallsEnded() returned true.
    void CallStarted();
    void CallEnded();
    bool WaitCallsEnded(std::chrono::steady_clock::time_point deadline);

    // Running calls register so that shutdown can cancel them all.
    void Register(Cancellable* call);
    void Unregister(Cancellable* call);
    void CancelAll();

    uint64_t NextRequestId() { return next_id_.fetch_add(1) + 1; }
    void CountFinished(grpc::StatusCode code);
    std::map<std::string, uint64_t> FinishedByStatus() const;
    double UptimeSeconds() const;

private:
    Admission                             admission_;
    const std::string                     model_id_;
    uint64_t                              max_prompt_bytes_ = 0;   // set once, before loaded_
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::atomic<Phase>                    phase_{Phase::kLoading};
    prepack_engine*                       engine_ = nullptr;   // set once, before loaded_
    prepack_model_desc                    model_{};            // set once, before loaded_
    std::unique_ptr<Metrics>              metrics_;            // set once, before loaded_
    std::atomic<bool>                     loaded_{false};
    std::atomic<uint64_t>                 next_id_{0};

    mutable std::mutex                    mu_;
    std::condition_variable               calls_cv_;
    uint64_t                              calls_ = 0;          // guarded by mu_
    std::set<Cancellable*>                registered_;         // guarded by mu_
    std::map<std::string, uint64_t>       finished_;           // guarded by mu_
};

// The gRPC status for a libprepack status: the codes are the same numbers.
grpc::Status ToGrpc(prepack_status status, const std::string& message);
// The name of a gRPC code, e.g. "DEADLINE_EXCEEDED".
const char* CodeName(grpc::StatusCode code);

}  // namespace prepackd
