// The fixed GBNF rules every schema grammar draws on: whitespace, strings,
// numbers, any JSON value, and the string formats (date, uuid, ipv4, ...).
// A converted schema names the ones it uses; only those (and what they
// refer to) are written out.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace prepack::grammar::schema {

// Rule names. Schema rules are named root, root-..., defs-..., so these
// never collide with them.
inline constexpr std::string_view kWs = "ws";                  // between JSON tokens
inline constexpr std::string_view kString = "string";          // any JSON string
inline constexpr std::string_view kChar = "char";              // one character of a string (raw or escaped)
inline constexpr std::string_view kCountedChar = "counted-char";  // a char that decodes to exactly one code point
inline constexpr std::string_view kKeyChar = "key-char";       // a char with one spelling only (see .cpp)
inline constexpr std::string_view kInteger = "integer";
inline constexpr std::string_view kNumber = "number";
inline constexpr std::string_view kBoolean = "boolean";
inline constexpr std::string_view kNull = "null";
inline constexpr std::string_view kValue = "value";            // any JSON value
inline constexpr std::string_view kObject = "object";          // any JSON object
inline constexpr std::string_view kArray = "array";            // any JSON array

// The rule for a string `format` (its content, without the quotes), or ""
// for a format not supported.
std::string_view FormatRule(std::string_view format);

// True for every name above and every rule they use: names a schema rule
// must not take.
bool IsPrimitiveRuleName(std::string_view name);

// GBNF definitions of `used` and every rule they refer to, one per line.
std::string PrimitiveRules(const std::set<std::string, std::less<>>& used, int32_t max_indent);

}  // namespace prepack::grammar::schema
