// One line per request on stderr: what ops people grep when a client
// complains. Lines from concurrent requests never interleave.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "prepack/prepack.h"

namespace prepackd {

struct RequestRecord {
    std::string   id;               // "17", or "17.3" for item 3 of batch call 17
    const char*   rpc = "";         // "Generate", "GenerateBatch", ...
    int32_t       prompt_tokens = 0;
    int32_t       generated_tokens = 0;
    double        ttft_ms = -1.0;   // < 0: no token was generated
    double        total_ms = -1.0;
    grpc::Status  status;
};

void LogRequest(const RequestRecord& record);

class EngineHost;
// A call refused before it reached the engine, whichever protocol brought
// it: counted in the host's per-status counters and logged, with the time
// since `received` (what the refusal cost).
void LogRefusal(EngineHost* host, const std::string& id, const char* rpc, const grpc::Status& status,
                std::chrono::steady_clock::time_point received);

}  // namespace prepackd
