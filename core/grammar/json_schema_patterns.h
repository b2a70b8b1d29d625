// JSON Schema `pattern` and `patternProperties` keys: JSON strings whose
// decoded value contains a match of an ECMAScript regex (search semantics,
// anchors honoured), through the regex front end (regex_to_gbnf.h), which
// accepts every JSON spelling of each character.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace prepack::grammar::schema {

struct PatternGbnf {
    std::string expression;   // a whole JSON string, quotes included
    std::string rules;        // the rules it uses, one per line
};

// `id` makes the rule names unique within one grammar ("pattern-<id>-re...").
// INVALID_ARGUMENT naming `keyword` and `where` for a pattern the regex front
// end refuses.
absl::StatusOr<PatternGbnf> PatternStringGbnf(std::string_view pattern, int id, std::string_view keyword,
                                              const std::string& where);

// Whether the string `name` is one of the pattern's strings (run through
// the matcher, so it agrees with the grammar exactly).
absl::StatusOr<bool> PatternAcceptsName(const PatternGbnf& pattern, std::string_view name);

}  // namespace prepack::grammar::schema
