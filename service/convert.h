// Conversions from libprepack's event structs to prepack.v1 messages, and
// the UTF-8 rule protobuf strings follow.
#pragma once

#include <string>
#include <string_view>

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

// Protobuf strings must be UTF-8: bytes that are not (a lone byte-fallback
// token, say) become U+FFFD. Valid text comes back unchanged.
std::string ToValidUtf8(std::string_view bytes);
// The length of the longest valid UTF-8 prefix of `bytes` (its whole size
// when it is valid): where a proto3 string field stops being decodable.
size_t ValidUtf8Prefix(std::string_view bytes);

}  // namespace prepackd
