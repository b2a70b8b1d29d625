#include "core/prefix_cache.h"

#include <algorithm>

namespace prepack {

PrefixCache::~PrefixCache() {
    for (const Entry& e : lru_) pool_.Release(e.block);
}

uint64_t PrefixCache::ChainHash(uint64_t parent, const int32_t* tokens, int32_t n) {
    uint64_t h = parent ^ 0x9E3779B97F4A7C15ull;
    for (int32_t i = 0; i < n; ++i) {
        h ^= static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xBF58476D1CE4E5B9ull;
    }
    return h;
}

PrefixCache::Lru::iterator PrefixCache::Find(uint64_t hash, const int32_t* tokens, int32_t parent) {
    auto [lo, hi] = entries_.equal_range(hash);
    for (auto it = lo; it != hi; ++it) {
        const Entry& e = *it->second;
        if (e.parent == parent && std::equal(e.tokens.begin(), e.tokens.end(), tokens)) return it->second;
    }
    return lru_.end();
}

std::vector<int32_t> PrefixCache::Lookup(const std::vector<int32_t>& tokens, int32_t max_tokens) {
    const int32_t bs = pool_.block_size();
    std::vector<int32_t> blocks;
    uint64_t h = 0;
    const int32_t limit = std::min<int32_t>(max_tokens, static_cast<int32_t>(tokens.size()) - 1);
    int32_t parent = -1;
    for (int32_t end = bs; end <= limit; end += bs) {
        h = ChainHash(h, tokens.data() + end - bs, bs);
        auto it = Find(h, tokens.data() + end - bs, parent);
        if (it == lru_.end()) break;
        lru_.splice(lru_.begin(), lru_, it);   // most recently used
        blocks.push_back(it->block);
        parent = it->block;
    }
    return blocks;
}

void PrefixCache::Insert(const std::vector<int32_t>& tokens, const BlockTable& table, int32_t n_tokens) {
    const int32_t bs = pool_.block_size();
    uint64_t h = 0;
    int32_t parent = -1;
    for (int32_t end = bs, i = 0; end <= n_tokens && i < static_cast<int32_t>(table.blocks().size()); end += bs, ++i) {
        const int32_t* block_tokens = tokens.data() + end - bs;
        h = ChainHash(h, block_tokens, bs);
        auto it = Find(h, block_tokens, parent);
        if (it != lru_.end()) {
            lru_.splice(lru_.begin(), lru_, it);
            parent = it->block;
            continue;
        }
        const int32_t block = table.blocks()[i];
        pool_.AddRef(block);
        lru_.push_front(Entry{h, block, parent, std::vector<int32_t>(block_tokens, block_tokens + bs)});
        entries_.emplace(h, lru_.begin());
        children_.emplace(parent, lru_.begin());
        parent = block;
    }
}

void PrefixCache::Erase(Lru::iterator it) {
    // Children first (recursively); collect them before erasing anything.
    std::vector<Lru::iterator> kids;
    auto [clo, chi] = children_.equal_range(it->block);
    for (auto c = clo; c != chi; ++c) kids.push_back(c->second);
    for (Lru::iterator k : kids) Erase(k);
    auto [lo, hi] = entries_.equal_range(it->hash);
    for (auto e = lo; e != hi; ++e) {
        if (e->second == it) {
            entries_.erase(e);
            break;
        }
    }
    auto [plo, phi] = children_.equal_range(it->parent);
    for (auto c = plo; c != phi; ++c) {
        if (c->second == it) {
            children_.erase(c);
            break;
        }
    }
    pool_.Release(it->block);
    lru_.erase(it);
}

int32_t PrefixCache::IdleBlocks() const {
    int32_t n = 0;
    for (const Entry& e : lru_) n += pool_.RefCount(e.block) == 1;
    return n;
}

int32_t PrefixCache::Evict(int32_t n) {
    int32_t freed = 0;
    while (freed < n) {
        // The least recently used entry that only the cache holds.
        auto victim = lru_.end();
        for (auto it = lru_.end(); it != lru_.begin();) {
            --it;
            if (pool_.RefCount(it->block) == 1) {
                victim = it;
                break;
            }
        }
        if (victim == lru_.end()) break;
        const int32_t before = pool_.num_free();
        Erase(victim);
        freed += pool_.num_free() - before;
    }
    return freed;
}

}  // namespace prepack
