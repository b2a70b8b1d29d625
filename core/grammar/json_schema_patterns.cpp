#include "core/grammar/json_schema_patterns.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/json_schema_text.h"
#include "core/grammar/matcher.h"
#include "core/grammar/regex_to_gbnf.h"

namespace prepack::grammar::schema {
absl::StatusOr<PatternGbnf> PatternStringGbnf(std::string_view pattern, int id, std::string_view keyword,
                                              const std::string& where) {
    PatternGbnf out;
    // "pattern-1-re" is no prefix of "pattern-10-re": the regex front end
    // needs prefixes that are not prefixes of one another.
    absl::StatusOr<std::string> content =
        RegexToJsonStringContentGbnf(pattern, /*search=*/true, absl::StrCat("pattern-", id, "-re"), &out.rules);
    if (!content.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("\"", std::string(keyword), "\" at ", where, ": ",
                                                       content.status().message()));
    }
    out.expression = absl::StrCat(R"("\"" )", *content, R"( "\"")");
    return out;
}

absl::StatusOr<bool> PatternAcceptsName(const PatternGbnf& pattern, std::string_view name) {
    PP_ASSIGN_OR_RETURN(Grammar grammar, ParseGbnf(absl::StrCat("root ::= ", pattern.expression, "\n", pattern.rules)));
    PP_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled, Compile(std::move(grammar), ByteVocabulary()));
    Matcher matcher(std::move(compiled));
    const bool accepted = matcher.AcceptBytes(JsonStringText(name)) && matcher.CanEnd();
    PP_RETURN_IF_ERROR(matcher.status());
    return accepted;
}

}  // namespace prepack::grammar::schema
