// An OpenAI request (openai/request.h) as the engine runs it in `prepack
// batch`, and the engine's events back into the choices of its response
// (openai/response.h): the CLI's side of what prepackd's HTTP API does
// through the C ABI, so a batch line gets the answer HTTP would give.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/batch_runner.h"
#include "core/engine/engine.h"
#include "openai/request.h"
#include "openai/response.h"

namespace prepack::cli {

// The engine requests of one OpenAI request: one per choice (choice k is
// choice k % n of prompt k / n), sampling with seed + k.
struct EngineRequests {
    std::vector<Request>     requests;
    std::vector<std::string> echo;          // per prompt: what an echo puts first
    std::vector<int32_t>     first_token;   // per prompt: its first id (echo + logprobs leaves it unscored)
};

// Chat messages go through the model's chat template (Request::chat, so the
// engine groups conversations by their rendered tokens); a chat request
// without max_tokens gets what the context leaves. Fails as the HTTP API
// does: OUT_OF_RANGE when prompt plus max_tokens exceed the context,
// FAILED_PRECONDITION without a chat template, INVALID_ARGUMENT naming the
// field for a bad conversation.
absl::StatusOr<EngineRequests> ToEngineRequests(const openai::ApiRequest& request, const Engine& engine,
                                                uint64_t seed);

// A TOKEN event into its choice: reasoning, log-probs when asked for (and
// with echo + logprobs, on the first token, the prompt's after
// `first_token`). The text comes with the result.
void AddToken(const openai::ApiRequest& request, const Event& event, int32_t first_token, openai::Choice* choice);

// A finished request into its choice (text, finish reason, usage); its
// status, OK or why it failed.
absl::Status EndChoice(const BatchResult& result, openai::Choice* choice);

}  // namespace prepack::cli
