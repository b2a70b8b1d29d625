// Compiled grammars kept for reuse: a batch of requests with one schema, or
// a client that sends the same response_format every time, compiles it
// once (front end, GBNF parse, Compile) instead of once per request.
//
// Keyed by the spec (GrammarSpec::Key(): kind and text) and the vocabulary
// it was compiled for (its identity: an entry holds the vocabulary, so its
// address cannot be reused while the entry lives). Least recently used
// entries go first past `capacity`.
//
// Single flight: when several threads ask for a key not yet compiled, the
// first compiles and the others wait for its result, so a batch of N
// requests with one schema compiles it once even when submitted from N
// threads. Errors are handed to the callers that waited for that compile
// but never kept: a later request compiles again (a spec that fails fails
// fast, in its front end, and keeping failures would let one bad spec
// occupy the cache).
#pragma once

#include <cstdint>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/base/status.h"
#include "core/grammar/grammar_spec.h"
#include "core/grammar/matcher.h"

namespace prepack::grammar {

struct GrammarCacheOptions {
    // Compiled grammars kept (at least 1). Each holds its spec's text as its
    // key (a front end refuses texts over 1 MiB, gbnf.h) and its lazily
    // grown DFAs and mask caches (bounded by `limits`).
    int32_t       capacity = 64;
    CompileLimits limits;
};

struct GrammarCacheStats {
    uint64_t hits = 0;       // answered from an entry (or by waiting for another caller's compile)
    uint64_t misses = 0;     // compiled (successfully or not)
    uint64_t failures = 0;   // of the misses, compiles that failed (not kept)
    uint64_t evictions = 0;  // entries dropped for room
    double   compile_seconds = 0.0;   // wall time spent compiling, failures included
    int64_t  entries = 0;    // entries now held
};

class GrammarCache {
public:
    using Result = absl::StatusOr<std::shared_ptr<const CompiledGrammar>>;

    explicit GrammarCache(GrammarCacheOptions options = {});
    GrammarCache(const GrammarCache&) = delete;
    GrammarCache& operator=(const GrammarCache&) = delete;

    // `spec` compiled for `vocab`: from the cache, or built now
    // (BuildGrammar, then Compile). The errors of those, unchanged:
    // INVALID_ARGUMENT naming the problem in the spec, RESOURCE_EXHAUSTED
    // past a limit. Thread-safe.
    Result Get(const GrammarSpec& spec, const std::shared_ptr<const TokenVocabulary>& vocab);

    GrammarCacheStats stats() const;

private:
    struct Slot {
        std::shared_future<Result>             result;
        std::shared_ptr<const TokenVocabulary> vocab;   // keeps the key's vocabulary address unique
        std::list<std::string>::iterator       lru;      // position in lru_
        uint64_t                               generation = 0;   // which compile filled it
    };

    // Drops the least recently used entries beyond capacity; mu_ held.
    void EvictOverCapacity();

    const GrammarCacheOptions options_;
    mutable std::mutex        mu_;
    std::list<std::string>    lru_;   // keys, most recently used first
    std::unordered_map<std::string, Slot> slots_;
    uint64_t                  next_generation_ = 0;
    GrammarCacheStats         stats_;
};

}  // namespace prepack::grammar
