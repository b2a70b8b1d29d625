// JSON text as OpenAI's API and its batch files carry it: parsed with
// bounds (nesting, UTF-8) and errors naming where it fails, and the UTF-8
// rules the responses follow. Shared by prepackd (HTTP, gRPC) and the CLI.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace prepack::openai {

using Json = nlohmann::ordered_json;

// Deeper JSON is refused before it is parsed: nesting only a hostile
// client writes, which recursive code (parsing, serializing, a template's
// tojson) would pay for with its stack. protobuf's own nesting limit.
constexpr int kMaxJsonDepth = 100;
// The deepest nesting of arrays and objects in `text`, counted outside
// strings (linear, no parser); stops counting past kMaxJsonDepth.
int JsonNestingDepth(std::string_view text);

// `text` as a JSON object: INVALID_ARGUMENT "FIELD: why" ("why" alone when
// `field` is empty) for anything else
// (not JSON, invalid UTF-8, nested deeper than kMaxJsonDepth, not an
// object), naming the byte where it fails.
absl::Status ParseObject(std::string_view text, const std::string& field, Json* out);

// Bytes that are not UTF-8 (a lone byte-fallback token, say) become U+FFFD,
// one per byte; valid text comes back unchanged. Overlong forms, surrogates
// and values past U+10FFFF are invalid, as in protobuf's own check.
std::string ToValidUtf8(std::string_view bytes);
// The length of the longest valid UTF-8 prefix of `bytes` (its whole size
// when it is valid).
size_t ValidUtf8Prefix(std::string_view bytes);
// Characters (code points) of UTF-8 text, as Python's len() counts them.
size_t CodePoints(std::string_view utf8);

// JSON text of `j` on one line, invalid UTF-8 replaced (never throws).
std::string Dump(const Json& j);

}  // namespace prepack::openai
