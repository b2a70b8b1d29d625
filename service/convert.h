// Conversions from libprepack's event structs to prepack.v1 messages, and
// the UTF-8 rule protobuf strings follow.
#pragma once

#include <string>
#include <string_view>

#include "openai/json_text.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"

namespace prepackd {

prepack::v1::FinishReason ToProto(prepack_finish_reason reason);
void FillUsage(const prepack_usage& usage, prepack::v1::Usage* out);
// An END event's usage, with what the event carries besides prepack_usage
// (reasoning_tokens).
void FillUsage(const prepack_event& end, prepack::v1::Usage* out);
// Appends a TOKEN event's logprob (and alternatives) to *out.
void AddLogprob(const prepack_event& event, prepack::v1::TokenLogprob* out);
// The prompt's log-probs a first TOKEN event carries (none on the others).
void AddPromptLogprobs(const prepack_event& event, google::protobuf::RepeatedPtrField<prepack::v1::TokenLogprob>* out);

// A TOKEN event's tool-call deltas, appended to *out.
void AddToolCallDeltas(const prepack_event& event,
                       google::protobuf::RepeatedPtrField<prepack::v1::ToolCallDelta>* out);
// An END event's whole tool calls, appended to *out.
void AddToolCalls(const prepack_event& end, google::protobuf::RepeatedPtrField<prepack::v1::ToolCall>* out);

// Protobuf strings must be UTF-8: bytes that are not (a lone byte-fallback
// token, say) become U+FFFD (ToValidUtf8); ValidUtf8Prefix is where a proto3
// string field stops being decodable. The rules are OpenAI's JSON's too
// (openai/json_text.h).
using prepack::openai::ToValidUtf8;
using prepack::openai::ValidUtf8Prefix;

}  // namespace prepackd
