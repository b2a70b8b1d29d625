// GBNF text -> Ast (gbnf_ast.h), accepting llama.cpp's syntax as its
// grammar parser does, plus `{,n}`. Refuses what llama.cpp accepts but
// the engine cannot honour or that is surely a mistake: token references
// (<[id]>, <name>, !<...>), an empty class, a class range whose end comes
// before its start, code points that have no UTF-8 form in literals,
// invalid UTF-8 or NUL bytes in the text, {m,n} with n < m.
//
// As in llama.cpp, a rule defined twice keeps its last definition, and
// every referenced rule must be defined (even in rules the root never
// reaches).
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/gbnf_ast.h"

namespace prepack::grammar::gbnf {

absl::StatusOr<Ast> ParseAst(std::string_view text, const GbnfLimits& limits);

// "line:column" (both from 1; columns count bytes) of a byte offset.
std::string LineColumn(std::string_view text, size_t offset);

}  // namespace prepack::grammar::gbnf
