// Putting several GBNF grammars into one: each keeps its rules under a
// prefix of its own, so a tool call's grammar can hold every tool's
// parameter schema (json_schema.h writes each as a whole grammar with a
// `root` and helper rules whose names would otherwise collide).
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace prepack::grammar {

// `gbnf` with every rule it defines renamed PREFIX + name, in definitions
// and references alike; literals, classes and comments are left as they
// are. INVALID_ARGUMENT for an unterminated literal or class (the GBNF
// parser reports everything else when the result is parsed).
absl::StatusOr<std::string> PrefixGbnfRules(std::string_view gbnf, std::string_view prefix);

// A GBNF literal for `text` ("..." with the escapes GBNF reads).
std::string GbnfLiteral(std::string_view text);

}  // namespace prepack::grammar
