#include "core/grammar/grammar_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>

#include "absl/strings/str_cat.h"

namespace prepack::grammar {

namespace {

// The spec's key and the vocabulary's address: one vocabulary per model,
// so this tells models apart without hashing 100k token texts.
std::string CacheKey(const GrammarSpec& spec, const TokenVocabulary* vocab) {
    char address[2 + 16 + 1];
    std::snprintf(address, sizeof address, "%p", static_cast<const void*>(vocab));
    return absl::StrCat(address, "|", spec.Key());
}

// The front end and Compile, as one result. They report errors by status;
// an exception escaping them (a bug, or std::bad_alloc) must still reach the
// callers waiting on this compile instead of leaving them waiting forever.
GrammarCache::Result CompileSpec(const GrammarSpec& spec, const std::shared_ptr<const TokenVocabulary>& vocab,
                                 const CompileLimits& limits) {
    try {
        PP_ASSIGN_OR_RETURN(Grammar g, BuildGrammar(spec));
        return Compile(std::move(g), vocab, limits);
    } catch (const std::exception& e) {
        return absl::InternalError(absl::StrCat("compiling the grammar failed: ", e.what()));
    } catch (...) {
        return absl::InternalError("compiling the grammar failed");
    }
}

}  // namespace

GrammarCache::GrammarCache(GrammarCacheOptions options) : options_([&] {
    options.capacity = std::max(options.capacity, 1);
    return options;
}()) {}

GrammarCache::Result GrammarCache::Get(const GrammarSpec& spec, const std::shared_ptr<const TokenVocabulary>& vocab) {
    if (!vocab) return absl::InvalidArgumentError("no vocabulary to compile the grammar for");
    std::string key = CacheKey(spec, vocab.get());
    std::promise<Result> promise;
    uint64_t generation = 0;
    {
        std::unique_lock<std::mutex> lock(mu_);
        if (auto it = slots_.find(key); it != slots_.end()) {
            ++stats_.hits;
            lru_.splice(lru_.begin(), lru_, it->second.lru);
            std::shared_future<Result> result = it->second.result;
            lock.unlock();
            return result.get();   // waits while another caller compiles it
        }
        ++stats_.misses;
        generation = ++next_generation_;
        lru_.push_front(key);
        slots_.emplace(key, Slot{promise.get_future().share(), vocab, lru_.begin(), generation});
        EvictOverCapacity();
    }
    // Outside the lock: other keys are served (and compiled) meanwhile.
    const auto t0 = std::chrono::steady_clock::now();
    Result result = CompileSpec(spec, vocab, options_.limits);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    promise.set_value(result);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.compile_seconds += seconds;
    if (!result.ok()) {
        ++stats_.failures;
        // Not kept (see the header). Only this compile's own slot: it may
        // have been evicted and the key compiled again since.
        if (auto it = slots_.find(key); it != slots_.end() && it->second.generation == generation) {
            lru_.erase(it->second.lru);
            slots_.erase(it);
        }
    }
    return result;
}

void GrammarCache::EvictOverCapacity() {
    while (static_cast<int64_t>(slots_.size()) > options_.capacity) {
        // A slot still compiling may go too: its waiters hold its future.
        slots_.erase(lru_.back());
        lru_.pop_back();
        ++stats_.evictions;
    }
}

GrammarCacheStats GrammarCache::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    GrammarCacheStats s = stats_;
    s.entries = static_cast<int64_t>(slots_.size());
    return s;
}

}  // namespace prepack::grammar
