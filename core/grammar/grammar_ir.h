// The grammar as the matcher runs it: lexemes (regular expressions over
// bytes, each matched by its own lazily built DFA) under a context-free
// grammar whose terminals are those lexemes. Every front end (GBNF text,
// JSON Schema, regular expressions: they all reach this through GBNF,
// gbnf.h) produces one of these; the matcher (matcher.h) never sees text.
//
// Why a lexer under the parser: masks are computed by walking the
// vocabulary's token trie. Inside a lexeme a byte costs one DFA transition,
// and the tokens that stay inside a lexeme from a given DFA state are
// allowed whatever the parser's stack holds, so they are cached per DFA
// state; the parser (Earley) runs only where a lexeme may end.
//
// Semantics are exactly the byte-level context-free language of the
// grammar (as llama.cpp's GBNF engine defines it): a lexeme may end at any
// accepting position, not only at the longest match, so how the front end
// cuts lexemes changes speed, never the language.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace prepack::grammar {

// A node of a regular expression over bytes. Nodes live in Grammar::regex
// and refer to their children by index (children before parents is not
// required, but there are no cycles).
struct RegexNode {
    enum class Kind : uint8_t {
        kEmpty,     // matches "" only
        kByteSet,   // one byte out of `bytes` (UTF-8 classes are expanded by the front end)
        kConcat,    // children in order
        kAlt,       // any one child
        kRepeat,    // children[0] repeated min..max times (max = kUnbounded for no limit)
    };
    static constexpr int32_t kUnbounded = -1;

    Kind                     kind = Kind::kEmpty;
    std::array<uint64_t, 4>  bytes{};        // kByteSet: bit b set = byte b allowed
    std::vector<int32_t>     children;
    int32_t                  min = 0;
    int32_t                  max = 0;

    bool HasByte(uint8_t b) const { return (bytes[b >> 6] >> (b & 63)) & 1; }
    void AddByte(uint8_t b) { bytes[b >> 6] |= uint64_t{1} << (b & 63); }
};

struct Lexeme {
    int32_t     regex = -1;   // root node in Grammar::regex
    std::string name;         // for messages and debugging (the GBNF rule or literal it came from)
};

// A grammar symbol: a lexeme (terminal) or a rule (non-terminal).
struct Symbol {
    bool    is_lexeme = false;
    int32_t index = -1;       // into Grammar::lexemes or Grammar::rules
    bool operator==(const Symbol&) const = default;
};

struct Rule {
    std::string                       name;
    std::vector<std::vector<Symbol>>  alternatives;   // an empty alternative derives ""
};

struct Grammar {
    std::vector<RegexNode> regex;
    std::vector<Lexeme>    lexemes;
    std::vector<Rule>      rules;
    int32_t                start = 0;   // index into rules
};

}  // namespace prepack::grammar
