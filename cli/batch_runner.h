// Runs an offline batch through the engine and hands back each request's
// result as soon as it finishes, with progress on stderr. Shared by
// `prepack batch` and `prepack bench batch`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/engine/engine.h"

namespace prepack::cli {

struct BatchResult {
    std::vector<int32_t> tokens;
    std::string          text;
    FinishReason         finish_reason = FinishReason::kError;
    absl::Status         status;
    Usage                usage;
};

struct BatchRunStats {
    double   seconds = 0.0;
    uint64_t peak_kv_bytes = 0;    // most KV in use at any sampled moment
};

// Submits `requests` as one batch (Engine::SubmitBatch) and calls
// `on_result(i, result)` on this thread as each one ends, in finishing
// order. `show_progress` draws "done/total, tokens/s, ETA" on stderr.
// `on_token(i, event)`, when given, sees each TOKEN event first (what a
// result does not keep: log-probs, reasoning).
BatchRunStats RunBatch(Engine& engine, std::vector<Request> requests,
                       const std::function<void(size_t, BatchResult)>& on_result, bool show_progress,
                       const std::function<void(size_t, const Event&)>& on_token = {});

// The closing line on stderr: how much of the prompts the engine computed
// (what prefix sharing saved) and how many of the `what` (requests, lines)
// failed.
void PrintBatchSummary(const EngineStats& stats, size_t failed, const char* what);

}  // namespace prepack::cli
