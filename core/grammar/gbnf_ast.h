// The parsed form of a GBNF text, before lowering to grammar_ir.h: rules
// as trees of literals, classes, references, sequences, choices and
// repetitions, with where each came from (for messages and lexeme names).
// gbnf_parser.h builds it, gbnf_lowering.h turns it into a Grammar.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/grammar/utf8_ranges.h"

namespace prepack::grammar::gbnf {

struct SourceSpan {
    size_t begin = 0;   // byte offsets into the grammar text
    size_t end = 0;
};

struct AstNode {
    enum class Kind : uint8_t {
        kLiteral,    // code_points in order ("" is allowed and matches "")
        kClass,      // one code point out of `ranges` (negation and `.` already applied)
        kRuleRef,    // the rule `rule`
        kSequence,   // children in order
        kChoice,     // any one child (each a kSequence)
        kRepeat,     // children[0], min..max times (max = kUnbounded: no limit)
    };
    static constexpr int32_t kUnbounded = -1;

    Kind                         kind = Kind::kLiteral;
    SourceSpan                   span;
    std::vector<uint32_t>        code_points;   // kLiteral
    std::vector<CodePointRange>  ranges;        // kClass: normalized, never empty
    int32_t                      rule = -1;     // kRuleRef: index into Ast::rules
    std::vector<int32_t>         children;      // kSequence, kChoice, kRepeat
    int32_t                      min = 0;       // kRepeat
    int32_t                      max = 0;       // kRepeat
    // Groups and repetitions around this node's innermost item, bounded by
    // GbnfLimits::max_nesting so that every later pass may recurse.
    int32_t                      nesting = 0;
};

struct AstRule {
    std::string name;
    int32_t     body = -1;               // a kChoice node; -1 while only referenced
    size_t      first_reference = 0;     // offset, for "undefined rule" messages
};

// Nodes are stored children first: a node's children have smaller indices.
struct Ast {
    std::vector<AstNode>                      nodes;
    std::vector<AstRule>                      rules;
    std::unordered_map<std::string, int32_t>  rule_index;
};

}  // namespace prepack::grammar::gbnf
