// A model's vocabulary as the grammar engine sees it (core/grammar keeps
// no knowledge of tokenizers): each token's bytes, and the tokens that end
// generation.
#pragma once

#include "core/grammar/matcher.h"
#include "core/model/tokenizer.h"

namespace prepack {

// token_bytes[id] = tok.TokenBytes(id) (the bytes a token adds in the
// middle of a text, as the output's decoder writes them), "" for control,
// unknown and unused tokens (never allowed) and for the end-of-generation
// tokens, whose text is never output; end_tokens = the ids where
// tok.IsEndOfGeneration (allowed exactly where the grammar may end).
grammar::VocabularyInfo GrammarVocabularyInfo(const Tokenizer& tok);

}  // namespace prepack
