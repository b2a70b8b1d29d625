// OpenAI's response shapes: the error envelope and the HTTP status of each
// gRPC-style status the shared code returns, usage, finish reasons, and the
// log-probs of /v1/chat/completions and of the legacy /v1/completions.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "http/openai_request.h"
#include "prepack/prepack.h"

namespace prepackd::http {

// An error as OpenAI sends it: the HTTP status and
// {"error": {"message", "type", "param", "code"}}.
struct HttpError {
    int  status = 500;
    Json body;
    int  retry_after_s = 0;   // > 0: a Retry-After header (429)
};

// The HTTP error for a status (never OK):
//   INVALID_ARGUMENT, FAILED_PRECONDITION  400 invalid_request_error
//   OUT_OF_RANGE                           400 invalid_request_error, code context_length_exceeded
//   UNAUTHENTICATED                        401 authentication_error, code invalid_api_key
//   NOT_FOUND                              404 invalid_request_error, code model_not_found
//   RESOURCE_EXHAUSTED                     429 rate_limit_error (Retry-After: 1), unless `http_status` says otherwise
//   UNAVAILABLE                            503 server_error, code service_unavailable
//   anything else                          500 server_error
// `param` is the field a "FIELD: why" message names (null otherwise).
// `http_status` > 0 overrides the status (the type follows it).
HttpError ToHttpError(const grpc::Status& status, int http_status = 0);
// The envelope itself; empty param or code become null.
Json ErrorBody(const std::string& message, const std::string& type, const std::string& param,
               const std::string& code);

// "stop" (a stop string, or the model's end of text), "length".
const char* FinishReasonName(prepack_finish_reason reason);

// A generated token's log-prob and its alternatives, as an event gives them.
struct TokenLogprob {
    int32_t                               token = 0;
    float                                 logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> top;
    static TokenLogprob From(const prepack_event& event);
};

// Token ids -> the bytes each stands for (prepack_detokenize of the id
// alone), cached: the "token" strings of log-probs.
class Pieces {
public:
    explicit Pieces(const prepack_engine* engine) : engine_(engine) {}
    const std::string& Bytes(int32_t id);
    // The piece as JSON text (U+FFFD for bytes that are not UTF-8 alone).
    std::string Text(int32_t id);

private:
    const prepack_engine*                    engine_;
    std::unordered_map<int32_t, std::string> cache_;
};

// Chat's shape: {"content": [{"token", "logprob", "bytes", "top_logprobs":
// [{"token", "logprob", "bytes"}]}], "refusal": null}.
Json ChatLogprobs(const std::vector<TokenLogprob>& tokens, Pieces& pieces);
// The legacy shape: {"tokens", "token_logprobs", "top_logprobs": [{TOKEN:
// LOGPROB}], "text_offset"}; offsets count characters from `offset`.
Json CompletionLogprobs(const std::vector<TokenLogprob>& tokens, Pieces& pieces, size_t* offset);

// Usage of a whole request.
struct UsageTotals {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t cached_tokens = 0;
    int64_t reasoning_tokens = 0;
};
Json UsageJson(const UsageTotals& u);

// Characters (code points) of UTF-8 text, as Python's len() counts them.
size_t CodePoints(std::string_view utf8);

// A fresh id: PREFIX followed by 24 random hex digits.
std::string NewId(const char* prefix);

}  // namespace prepackd::http
