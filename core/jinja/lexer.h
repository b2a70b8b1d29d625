// Splits a template into tokens the way jinja2's lexer does with
// trim_blocks and lstrip_blocks: text between tags becomes Data tokens with
// the whitespace control of the surrounding tags already applied, and the
// inside of {{ }} and {% %} becomes expression tokens. Comments and raw
// blocks are resolved here too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace prepack::jinja {

enum class Tok : uint8_t {
    Data,        // template text (value: the text)
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,        // identifier or keyword (value)
    String,      // string literal (value: decoded)
    Int,         // integer literal (ival; past 64 bits: value holds the decimal digits)
    Float,       // float literal (fval)
    Op,          // operator (value: "+", "//", "(", ...)
    Eof,
};

struct Token {
    Tok type = Tok::Eof;
    size_t offset = 0;  // byte offset of the token in the normalised source
    std::string value;
    int64_t ival = 0;
    double fval = 0;

    bool IsName(std::string_view n) const { return type == Tok::Name && value == n; }
    bool IsOp(std::string_view o) const { return type == Tok::Op && value == o; }
};

// Tokenizes `source` (already newline-normalised). Fails (Error with the
// offending offset) on an unexpected character, an unterminated comment or
// raw block, an unbalanced bracket or a bad string escape.
std::vector<Token> Tokenize(std::string_view source);

// The description jinja2 gives a token in error messages.
std::string DescribeToken(const Token& t);

}  // namespace prepack::jinja
