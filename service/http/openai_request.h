// OpenAI request bodies -> the prepack.v1.GenerateRequest each prompt stands
// for, so that HTTP requests run through the same request building, checks,
// chat rendering, admission and counters as gRPC's (request_builder.h).
// The bodies themselves are read by the openai library (openai/request.h:
// every field implemented or refused by name), which `prepack batch`
// shares for OpenAI batch files; here its results become GenerateRequests
// and its absl::Status errors grpc::Status (the same codes).
//
// Errors are INVALID_ARGUMENT (or NOT_FOUND for the model) with messages
// "FIELD: why", FIELD in the request's own JSON names
// ("messages[1].content[0].type"); openai_response.h turns them into
// OpenAI's error envelope with FIELD as `param`.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "openai/request.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"

namespace prepackd::http {

using Json = prepack::openai::Json;
using prepack::openai::Api;

// gRPC's status for the openai library's (their codes are the same numbers).
grpc::Status FromAbsl(const absl::Status& status);

// What one /v1/chat/completions or /v1/completions request asks for, and
// the GenerateRequest of each of its prompts (a chat request: one), every
// one with the body's sampling, stop strings, log-probs and LazyLLM.
struct ApiRequest : prepack::openai::ApiRequest {
    std::vector<prepack::v1::GenerateRequest> requests;
};

// The body as a JSON object: INVALID_ARGUMENT for anything else (not JSON,
// invalid UTF-8, nested deeper than kMaxJsonDepth, not an object), naming
// where it fails.
grpc::Status ParseBody(std::string_view body, Json* out);

// `model` present and equal to `served_id`: INVALID_ARGUMENT when missing
// or not a string, NOT_FOUND when another model is named.
grpc::Status CheckModel(const Json& body, const std::string& served_id);

// The body of a request to `api`, checked field by field, and its
// GenerateRequests. `model` describes the served model (token ids are
// checked against its vocabulary); `max_queue` bounds the choices a
// request may ask for, as each holds an admission slot.
grpc::Status ParseApiRequest(Api api, const Json& body, const prepack_model_desc& model, int max_queue,
                             ApiRequest* out);

// The GenerateRequests of a parsed request (ParseApiRequest's last step,
// for a request the openai library parsed elsewhere: a batch file's line).
void BuildGenerateRequests(ApiRequest* request);

// A conversation as prepack.v1 carries it.
prepack::v1::Conversation ToConversation(const prepack::openai::Chat& chat);

// An error from the shared request building (request_builder.h), which
// names GenerateRequest's fields, with the request's JSON names instead
// ("sampling.max_tokens" -> "max_tokens", "messages.messages[0].role" ->
// "messages[0].role", "text" -> "prompt"; "structured_output.text" ->
// `grammar_field`, the field that gave the grammar, e.g.
// "response_format.json_schema.schema"). `prompt_index` >= 0 prefixes
// "prompt[i]: " for one of several prompts.
grpc::Status WithJsonNames(const grpc::Status& status, Api api, int prompt_index,
                           const std::string& grammar_field = "");

// /tokenize and /detokenize (vLLM's shapes; openai/request.h).
struct TokenizeRequest {
    bool                      chat = false;
    std::string               text;
    bool                      add_special = true;
    bool                      parse_special = false;
    prepack::v1::Conversation conversation;   // chat
};
grpc::Status ParseTokenize(const Json& body, const std::string& served_id, TokenizeRequest* out);
grpc::Status ParseDetokenize(const Json& body, const std::string& served_id, const prepack_model_desc& model,
                             std::vector<int32_t>* ids);

}  // namespace prepackd::http
