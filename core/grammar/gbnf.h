// llama.cpp's GBNF grammar text -> Grammar (grammar_ir.h).
//
// The syntax is llama.cpp's (grammars/README.md there): `name ::= body`
// rules, alternatives `|`, grouping `( )`, literals "..." with \n \t \r \\ (backslash)
// \" \xHH \uHHHH \UHHHHHHHH escapes, character classes [...] and [^...]
// over Unicode code points (ranges, escapes), `.` (any code point),
// repetition `*` `+` `?` `{m}` `{m,}` `{m,n}` `{,n}`, rule references, `#`
// comments, rules continuing over lines inside parentheses or after `|`.
// Code points become UTF-8 byte sequences here, so the matcher is byte-level.
//
// Lexemes: the parser turns each maximal regular part of the grammar into a
// lexeme (a rule that reaches no recursion is regular; so is a run of
// regular symbols inside an alternative), leaving only the recursive
// structure to the Earley parser. This changes speed, never the language.
// No lexeme grows past GbnfLimits::max_lexeme_nodes (tree-expanded size):
// a regular rule larger than that stays a rule, and a larger regular item
// is cut into several lexemes (a sequence at its items, a choice at its
// alternatives, X{m,n} into consecutive X{k} / X{0,k} chunks), so a big
// regular grammar (a large non-recursive JSON Schema) costs the parser a
// few more steps instead of being refused. The language stays the same.
#pragma once

#include <string_view>

#include "core/base/status.h"
#include "core/grammar/grammar_ir.h"

namespace prepack::grammar {

struct GbnfLimits {
    size_t  max_text_bytes = 1 << 20;
    int32_t max_rules = 10000;
    int32_t max_repeat = 10000;        // the largest m or n in {m,n}
    int32_t max_nesting = 200;         // parentheses / regex nesting
    int32_t max_regex_nodes = 1000000; // after expanding repetitions and UTF-8 classes
    // Largest tree-expanded size (shared subtrees counted at every use,
    // repetitions at their count) of one lexeme: where the lexer stops and
    // the parser takes over. Small enough that each lexeme's NFA and lazy
    // DFA stay cheap; a single item that cannot be cut (a class of very
    // many ranges) is still bounded by max_regex_nodes only.
    int32_t max_lexeme_nodes = 50000;
};

// INVALID_ARGUMENT naming the line and column (an unknown rule, a syntax
// error, an empty class, invalid UTF-8, no `root` rule), RESOURCE_EXHAUSTED
// past `limits`.
absl::StatusOr<Grammar> ParseGbnf(std::string_view text, std::string_view root = "root",
                                  const GbnfLimits& limits = {});

}  // namespace prepack::grammar
