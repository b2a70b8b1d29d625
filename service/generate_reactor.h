// GenerateReactor: one Generate call. Its pump reads the request's
// prepack_stream and pushes a response per token, then a last one with the
// finish reason and usage. Client cancellation and deadlines stop the engine
// request at once (prepack_stream_cancel), which frees its KV memory.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "engine_host.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"
#include "pumped_writer.h"

namespace prepackd {

class GenerateReactor final : public PumpedWriter<prepack::v1::GenerateResponse> {
public:
    // Takes ownership of `stream` (already started) and of one admission
    // slot of `host`, which the pump releases when the request ends.
    GenerateReactor(EngineHost* host, std::string id, prepack_stream* stream, bool logprobs,
                    std::chrono::system_clock::time_point deadline, size_t capacity);

private:
    void Pump() override;
    void StopWork() override;

    const std::string                           id_;
    const bool                                  logprobs_;
    const std::chrono::system_clock::time_point deadline_;
    std::mutex                                  stream_mu_;   // StopWork() vs the pump's destroy
    prepack_stream*                             stream_;      // guarded by stream_mu_ for cancel/destroy
};

}  // namespace prepackd
