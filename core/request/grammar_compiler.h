// Structured output for one model: its vocabulary's token trie, built once
// on the first constrained request (a trie over 50k-150k tokens is too dear
// to build per request, and unconstrained serving should never pay for it),
// and the model's cache of compiled grammars (core/grammar/grammar_cache.h).
// The engine holds one next to its model; single-request generation takes
// the caller's or makes its own.
#pragma once

#include <memory>
#include <mutex>

#include "core/base/status.h"
#include "core/grammar/grammar_cache.h"
#include "core/grammar/grammar_spec.h"
#include "core/grammar/matcher.h"
#include "core/model/tokenizer.h"

namespace prepack {

class GrammarCompiler {
public:
    // `tok` must outlive this.
    explicit GrammarCompiler(const Tokenizer& tok, grammar::GrammarCacheOptions options = {});

    // The model's token trie, built on first use. Thread-safe.
    std::shared_ptr<const grammar::TokenVocabulary> vocabulary();

    // A new matcher for `spec` (which must be active), its grammar compiled
    // once per spec (cached). The front end's and Compile's errors,
    // unchanged (INVALID_ARGUMENT naming the problem, RESOURCE_EXHAUSTED).
    // Thread-safe; the compile runs on the calling thread.
    absl::StatusOr<grammar::Matcher> NewMatcher(const grammar::GrammarSpec& spec);

    grammar::GrammarCacheStats cache_stats() const { return cache_.stats(); }

private:
    const Tokenizer*                                tok_;
    std::once_flag                                  vocabulary_once_;
    std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
    grammar::GrammarCache                           cache_;
};

}  // namespace prepack
