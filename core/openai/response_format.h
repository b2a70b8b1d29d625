// Structured output in a request body (openai/request.h: ResponseFormat):
// OpenAI's response_format and the same constraint under vLLM's and
// llama.cpp's names, checked for shape and collected into one
// ResponseFormat. Internal to the openai library.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "openai/json_text.h"
#include "openai/request.h"

namespace prepack::openai {

// The body fields that carry a structured-output constraint (both endpoints).
const std::set<std::string_view>& StructuredOutputFields();

// Reads those fields of `body` into *out (Kind::kText when none is set).
// INVALID_ARGUMENT naming the field: a wrong shape or type, an unknown
// response_format type, a missing json_schema name or schema, two
// constraints at once.
absl::Status ParseResponseFormat(const Json& body, ResponseFormat* out);

// GBNF for exactly one of `choices` (vLLM's guided_choice): root ::= "a" | "b".
// Each is written as a GBNF string literal (quotes, backslashes and control
// bytes escaped; other bytes, UTF-8 included, as they are).
std::string ChoiceGbnf(const std::vector<std::string>& choices);

}  // namespace prepack::openai
