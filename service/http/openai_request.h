// OpenAI request bodies -> the prepack.v1.GenerateRequest each prompt stands
// for, so that HTTP requests run through the same request building, checks,
// chat rendering, admission and counters as gRPC's (request_builder.h).
// Every field OpenAI's API reference defines for /v1/chat/completions and
// /v1/completions is either implemented or refused INVALID_ARGUMENT naming
// it; so is any field it does not define, except prepack's extensions
// (top_k, min_p, repetition_penalty, ignore_eos, chat_template_kwargs,
// add_generation_prompt, lazy, lazy_schedule, lazy_keep_ratio,
// lazy_revive_limit). Nothing is silently ignored.
//
// Errors are grpc::Status, INVALID_ARGUMENT (or NOT_FOUND for the model)
// with messages "FIELD: why", FIELD in the request's own JSON names
// ("messages[1].content[0].type"); openai_response.h turns them into
// OpenAI's error envelope with FIELD as `param`.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"

namespace prepackd::http {

using Json = nlohmann::ordered_json;

enum class Api { kChat, kCompletions };

// Choices per request (n) at most, and choices of all prompts together.
constexpr int kMaxN = 64;
constexpr int kMaxChoices = 128;

// What one /v1/chat/completions or /v1/completions request asks for.
struct ApiRequest {
    Api                                       api = Api::kChat;
    std::vector<prepack::v1::GenerateRequest> prompts;   // one per prompt (a chat request: one)
    std::vector<bool>                         token_prompt;   // per prompt: given as token ids
    int                                       n = 1;         // choices per prompt
    bool                                      stream = false;
    bool                                      include_usage = false;   // stream_options.include_usage
    bool                                      logprobs = false;        // log-probs of the chosen tokens
    int                                       top_logprobs = 0;        // and this many alternatives
    bool                                      echo = false;            // completions: the prompt first
    bool                                      max_tokens_set = false;  // chat without it: the rest of the context
    std::optional<uint64_t>                   seed;                    // choice i samples with seed + i
    std::string                               user;                    // the caller's end-user id (logged)
    int choices() const { return n * static_cast<int>(prompts.size()); }
};

// The body as a JSON object: INVALID_ARGUMENT for anything else (not JSON,
// invalid UTF-8, nested deeper than kMaxJsonDepth, not an object), naming
// where it fails.
grpc::Status ParseBody(std::string_view body, Json* out);

// `model` present and equal to `served_id`: INVALID_ARGUMENT when missing
// or not a string, NOT_FOUND when another model is named.
grpc::Status CheckModel(const Json& body, const std::string& served_id);

// The body of a /v1/chat/completions or /v1/completions request, checked
// field by field. `model` describes the served model (token ids are checked
// against its vocabulary); `max_queue` bounds the choices a request may ask
// for, as each holds an admission slot.
grpc::Status ParseChat(const Json& body, const prepack_model_desc& model, int max_queue, ApiRequest* out);
grpc::Status ParseCompletion(const Json& body, const prepack_model_desc& model, int max_queue, ApiRequest* out);

// An error from the shared request building (request_builder.h), which
// names GenerateRequest's fields, with the request's JSON names instead
// ("sampling.max_tokens" -> "max_tokens", "messages.messages[0].role" ->
// "messages[0].role", "text" -> "prompt"). `prompt_index` >= 0 prefixes
// "prompt[i]: " for one of several prompts.
grpc::Status WithJsonNames(const grpc::Status& status, Api api, int prompt_index);

// /tokenize and /detokenize (vLLM's shapes):
//   {"model"?, "prompt": TEXT, "add_special_tokens"?: true, "parse_special"?: false}
//   {"model"?, "messages": [...], "add_generation_prompt"?: true, "chat_template_kwargs"?: {...}}
//     -> {"count", "max_model_len", "tokens"}
//   {"model"?, "tokens": [ids]} -> {"prompt": TEXT}
struct TokenizeRequest {
    bool                          chat = false;
    std::string                   text;
    bool                          add_special = true;
    bool                          parse_special = false;
    prepack::v1::Conversation     conversation;   // chat
};
grpc::Status ParseTokenize(const Json& body, const std::string& served_id, TokenizeRequest* out);
grpc::Status ParseDetokenize(const Json& body, const std::string& served_id, const prepack_model_desc& model,
                             std::vector<int32_t>* ids);

}  // namespace prepackd::http
