// JSON Schema (Draft 2020-12, the keywords real schemas use) and regular
// expressions -> GBNF text (gbnf.h), the way llama.cpp's
// json-schema-to-grammar does, with one difference that matters: a keyword
// the grammar cannot honour is refused with an error naming it and its
// JSON pointer, never dropped (dropping one would let invalid output through).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace prepack::grammar {

struct JsonSchemaOptions {
    // An object schema without `additionalProperties` allows none (as
    // OpenAI's strict mode, XGrammar and vLLM generate); false gives JSON
    // Schema's own default (any other property allowed), which the
    // conformance tests use.
    bool closed_objects_by_default = true;
    // Whitespace the output may hold between tokens of JSON: none, or one
    // space, or a newline and at most `max_indent` spaces/tabs (a bound, so a
    // model cannot loop on blanks).
    int32_t max_indent = 20;
};

// The GBNF for JSON text valid under `schema` (root rule "root").
// INVALID_ARGUMENT naming the keyword and its JSON pointer for an
// unsupported keyword or format, an invalid schema, an unresolvable $ref or
// an unsatisfiable one ("enum": [], minimum > maximum, ...).
absl::StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::json& schema, const JsonSchemaOptions& options = {});
absl::StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_json, const JsonSchemaOptions& options = {});

// Any JSON object (OpenAI's json_object mode), same whitespace rules.
std::string JsonObjectGbnf(const JsonSchemaOptions& options = {});

// A regular expression (ECMAScript-style syntax as JSON Schema's `pattern`
// uses: classes, \d \w \s, quantifiers incl. lazy ones, groups incl.
// (?:...), alternation, anchors ^ $ at the ends) -> GBNF for exactly the
// strings it matches in full. Backreferences, lookaround and other
// non-regular constructs are INVALID_ARGUMENT naming them.
absl::StatusOr<std::string> RegexToGbnf(std::string_view regex);

}  // namespace prepack::grammar
