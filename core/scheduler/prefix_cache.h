// An LRU prefix cache over KV blocks, as vLLM's automatic prefix caching
// does it: every full block of a computed prompt is keyed by the chain hash
// of all tokens up to its end; a new request reuses the longest chain of
// cached blocks that starts its prompt; the cache holds one reference to
// each block it keeps and gives blocks back, least recently released first,
// when the pool runs short. This is the `lru` baseline the BatchLLM policy is
// measured against. Keys are verified token by token, so a hash collision
// can never hand out the wrong K/V.
//
// Eviction is O(1) per block, as vLLM's free-block queue: the pool tells the
// cache when one of its blocks is used by nobody else any more (its count
// drops to the cache's own reference) and when it is in use again, so the
// idle blocks wait in their own list, least recently released first.
// Used by the engine thread only (the pool calls back on the thread that
// releases a block).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "core/kv/kv_cache.h"

namespace prepack {

class PrefixCache {
public:
    explicit PrefixCache(KvBlockPool& pool);
    ~PrefixCache();   // drops every reference it holds
    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    // The cached blocks holding the longest run of whole blocks at the start
    // of `tokens`, never all of it (the request must compute at least its
    // last token itself). The caller takes its own references
    // (BlockTable::Share) before anything else can evict them.
    std::vector<int32_t> Lookup(const std::vector<int32_t>& tokens, int32_t max_tokens);

    // Offers the first `n_tokens` tokens' whole blocks of `table` (computed
    // K/V of `tokens`) to the cache.
    void Insert(const std::vector<int32_t>& tokens, const BlockTable& table, int32_t n_tokens);

    // Gives back up to `n` blocks that only the cache still references,
    // least recently released first (with the entries chained below them).
    // Returns how many were freed.
    int32_t Evict(int32_t n);

    int32_t size() const { return static_cast<int32_t>(entries_.size()); }
    // Blocks that only the cache still references (free once evicted).
    int32_t IdleBlocks() const { return static_cast<int32_t>(idle_.size()); }

private:
    // A block is identified by its own tokens and the cached block before it
    // (-1 for the first), which was verified the same way: together exact.
    struct Entry;
    using Entries = std::list<Entry>;   // a list: iterators stay valid as entries come and go
    struct Entry {
        uint64_t             hash;
        int32_t              block;
        int32_t              parent;
        std::vector<int32_t> tokens;   // this block's tokens
        bool                 idle = false;
        std::list<Entries::iterator>::iterator idle_pos{};   // its place in idle_ while idle
    };

    static uint64_t ChainHash(uint64_t parent, const int32_t* tokens, int32_t n);
    Entries::iterator Find(uint64_t hash, const int32_t* tokens, int32_t parent);
    // Drops an entry and, first, every entry chained below it: a child's key
    // names its parent's block id, which must not outlive the parent entry.
    void Erase(Entries::iterator it);
    // The pool's word that `block` is idle (only the cache holds it) or in use.
    void OnWatch(int32_t block, bool idle);

    KvBlockPool& pool_;
    Entries      all_;    // every entry, in no particular order
    std::list<Entries::iterator> idle_;   // entries whose block only the cache holds; front = released longest ago
    std::unordered_multimap<uint64_t, Entries::iterator> entries_;
    std::unordered_map<int32_t, Entries::iterator>       by_block_;   // a cached block's entry
    std::unordered_multimap<int32_t, Entries::iterator>  children_;   // parent block -> entries below it
};

}  // namespace prepack
