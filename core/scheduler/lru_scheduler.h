// The `lru` policy: FCFS continuous batching plus vLLM-style automatic
// prefix caching (core/scheduler/prefix_cache.h). Every computed prompt's
// whole blocks are offered to the cache; a new sequence starts from the
// longest cached chain of blocks that begins its prompt; cached blocks that
// no sequence uses are given back, least recently used first, when
// admission or decode needs memory. The baseline BatchLLM is measured against.
//
// Requests that arrive together with a common prefix (a chat service's
// system prompt, the `n` choices of one prompt) would each compute that
// prefix if admitted in the same step, since the cache only learns of
// blocks once they are computed. So a waiting sequence that shares whole
// blocks with a running sequence still prefilling them waits until that
// one has computed them, then takes them from the cache: the prefix is
// computed once, for a step or so of delay to the later arrivals.
#pragma once

#include "core/scheduler/fcfs_scheduler.h"
#include "core/scheduler/prefix_cache.h"

namespace prepack {

class LruScheduler : public FcfsScheduler {
public:
    LruScheduler(const Model& model, KvBlockPool& pool, SequenceQueue& waiting, SchedulerLimits limits)
        : FcfsScheduler(model, pool, waiting, limits), cache_(pool) {}
    const char* name() const override { return "lru"; }
    int32_t cached_blocks() const override { return cache_.IdleBlocks(); }

protected:
    void    ReuseComputedKv(Sequence& seq) override;
    bool    Ready(const Sequence& seq) override;
    int32_t FreeCachedBlocks(int32_t n) override { return cache_.Evict(n); }
    void    OnComputed(Sequence& seq) override;

private:
    PrefixCache cache_;
};

}  // namespace prepack
