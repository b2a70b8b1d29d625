// BatchReactor: one GenerateBatch call. Its pump submits the requests in
// index order with prepack_generate_batch_start, as many at once as the
// call's window of admission slots allows (admission.h: so interactive
// calls keep room; the engine's BatchLLM policy groups what is submitted
// together by shared prefix), submits more as earlier ones finish, reads
// every running stream, and pushes each result as soon as its request
// finishes, tagged with the request's index. A request that fails (bad
// field, deadline) gets its status in its own result; the others go on.
// The call itself ends OK, or DEADLINE_EXCEEDED once its deadline cut any
// request short (a client must not read an expired batch as a success).
// A call of OpenAI batch lines (openai_batch_lines) runs the same way, a
// line's choices as its members (http/batch_lines.h: all of a line's slots
// are taken at once), and answers each line with its output line.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "engine_host.h"
#include "http/batch_lines.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"
#include "pumped_writer.h"

namespace prepackd {

class BatchReactor final : public PumpedWriter<prepack::v1::GenerateBatchResponse> {
public:
    // The caller has taken one batch admission slot of `host` for the
    // first request. `request` is the call's undecoded request (shared, not
    // copied): the pump decodes it, since that grows with the batch.
    BatchReactor(EngineHost* host, std::string id, const grpc::ByteBuffer& request,
                 std::chrono::system_clock::time_point deadline, size_t capacity);

private:
    struct Running {
        uint32_t                    index = 0;
        size_t                      choice = 0;        // of an OpenAI batch line
        bool                        logprobs = false;  // keep the tokens' log-probs
        prepack_stream*             stream = nullptr;
        prepack::v1::GenerateResult result;
    };
    // A member about to start: what Running needs, and the log's prompt tokens.
    struct Starting {
        uint32_t index = 0;
        size_t   choice = 0;
        bool     logprobs = false;
        int32_t  prompt_tokens = 0;
    };

    void Pump() override;
    void StopWork() override;
    // Decodes the request: INVALID_ARGUMENT when it is not protobuf or empty.
    grpc::Status Decode();
    // Frees the spare slot, logs the call's own line and ends the call.
    void End(const grpc::Status& final);
    // Submits requests while the window has room and slots are free.
    // Requests that cannot start are answered at once.
    void Submit();
    // Prepares OpenAI batch line `index` into *starting and *requests, or
    // answers it when it cannot run. False when its slots are not free yet.
    bool SubmitLine(uint32_t index, std::vector<Starting>* starting, std::vector<prepack_request>* requests);
    // A slot for the next request: the spare one, or a new one within the window.
    bool TakeSlot();
    // `n` slots, all or none.
    bool TakeSlots(int n);
    void ReleaseSlot();
    // Reads one event of `run` (waiting up to timeout_ms). True when it
    // ended the request, whose result is then pushed.
    bool ReadOne(Running* run, int64_t timeout_ms, bool* got_event);
    // Reads every event `run` has (the first wait up to first_timeout_ms).
    // True when the request ended.
    bool Drain(Running* run, int64_t first_timeout_ms, bool* got_event);
    // Frees running_[k]'s stream and slot and pushes its result.
    void Complete(size_t k);
    // Logs and counts a finished member; pushes its result, or for an
    // OpenAI batch line its output line once the line is done.
    void Answer(uint32_t index, prepack::v1::GenerateResult result, int32_t prompt_tokens, size_t choice = 0);
    // Frees the request's admission slot and answers it with `status`.
    // `prompt_tokens` is what the log reports.
    void AnswerError(uint32_t index, const grpc::Status& status, int32_t prompt_tokens, size_t choice = 0);
    // Answers an OpenAI batch line that cannot run.
    void AnswerLine(uint32_t index, http::BatchLines::Refusal refusal);

    const std::string                                        id_;
    grpc::ByteBuffer                                         bytes_;        // pump only: the request until decoded
    prepack::v1::GenerateBatchRequest                        request_;      // pump only
    int                                                      count_ = 0;    // pump only: requests or lines
    std::unique_ptr<http::BatchLines>                        lines_;        // pump only: when the call has lines
    const std::chrono::system_clock::time_point              deadline_;
    const int32_t                                            window_;       // slots this call may hold
    int                                         next_ = 0;       // pump only: next request to submit
    int32_t                                     held_ = 1;       // pump only: slots held (the handler's first)
    bool                                        spare_ = true;   // pump only: a held slot no request uses yet
    bool                                        expired_ = false;   // pump only: a request hit the deadline
    int32_t                                     generated_ = 0;     // pump only: tokens of every result
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::mutex                                  streams_mu_;     // StopWork() vs the pump
    std::vector<Running>                        running_;        // guarded by streams_mu_ (pump reads freely)
    bool                                        stopped_ = false;   // guarded by streams_mu_
};

}  // namespace prepackd
