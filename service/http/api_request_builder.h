// An OpenAI request (openai_request.h) prepared for the engine: every prompt
// through gRPC's own request building (request_builder.h: checks,
// tokenizing or chat rendering, the context check), plus what only
// OpenAI's API asks: a chat request without max_tokens gets what the
// context leaves, completions' echo text, and one engine request per
// choice. The HTTP API and GenerateBatch's OpenAI batch lines share it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "http/openai_request.h"
#include "prepack/prepack.h"
#include "request_builder.h"

namespace prepackd::http {

struct PreparedApiRequest {
    std::vector<std::unique_ptr<PreparedRequest>> prompts;   // per prompt; they borrow the ApiRequest's strings
    std::vector<std::string>                      echo;      // per prompt, with echo: the text it puts first
    int32_t                                       prompt_tokens = 0;   // every prompt's, once

    // One engine request per choice of n per prompt: choice k is choice
    // k % n of prompt k / n, sampling with seed + k (greedy choices are the
    // same whatever the seed).
    std::vector<prepack_request> Choices(int n, uint64_t seed) const;
    // The first id of prompt p's prompt (echo + logprobs leaves it unscored).
    int32_t FirstToken(size_t p) const;
};

// Prepares every prompt of `request` (its GenerateRequests, which *out then
// borrows); errors carry the request's JSON names (WithJsonNames).
// `deadline` as PrepareRequest takes it.
grpc::Status PrepareApiRequest(ApiRequest& request, const prepack_engine* engine, const prepack_model_desc& model,
                               uint64_t max_prompt_bytes, std::chrono::system_clock::time_point deadline,
                               PreparedApiRequest* out);

// Ids -> their text through the C ABI (invalid UTF-8 as U+FFFD).
grpc::Status DetokenizeIds(const prepack_engine* engine, const std::vector<int32_t>& ids, std::string* out);

}  // namespace prepackd::http
