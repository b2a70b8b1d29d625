// LazyLLM attention over the keys a layer holds. Deep layers of a pruned
// sequence hold a fraction of its tokens (15% after the default schedule's
// last point); masking the absent ones would still load and score every key,
// so attention would shrink only with the queries, not with the keys. A span
// whose layer lacks keys is given a compact copy of the K/V rows it holds
// instead: its queries then attend to that copy as a plain span, and the
// work falls with queries x held keys, as the paper's pruning intends.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/attention.h"

namespace prepack::cpu {

// A span rewritten over a compact copy of its held keys (and the copy).
struct HeldKeys {
    AttentionSpan        span;      // q_slots are ranks among held keys; no key_depth
    PagedKv              kv;        // the copy: identity block table, same dtype
    std::vector<int32_t> q_rank;    // per query: how many held keys precede it
    std::vector<int32_t> blocks;    // 0, 1, 2, ...
    std::vector<uint8_t> k, v;      // held rows of this layer, in token order
};

// Whether compacting `span` pays: some key it could see is absent at its
// layer, and the copy's cost (the held keys read, written and attended by
// every query) is below masking's (every key loaded and scored for every
// query). Prefill spans with many queries compact unless nearly every key is
// held; a decode query with a few revived tokens only when few keys are.
bool WorthCompacting(const AttentionSpan& span);

// Fills `out` with `span`'s held keys at its layer (keys up to its last
// query's horizon) and the span over them. Queries must be held keys (a
// query's own K/V is written before attention), as AttentionSpan requires.
void CompactHeldKeys(const AttentionSpan& span, const PagedKv& kv, HeldKeys* out);

}  // namespace prepack::cpu
