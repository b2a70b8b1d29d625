// Structured output: a request's grammar_kind and grammar into the engine's
// GrammarSpec, and prepack_grammar_check, which builds the grammar alone so
// that a caller (prepackd) can refuse a bad one before any request starts.
#include <cstddef>

#include "capi/capi_internal.h"
#include "core/grammar/grammar_spec.h"

namespace prepack::capi {

absl::StatusOr<grammar::GrammarSpec> ToGrammarSpec(const prepack_grammar_kind& kind_field, const char* text) {
    using Kind = grammar::GrammarSpec::Kind;
    grammar::GrammarSpec spec;
    const int64_t kind = RawEnum(kind_field);
    switch (kind) {
        case PREPACK_GRAMMAR_NONE:
        case PREPACK_GRAMMAR_JSON_OBJECT:
            // Text here would be silently unused: refused, as a caller who
            // set it meant something by it.
            if (text != nullptr) {
                return absl::InvalidArgumentError(
                    absl::StrCat("grammar is set but grammar_kind is ",
                                 kind == PREPACK_GRAMMAR_NONE ? "NONE" : "JSON_OBJECT", ", which takes no text"));
            }
            spec.kind = kind == PREPACK_GRAMMAR_NONE ? Kind::kNone : Kind::kJsonObject;
            return spec;
        case PREPACK_GRAMMAR_JSON_SCHEMA:
        case PREPACK_GRAMMAR_REGEX:
        case PREPACK_GRAMMAR_GBNF:
            if (text == nullptr) {
                return absl::InvalidArgumentError(
                    absl::StrCat("grammar is NULL but grammar_kind ", kind, " needs its text (the ",
                                 kind == PREPACK_GRAMMAR_JSON_SCHEMA ? "JSON Schema"
                                 : kind == PREPACK_GRAMMAR_REGEX     ? "regular expression"
                                                                     : "GBNF",
                                 ")"));
            }
            spec.kind = kind == PREPACK_GRAMMAR_JSON_SCHEMA ? Kind::kJsonSchema
                        : kind == PREPACK_GRAMMAR_REGEX     ? Kind::kRegex
                                                            : Kind::kGbnf;
            spec.text = text;
            return spec;
        default: break;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("grammar_kind ", kind, " is unknown (0 NONE, 1 JSON_OBJECT, 2 JSON_SCHEMA, 3 REGEX, 4 GBNF)"));
}

absl::StatusOr<grammar::GrammarSpec> RequestGrammar(const prepack_request& r, size_t caller_struct_size) {
    // grammar_kind sits where an ABI 8 struct had its tail padding, which a
    // caller need not have zeroed: only a caller whose struct reaches
    // `grammar` knows these fields.
    if (caller_struct_size < offsetof(prepack_request, grammar) + sizeof r.grammar) return grammar::GrammarSpec{};
    return ToGrammarSpec(r.grammar_kind, r.grammar);
}

}  // namespace prepack::capi

using namespace prepack::capi;

extern "C" {

prepack_status prepack_grammar_check(prepack_grammar_kind kind, const char* grammar) {
    return Guard([&] {
        auto spec = ToGrammarSpec(kind, grammar);
        if (!spec.ok()) return FromStatus(spec.status());
        if (!spec->active()) return PREPACK_OK;
        return FromStatus(prepack::grammar::BuildGrammar(*spec).status());
    });
}

}  // extern "C"
