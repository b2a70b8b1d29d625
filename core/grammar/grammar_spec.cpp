#include "core/grammar/grammar_spec.h"

#include "absl/strings/str_cat.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/json_schema.h"

namespace prepack::grammar {

std::string GrammarSpec::Key() const { return absl::StrCat(static_cast<int32_t>(kind), ":", text); }

absl::StatusOr<std::string> SpecToGbnf(const GrammarSpec& spec) {
    switch (spec.kind) {
        case GrammarSpec::Kind::kNone:
            return absl::InvalidArgumentError("no grammar: the request is unconstrained");
        case GrammarSpec::Kind::kJsonObject:
            return JsonObjectGbnf();
        case GrammarSpec::Kind::kJsonSchema:
            return JsonSchemaToGbnf(std::string_view(spec.text));
        case GrammarSpec::Kind::kRegex:
            return RegexToGbnf(spec.text);
        case GrammarSpec::Kind::kGbnf:
            return spec.text;
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown grammar kind ", static_cast<int32_t>(spec.kind)));
}

absl::StatusOr<Grammar> BuildGrammar(const GrammarSpec& spec) {
    PP_ASSIGN_OR_RETURN(std::string gbnf, SpecToGbnf(spec));
    return ParseGbnf(gbnf);
}

}  // namespace prepack::grammar
