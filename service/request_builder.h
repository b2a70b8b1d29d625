// Turns a prepack.v1.GenerateRequest into a prepack_request, checking every
// field first so that errors name the field (INVALID_ARGUMENT) and a request
// that cannot fit the context is refused before it reaches the engine
// (OUT_OF_RANGE). The checks come in two steps: CheckRequest is cheap
// (never tokenizes, so handlers on gRPC's threads may call it) and refuses
// text too long to be worth tokenizing; PrepareRequest tokenizes, which can
// take a while, so it runs on a call's own thread.
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

// OUT_OF_RANGE naming `field` when a text of `bytes` bytes is longer than
// max_prompt_bytes.
grpc::Status CheckPromptBytes(uint64_t bytes, const std::string& field, uint64_t max_prompt_bytes);

// Every check that needs no tokenizer: the fields (INVALID_ARGUMENT naming
// the field; `field_prefix` goes before field names, e.g. "requests[3]."
// inside a batch) and the text's size (OUT_OF_RANGE past max_prompt_bytes).
grpc::Status CheckRequest(const prepack::v1::GenerateRequest& in, const std::string& field_prefix,
                          const prepack_model_desc& model, uint64_t max_prompt_bytes);

// CheckRequest, then tokenizes and fills *out. `deadline` is the call's
// deadline (system_clock::time_point::max() for none); the time left goes to
// the engine as deadline_ms. Returns CheckRequest's errors, OUT_OF_RANGE when
// the prompt plus max_tokens exceed the context, or DEADLINE_EXCEEDED when
// the deadline already passed.
grpc::Status PrepareRequest(const prepack::v1::GenerateRequest& in, const std::string& field_prefix,
                            const prepack_engine* engine, const prepack_model_desc& model, uint64_t max_prompt_bytes,
                            std::chrono::system_clock::time_point deadline, PreparedRequest* out);

// Tokenizes UTF-8 text through the C ABI (growing the buffer as it asks).
grpc::Status TokenizeText(const prepack_engine* engine, const std::string& text, bool add_bos, bool parse_special,
                          std::vector<int32_t>* ids);

}  // namespace prepackd
