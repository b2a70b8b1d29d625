// Text helpers of the JSON Schema front end (json_schema.h): GBNF literals
// and character classes, canonical JSON string text, UTF-8, JSON pointers
// and rule names. No grammar logic here.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace prepack::grammar::schema {

// A GBNF string literal ("...") matching exactly `bytes`. Control bytes
// and bytes >= 0x80 that do not form UTF-8 are written as \xHH.
std::string GbnfLiteral(std::string_view bytes);

// One code point as it may appear inside a GBNF character class [...].
// Every ASCII character that is not a letter or digit is written as \xHH, so
// ']', '-', '^' and '\' can never be read as class syntax.
std::string GbnfClassChar(uint32_t code_point);

// The letter of a character's two-character JSON escape ('"', '\\', b f n
// r t: "\n" for a newline), or 0 when it has none.
char JsonShortEscape(uint32_t code_point);

// The JSON text of a string exactly as Python's
// json.dumps(s, ensure_ascii=False) writes it: '"' and '\' escaped, \b \f
// \n \r \t, other control characters as \u00xx, everything else raw.
std::string JsonStringText(std::string_view utf8);
// GBNF items joined by single spaces, empty ones left out.
std::string Seq(std::initializer_list<std::string_view> parts);

// UTF-8 -> code points; false for invalid UTF-8 (overlong forms, surrogates,
// truncated sequences).
bool DecodeUtf8(std::string_view utf8, std::vector<uint32_t>* code_points);
std::string EncodeUtf8(uint32_t code_point);

// A JSON pointer reference token: '~' -> "~0", '/' -> "~1".
std::string PointerToken(std::string_view name);

// A GBNF rule name fragment for `text`: letters and digits kept, runs of
// anything else become one '-'; never empty.
std::string RuleNameFragment(std::string_view text);

}  // namespace prepack::grammar::schema
