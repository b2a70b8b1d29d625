// ParseGbnf: the text is parsed into an Ast (gbnf_parser.cpp), whose
// regular parts become lexemes and recursive parts rules (gbnf_lowering.cpp).
#include "core/grammar/gbnf.h"

#include "core/grammar/gbnf_lowering.h"
#include "core/grammar/gbnf_parser.h"

namespace prepack::grammar {

absl::StatusOr<Grammar> ParseGbnf(std::string_view text, std::string_view root, const GbnfLimits& limits) {
    PP_ASSIGN_OR_RETURN(const gbnf::Ast ast, gbnf::ParseAst(text, limits));
    return gbnf::Lower(ast, text, root, limits);
}

}  // namespace prepack::grammar
