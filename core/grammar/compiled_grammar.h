// CompiledGrammar::Impl: what a grammar bound to a vocabulary holds — the
// grammar, one lazily built DFA per lexeme, the Earley tables and the mask
// cache. Private to the engine (matcher.cpp and its helpers).
#pragma once

#include <memory>
#include <vector>

#include "core/grammar/earley.h"
#include "core/grammar/lexeme_dfa.h"
#include "core/grammar/mask_cache.h"
#include "core/grammar/matcher.h"

namespace prepack::grammar {

struct CompiledGrammar::Impl {
    Grammar                                  grammar;
    std::shared_ptr<const TokenVocabulary>   vocabulary;
    CompileLimits                            limits;
    std::vector<std::unique_ptr<LexemeDfa>>  dfas;   // per lexeme
    EarleyTables                             tables;
    MaskCache                                mask_cache;
};

}  // namespace prepack::grammar
