// LazyLLM's aux cache: the hidden state of each token a sequence pruned, at
// the layer it was pruned after, so a later step that needs the token again
// resumes it from there instead of recomputing it from layer 0.
//
// The states live in blocks taken from the KV pool, so they count against
// the same memory budget as the KV cache (a pruned token needs one hidden
// vector here and none of the K/V rows of the layers it skipped).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/kv/kv_cache.h"

namespace prepack {

class AuxCache {
public:
    AuxCache(KvBlockPool& pool, int32_t dim);
    ~AuxCache();   // returns its blocks to the pool
    AuxCache(const AuxCache&) = delete;
    AuxCache& operator=(const AuxCache&) = delete;

    // Whether the pool's blocks can hold a hidden vector at all.
    bool usable() const { return cells_per_piece_ > 0; }
    // Pool blocks that `cells` hidden states need.
    int64_t BlocksFor(int64_t cells) const;
    // Takes the blocks for `cells` states now, so that Put() of that many
    // never fails (what the engine does at admission). RESOURCE_EXHAUSTED
    // when the pool lacks them; what was taken stays.
    absl::Status Reserve(int64_t cells);
    // Stores `dim` floats for token `slot` (replacing any). False when the
    // pool has no free block for it: the caller keeps the token instead.
    bool Put(int32_t slot, const float* hidden) { return Put(slot, hidden, sizeof(float) * dim_); }
    // The same for a state of `bytes` <= dim floats' (a GPU's bf16 row), in
    // the pool's memory like the cells (device memory for a GPU's pool).
    bool Put(int32_t slot, const void* hidden, size_t bytes);
    // The stored state of `slot` (in the pool's memory), or null.
    const float* Get(int32_t slot) const;
    // Frees the cell of `slot` (no-op if absent).
    void Erase(int32_t slot);
    // Drops everything and gives the blocks back.
    void Clear();

    int32_t  size() const { return static_cast<int32_t>(where_.size()); }
    uint64_t bytes() const { return blocks_.size() * pool_.bytes_per_block(); }

private:
    bool AddBlock();

    KvBlockPool&                        pool_;
    int32_t                             dim_;
    int32_t                             cells_per_piece_;   // hidden vectors per (layer, K|V) piece of a block
    std::vector<int32_t>                blocks_;
    std::vector<float*>                 free_cells_;
    std::unordered_map<int32_t, float*> where_;
};

}  // namespace prepack
