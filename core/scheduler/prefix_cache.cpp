#include "core/scheduler/prefix_cache.h"

#include <algorithm>

namespace prepack {

PrefixCache::PrefixCache(KvBlockPool& pool) : pool_(pool) {
    pool_.SetWatchListener([this](int32_t block, bool idle) { OnWatch(block, idle); });
}

PrefixCache::~PrefixCache() {
    for (const Entry& e : all_) {
        pool_.Watch(e.block, false);
        pool_.Release(e.block);
    }
    pool_.SetWatchListener(nullptr);
}

void PrefixCache::OnWatch(int32_t block, bool idle) {
    auto found = by_block_.find(block);
    if (found == by_block_.end()) return;
    Entry& e = *found->second;
    if (idle == e.idle) return;
    e.idle = idle;
    if (idle) {
        e.idle_pos = idle_.insert(idle_.end(), found->second);   // most recently released last
    } else {
        idle_.erase(e.idle_pos);
    }
}

uint64_t PrefixCache::ChainHash(uint64_t parent, const int32_t* tokens, int32_t n) {
    uint64_t h = parent ^ 0x9E3779B97F4A7C15ull;
    for (int32_t i = 0; i < n; ++i) {
        h ^= static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xBF58476D1CE4E5B9ull;
    }
    return h;
}

PrefixCache::Entries::iterator PrefixCache::Find(uint64_t hash, const int32_t* tokens, int32_t parent) {
    auto [lo, hi] = entries_.equal_range(hash);
    for (auto it = lo; it != hi; ++it) {
        const Entry& e = *it->second;
        if (e.parent == parent && std::equal(e.tokens.begin(), e.tokens.end(), tokens)) return it->second;
    }
    return all_.end();
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
        if (it == all_.end()) break;
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
        if (it != all_.end()) {
            parent = it->block;
            continue;
        }
        const int32_t block = table.blocks()[i];
        if (by_block_.count(block) > 0) break;   // cached under another chain: keep the one entry
        pool_.AddRef(block);   // the table holds it too: in use, not idle
        const Entries::iterator added =
            all_.insert(all_.end(), Entry{h, block, parent, std::vector<int32_t>(block_tokens, block_tokens + bs)});
        entries_.emplace(h, added);
        by_block_.emplace(block, added);
        children_.emplace(parent, added);
        pool_.Watch(block, true);
        parent = block;
    }
}

void PrefixCache::Erase(Entries::iterator it) {
    // Children first (recursively); collect them before erasing anything.
    std::vector<Entries::iterator> kids;
    auto [clo, chi] = children_.equal_range(it->block);
    for (auto c = clo; c != chi; ++c) kids.push_back(c->second);
    for (Entries::iterator k : kids) Erase(k);
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
    by_block_.erase(it->block);
    if (it->idle) idle_.erase(it->idle_pos);
    pool_.Watch(it->block, false);
    pool_.Release(it->block);
    all_.erase(it);
}

int32_t PrefixCache::Evict(int32_t n) {
    int32_t freed = 0;
    while (freed < n && !idle_.empty()) {
        const int32_t before = pool_.num_free();
        Erase(idle_.front());
        freed += pool_.num_free() - before;
    }
    return freed;
}

}  // namespace prepack
