// Metrics: prepackd's Prometheus series, served as text (format 0.0.4) by
// GET /metrics on the HTTP port. vLLM's names with a prepack_ prefix instead
// of vllm: and vLLM's histogram buckets, so its dashboards port by renaming;
// plus what only prepack has: how full prefill steps are packed, LazyLLM's
// pruned token-layers, prompt tokens shared through BatchLLM groups or the
// prefix cache. Every series carries vLLM's model_name label.
//
// Two sources, neither a second copy of the other:
//   - the engine's counters: one prepack_engine_stats() snapshot per scrape,
//     the same numbers GetStats reports (Render());
//   - each request's END event, whichever protocol brought it (gRPC
//     Generate, Chat, GenerateBatch or HTTP: EngineHost::NextEvent is the
//     one place the service reads events), for the per-request histograms
//     and the finish-reason counter (ObserveEnd()).
// prometheus-cpp's core holds the per-request series and writes the text
// (its TextSerializer); its own HTTP exposer is not used.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "prepack/prepack.h"

namespace prometheus {
class Counter;
class Histogram;
class Registry;
}  // namespace prometheus

namespace prepackd {

class Metrics {
public:
    // `model_name`: the model_name label (the id HTTP clients use);
    // `max_model_len`: the context, the top of the token-count buckets.
    Metrics(const std::string& model_name, int32_t max_model_len);
    ~Metrics();
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    // Counts one request's END event. Thread-safe.
    void ObserveEnd(const prepack_event& end);
    // Requests ended so far by finished_reason ("stop", "length", "abort",
    // "error"): prepack_request_success_total, for GetStats.
    std::map<std::string, uint64_t> FinishedByReason() const;
    // Every series as Prometheus text: the engine's from `engine`, then the
    // per-request ones. Thread-safe.
    std::string Render(const prepack_stats& engine) const;

    // What the text's Content-Type is.
    static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

private:
    const std::string                          model_name_;
    std::shared_ptr<prometheus::Registry>      registry_;
    std::map<std::string, prometheus::Counter*> success_;   // by finished_reason, all made up front
    prometheus::Histogram*                     ttft_ = nullptr;
    prometheus::Histogram*                     tpot_ = nullptr;
    prometheus::Histogram*                     e2e_ = nullptr;
    prometheus::Histogram*                     queue_ = nullptr;
    prometheus::Histogram*                     inference_ = nullptr;
    prometheus::Histogram*                     prefill_ = nullptr;
    prometheus::Histogram*                     decode_ = nullptr;
    prometheus::Histogram*                     prompt_tokens_ = nullptr;
    prometheus::Histogram*                     generation_tokens_ = nullptr;
};

// vLLM's finished_reason for a finish reason: EOS and stop strings "stop",
// "length", cancelled "abort", failed (a deadline included) "error".
const char* FinishedReason(prepack_finish_reason reason);

}  // namespace prepackd
