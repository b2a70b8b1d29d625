// GenerateReactor: one Generate or Chat call. Its pump decodes and checks the
// request and tokenizes the prompt (work that grows with the request, so
// never on a gRPC thread), starts the engine request,
// reads its prepack_stream and pushes a response per token, then a last one
// with the finish reason and usage. Client cancellation and deadlines stop
// the engine request at once (prepack_stream_cancel), which frees its KV
// memory. A Chat call is a Generate call whose prompt is a conversation:
// the pump decodes its ChatRequest into the GenerateRequest it stands for,
// and everything else (checks, limits, events, log, counters) is Generate's.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "engine_host.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"
#include "pumped_writer.h"
#include "request_log.h"

namespace prepackd {

// Which call a GenerateReactor serves: what its request bytes are.
enum class StreamRpc { kGenerate, kChat };

// The method's name, for the log ("Generate", "Chat").
const char* RpcName(StreamRpc rpc);

class GenerateReactor final : public PumpedWriter<prepack::v1::GenerateResponse> {
public:
    // Takes one interactive admission slot of `host` (taken by the caller),
    // which the pump releases when the request ends. `request` is the
    // call's undecoded request (shared, not copied); `received` is when the
    // call arrived (for the log).
    GenerateReactor(EngineHost* host, StreamRpc rpc, std::string id, const grpc::ByteBuffer& request,
                    std::chrono::system_clock::time_point deadline, size_t capacity,
                    std::chrono::steady_clock::time_point received);

private:
    void Pump() override;
    void StopWork() override;
    // Decodes, checks, tokenizes and starts the engine request. False (with
    // *status set) when it cannot start.
    bool Start(grpc::Status* status, int32_t* prompt_tokens);
    // Streams the started request to its end; returns its status.
    grpc::Status Run(RequestRecord* rec);

    // Decodes bytes_ into request_ (a ChatRequest converted).
    grpc::Status Decode();

    const StreamRpc                                    rpc_;
    const std::string                                  id_;
    grpc::ByteBuffer                                   bytes_;      // pump only: the request until decoded
    prepack::v1::GenerateRequest                       request_;    // pump only
    const std::chrono::system_clock::time_point        deadline_;
    const std::chrono::steady_clock::time_point        received_;
    std::mutex                                         stream_mu_;   // StopWork() vs the pump's start and destroy
    prepack_stream*                                    stream_ = nullptr;   // guarded by stream_mu_ for cancel/destroy
    bool                                               stopped_ = false;    // guarded by stream_mu_
};

}  // namespace prepackd
