// Turns a prepack.v1.GenerateRequest into a prepack_request, checking every
// field first so that errors name the field (INVALID_ARGUMENT) and a request
// that cannot fit the context is refused before it reaches the engine
// (OUT_OF_RANGE).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>
#include <vector>

#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"

namespace prepackd {

// A prepack_request and the storage its pointers borrow. Not copyable or
// movable: `request` points into the object itself.
class PreparedRequest {
public:
    PreparedRequest() { prepack_request_init(&request); }
    PreparedRequest(const PreparedRequest&) = delete;
    PreparedRequest& operator=(const PreparedRequest&) = delete;

    prepack_request          request;
    std::vector<int32_t>     prompt_ids;   // the prompt, tokenized here so its length is known
    std::vector<std::string> stop;
    std::vector<const char*> stop_ptrs;
    std::string              lazy_schedule;
};

// Validates `in` and fills *out. `field_prefix` is put before field names in
// messages (e.g. "requests[3]." inside a batch). `deadline` is the call's
// deadline (system_clock::time_point::max() for none); the time left goes to
// the engine as deadline_ms. Returns INVALID_ARGUMENT naming the field,
// OUT_OF_RANGE when the prompt plus max_tokens exceed the context, or
// DEADLINE_EXCEEDED when the deadline already passed.
grpc::Status PrepareRequest(const prepack::v1::GenerateRequest& in, const std::string& field_prefix,
                            const prepack_engine* engine, const prepack_model_desc& model,
                            std::chrono::system_clock::time_point deadline, PreparedRequest* out);

// Tokenizes UTF-8 text through the C ABI (growing the buffer as it asks).
grpc::Status TokenizeText(const prepack_engine* engine, const std::string& text, bool add_bos, bool parse_special,
                          std::vector<int32_t>* ids);

}  // namespace prepackd
