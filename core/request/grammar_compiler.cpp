#include "core/request/grammar_compiler.h"

#include "core/request/vocabulary.h"

namespace prepack {

GrammarCompiler::GrammarCompiler(const Tokenizer& tok, grammar::GrammarCacheOptions options)
    : tok_(&tok), cache_(std::move(options)) {}

std::shared_ptr<const grammar::TokenVocabulary> GrammarCompiler::vocabulary() {
    std::call_once(vocabulary_once_, [&] {
        vocabulary_ = std::make_shared<const grammar::TokenVocabulary>(GrammarVocabularyInfo(*tok_));
    });
    return vocabulary_;
}

absl::StatusOr<grammar::Matcher> GrammarCompiler::NewMatcher(const grammar::GrammarSpec& spec) {
    if (!spec.active()) return absl::InvalidArgumentError("no grammar: the request is unconstrained");
    PP_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> compiled, cache_.Get(spec, vocabulary()));
    return grammar::Matcher(std::move(compiled));
}

}  // namespace prepack
