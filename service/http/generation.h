// GenerationCall: one HTTP generation request in the engine, from its
// admission slots to its log line. It takes the same interactive slots as
// gRPC's Generate (one per choice: a request for n choices of p prompts
// holds n x p), starts the prepared requests (request_builder.h), reads
// their events on the connection's own thread, cancels them in the engine
// the moment the client goes away (its socket closed, seen within
// kCheckMs, or a write failing) or the server stops them at the end of the
// grace period, and counts and logs the request like a gRPC call.
// Thread-safe only for CancelFromServer(); the rest runs on one thread.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine_host.h"
#include "prepack/prepack.h"
#include "request_log.h"

namespace prepackd::http {

class GenerationCall final : public Cancellable {
public:
    // How often a waiting request looks whether its client is still there.
    static constexpr int64_t kCheckMs = 100;

    // Counts as a running call of `host` (the engine outlives it) from
    // here to the destructor. `client_fd` is the connection's socket
    // (http_transport.h: ConnectionSocket), -1 when unknown.
    GenerationCall(EngineHost* host, std::string id, const char* rpc, std::chrono::steady_clock::time_point received,
                   int client_fd);
    // Cancels what still runs and waits for it to end, releases the slots,
    // and logs the request if Finish() was not called (as CANCELLED).
    ~GenerationCall();
    GenerationCall(const GenerationCall&) = delete;
    GenerationCall& operator=(const GenerationCall&) = delete;

    // `count` interactive admission slots, all or none.
    bool TakeSlots(int count);
    // Starts requests[i] as choice i: one request alone, several in one
    // prepack_generate_batch_start call, so that under --policy batchllm
    // identical prompts (the n choices of one) are computed once.
    grpc::Status Start(const std::vector<prepack_request>& requests);

    // Called for each event of choice `choice`; false when the client is
    // gone (a write failed): every choice is then cancelled.
    using OnEvent = std::function<bool(int choice, const prepack_event& event)>;
    // Reads every choice to its END event: on_token for TOKEN events and
    // on_end for OK ENDs, neither once the client is gone. Returns OK, the
    // first choice's error (the others are then cancelled), CANCELLED when
    // the client left, UNAVAILABLE when the server stopped it.
    grpc::Status Run(const OnEvent& on_token, const OnEvent& on_end);

    // Counts and logs the request with its final status (once).
    void Finish(const grpc::Status& status);
    // The log line's figures; prompt tokens are the caller's to set.
    RequestRecord& record() { return rec_; }

    void CancelFromServer() override;

private:
    // Cancels every started request (any thread).
    void CancelAll();
    // Reads what is left of every stream to its END (bounded) and frees them.
    void DrainAndDestroy();

    EngineHost* const                           host_;
    const std::chrono::steady_clock::time_point received_;
    const int                                   client_fd_;
    RequestRecord                               rec_;
    int                                         slots_ = 0;
    bool                                        finished_ = false;
    bool                                        client_gone_ = false;

    std::mutex                                  mu_;                 // CancelFromServer() vs the rest
    std::vector<prepack_stream*>                streams_;            // guarded by mu_ (for cancel/destroy)
    bool                                        stopped_ = false;    // guarded by mu_: cancel what starts later
    bool                                        server_cancelled_ = false;   // guarded by mu_
};

}  // namespace prepackd::http
