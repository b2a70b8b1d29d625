// OpenAI's response shapes as prepackd fills them: the shapes themselves
// (bodies, usage, log-probs, the error envelope and its HTTP status) are
// the openai library's (openai/response.h), shared with `prepack batch`;
// here is what ties them to gRPC's status and to the C ABI's events and
// detokenizer.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <vector>

#include "openai/response.h"
#include "prepack/prepack.h"

namespace prepackd::http {

using prepack::openai::ChatLogprobs;
using prepack::openai::Choice;
using prepack::openai::CodePoints;
using prepack::openai::CompletionLogprobs;
using prepack::openai::ErrorBody;
using prepack::openai::HttpError;
using prepack::openai::NewId;
using prepack::openai::Pieces;
using prepack::openai::ResponseHead;
using prepack::openai::TokenLogprob;
using prepack::openai::UsageJson;

// openai::ToHttpError of a gRPC status.
HttpError ToHttpError(const grpc::Status& status, int http_status = 0);

// "stop" (a stop string, or the model's end of text), "length".
const char* FinishReasonName(prepack_finish_reason reason);

// A TOKEN event's log-prob and its alternatives.
TokenLogprob LogprobOf(const prepack_event& event);
// echo + logprobs: the prompt's tokens, `first` (unscored) then those the
// first TOKEN event scored (prompt_logprobs).
std::vector<TokenLogprob> PromptLogprobs(int32_t first, const prepack_event& event);

// A choice's END event: its finish reason, usage and tool calls.
void EndChoice(const prepack_event& end, Choice* choice);

// A TOKEN event's tool-call deltas.
std::vector<prepack::openai::ToolCallDelta> ToolCallDeltas(const prepack_event& event);

// The engine's pieces: each id through prepack_detokenize alone.
Pieces EnginePieces(const prepack_engine* engine);

}  // namespace prepackd::http
