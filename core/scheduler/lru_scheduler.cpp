#include "core/scheduler/lru_scheduler.h"

#include <algorithm>

namespace prepack {

void LruScheduler::ReuseComputedKv(Sequence& s) {
    const std::vector<int32_t> blocks = cache_.Lookup(s.tokens, s.n_prompt);
    if (blocks.empty()) return;
    const int32_t n = static_cast<int32_t>(blocks.size()) * pool_.block_size();
    s.kv.Share(pool_, blocks, n);
    s.num_computed = n;
    s.cached_tokens = n;
}

void LruScheduler::OnComputed(Sequence& s) {
    // A pruned sequence's KV is not complete in every layer: never share it.
    if (!s.lazy) cache_.Insert(s.tokens, s.kv, std::min(s.num_computed, s.n_prompt));
}

}  // namespace prepack
