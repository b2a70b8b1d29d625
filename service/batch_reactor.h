// BatchReactor: one GenerateBatch call. Its pump submits the requests with
// prepack_generate_batch_start, as many at once as admission slots allow (so
// the engine's BatchLLM policy groups them by shared prefix), reads every
// running stream, and pushes each
// result as soon as its request finishes, tagged with the request's index.
// A request that fails (bad field, deadline) gets its status in its own
// result; the others go on.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "engine_host.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"
#include "pumped_writer.h"

namespace prepackd {

class BatchReactor final : public PumpedWriter<prepack::v1::GenerateBatchResponse> {
public:
    // `request` is gRPC's and stays valid until this call finishes, which
    // happens only after the pump is done with it. The caller has taken one
    // admission slot of `host` for the first request.
    BatchReactor(EngineHost* host, std::string id, const prepack::v1::GenerateBatchRequest* request,
                 std::chrono::system_clock::time_point deadline, size_t capacity);

private:
    struct Running {
        uint32_t                    index = 0;
        prepack_stream*             stream = nullptr;
        prepack::v1::GenerateResult result;
    };

    void Pump() override;
    void StopWork() override;
    // Submits requests while slots are free; `have_slot` is a slot taken
    // already. Requests that cannot start are answered at once.
    void Submit(bool* have_slot);
    // Reads one event of `run` (waiting up to timeout_ms). True when it
    // ended the request, whose result is then pushed.
    bool ReadOne(Running* run, int64_t timeout_ms, bool* got_event);
    // Reads every event `run` has (the first wait up to first_timeout_ms).
    // True when the request ended.
    bool Drain(Running* run, int64_t first_timeout_ms, bool* got_event);
    // Frees running_[k]'s stream and slot and pushes its result.
    void Complete(size_t k);
    void Answer(uint32_t index, prepack::v1::GenerateResult result, int32_t prompt_tokens);
    // Frees the request's admission slot and answers it with `status`.
    void AnswerError(uint32_t index, const grpc::Status& status, int32_t prompt_tokens);

    const std::string                           id_;
    const prepack::v1::GenerateBatchRequest*    request_;
    const std::chrono::system_clock::time_point deadline_;
    int                                         next_ = 0;       // pump only: next request to submit
    std::mutex                                  streams_mu_;     // StopWork() vs the pump
    std::vector<Running>                        running_;        // guarded by streams_mu_ (pump reads freely)
    bool                                        stopped_ = false;   // guarded by streams_mu_
};

}  // namespace prepackd
