// Ast (gbnf_ast.h) -> Grammar (grammar_ir.h): decides what becomes a
// lexeme and what stays a rule for the Earley parser.
//
// A rule is regular when no cycle of references is reachable from it; its
// every use is inlined as a regular expression. Inside the other
// (recursive) rules, each maximal run of regular items of an alternative
// becomes one lexeme, and the regular alternatives of a choice are merged
// into one lexeme alternative. Groups and repetitions that hold recursive
// items become generated rules (named `<rule>_group_<n>` and so on, which
// no GBNF name can clash with): `X*` is `R ::= R X | ε` (left recursion,
// cheap for Earley), `X+` is `R ::= R X | X`, a bounded `X{m,n}` is m
// copies of X then a chain `O_k ::= X O_{k-1} | ε`. A regular root gives a
// grammar of one rule holding one lexeme.
//
// Limits (GbnfLimits): regex nodes and each lexeme's expanded size
// (max_regex_nodes), regex depth after inlining (4 x max_nesting), rules of the result including generated ones
// (max_rules), symbols over all alternatives (max_regex_nodes); past any
// of them RESOURCE_EXHAUSTED.
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
