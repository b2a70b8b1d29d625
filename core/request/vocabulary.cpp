#include "core/request/vocabulary.h"

namespace prepack {

grammar::VocabularyInfo GrammarVocabularyInfo(const Tokenizer& tok) {
    grammar::VocabularyInfo info;
    const int32_t n = tok.vocab_size();
    info.token_bytes.resize(static_cast<size_t>(n));
    for (int32_t id = 0; id < n; ++id) {
        if (tok.IsEndOfGeneration(id)) {
            // Continuation never outputs an end token's text, so the grammar
            // must not count it as output either (some vocabularies give
            // <|endoftext|> the type of ordinary text).
            info.end_tokens.push_back(id);
            continue;
        }
        info.token_bytes[static_cast<size_t>(id)] = tok.TokenBytes(id);
    }
    return info;
}

}  // namespace prepack
