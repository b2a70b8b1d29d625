// Ast (gbnf_ast.h) -> Grammar (grammar_ir.h): decides what becomes a
// lexeme and what stays a rule for the Earley parser.
//
// A rule is regular when no cycle of references is reachable from it; its
// every use is inlined as a regular expression while it stays within
// GbnfLimits::max_lexeme_nodes (expanded size); a bigger one stays a rule of
// its own, shared by its uses, so no lexeme outgrows the cap (a large
// non-recursive schema becomes Earley rules over small lexemes, not one
// huge DFA). Inside the other rules, each maximal run of regular items of
// an alternative becomes one lexeme (cut into several where it would pass
// the cap), and the regular alternatives of a choice are merged into one
// lexeme alternative up to the cap. Groups and repetitions that hold
// recursive items become generated rules (named `<rule>_group_<n>` and so
// on, which no GBNF name can clash with): `X*` is `R ::= R X | ε` (left
// recursion, cheap for Earley), `X+` is `R ::= R X | X`, a bounded
// `X{m,n}` is m copies of X then a chain `O_k ::= X O_{k-1} | ε`. A small
// regular root gives a grammar of one rule holding one lexeme. Where the
// cut falls changes speed, never the language.
//
// Limits (GbnfLimits): regex nodes (max_regex_nodes), each lexeme's
// expanded size (max_lexeme_nodes), regex depth after inlining (4 x
// max_nesting), rules of the result including generated ones (max_rules),
// symbols over all alternatives (max_regex_nodes); past any of them
// RESOURCE_EXHAUSTED.
#pragma once

#include <string_view>

#include "core/base/status.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/gbnf_ast.h"
#include "core/grammar/grammar_ir.h"

namespace prepack::grammar::gbnf {

absl::StatusOr<Grammar> Lower(const Ast& ast, std::string_view text, std::string_view root,
                              const GbnfLimits& limits);

}  // namespace prepack::grammar::gbnf
