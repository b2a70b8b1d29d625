// Regular expressions (ECMAScript syntax, as JSON Schema's `pattern` and the
// `regex` response formats of vLLM / OpenAI-style servers use) -> GBNF text
// (gbnf.h). Two forms:
//
//  - RegexToGbnf (declared in json_schema.h, defined in regex_to_gbnf.cpp):
//    the whole output is a string the regex matches in full.
//  - RegexToJsonStringContentGbnf (below): the text between the quotes of a
//    JSON string whose decoded value the regex matches, for JSON Schema's
//    `pattern` (and `propertyNames`/`patternProperties` keys).
//
// What is supported, what is refused and the limits: ecma_regex.h.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/grammar/ecma_regex.h"

namespace prepack::grammar {

// Appends to *rules GBNF rules (one `name ::= body` per line, every name
// starting with `rule_prefix`) for the JSON-escaped text of the strings the
// regex matches, and returns the name of the rule for that text. The rule
// matches the content only: the caller writes the quotes around it, e.g.
//   PP_ASSIGN_OR_RETURN(std::string content,
//                       RegexToJsonStringContentGbnf(pattern, true, "prop-3-pattern", &rules));
//   rules += "prop-3 ::= \"\\\"\" " + content + " \"\\\"\"\n";
//
// search = false: strings the regex matches in full (as RegexToGbnf).
// search = true:  JSON Schema's `pattern` semantics: strings that contain a
//                 match anywhere, unless anchored (^ at the start of the
//                 pattern or of a top-level alternative ties that match to
//                 the start of the string, $ at the end to the end).
//
// Every JSON spelling of each character is accepted, so the rule holds
// exactly the JSON texts whose decoded value is in the language: the raw
// character (except `"`, `\` and U+0000..U+001F, which JSON forbids raw);
// the two-character escapes \" \\ \/ \b \f \n \r \t for the characters they
// stand for; \uXXXX (hex digits in either case) for any character, a
// character above U+FFFF as a UTF-16 surrogate pair (never a lone
// surrogate). One rule is written per distinct character class, so a class
// repeated in the pattern costs one reference each time.
//
// `rule_prefix` must be non-empty, of [a-zA-Z0-9-] only, and not a prefix of
// any other rule name in the grammar (calls with different prefixes that
// are not prefixes of one another never clash). INVALID_ARGUMENT naming the
// construct and its byte offset for a pattern ecma_regex.h refuses, or when
// the pattern matches no string at all (e.g. "[]").
absl::StatusOr<std::string> RegexToJsonStringContentGbnf(std::string_view regex, bool search,
                                                         std::string_view rule_prefix, std::string* rules,
                                                         const RegexLimits& limits = {});

// RegexToGbnf with explicit limits (RegexToGbnf uses the defaults).
absl::StatusOr<std::string> RegexToGbnfWithLimits(std::string_view regex, const RegexLimits& limits);

}  // namespace prepack::grammar
