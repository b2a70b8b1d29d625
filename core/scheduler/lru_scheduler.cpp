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

bool LruScheduler::Ready(const Sequence& s) {
    // What Lookup could hand `s` (never its last prompt token), in whole blocks.
    const int32_t bs = pool_.block_size();
    const int32_t limit = std::min<int32_t>(s.n_prompt, static_cast<int32_t>(s.tokens.size()) - 1);
    if (limit < bs || s.wants_prompt_logprobs()) return true;   // takes nothing from the cache
    int32_t coming = 0;   // prompt tokens of `s` that a running prefill will put in the cache
    for (const std::shared_ptr<Sequence>& r : running_) {
        // Only a prefill in progress whose blocks the cache will get matters
        // (a pruned sequence's never go there); few run at once.
        if (r->lazy || r->internal || r->num_computed >= r->n_prompt) continue;
        const int32_t n = std::min(limit, r->n_prompt);
        const auto end = s.tokens.begin() + n;
        const int32_t common = static_cast<int32_t>(std::mismatch(s.tokens.begin(), end, r->tokens.begin()).first -
                                                    s.tokens.begin());
        if (common / bs * bs > r->num_computed) coming = std::max(coming, common / bs * bs);
    }
    // Wait for them, unless the cache holds them already.
    return coming == 0 || static_cast<int32_t>(cache_.Lookup(s.tokens, s.n_prompt).size()) * bs >= coming;
}

void LruScheduler::OnComputed(Sequence& s) {
    // A pruned sequence's KV is not complete in every layer: never share it.
    if (!s.lazy) cache_.Insert(s.tokens, s.kv, std::min(s.num_computed, s.n_prompt));
}

}  // namespace prepack
