// One sequence's LazyLLM state across steps: how deep each of its tokens has
// been computed (each layer's KV holds its own subset of the tokens), the aux
// cache of pruned tokens' hidden states, and counts of the work done.
//
// Invariant: a token's K/V exist at layers 0..depth[slot] and nowhere deeper;
// when depth[slot] is below the last layer, the aux cache holds its hidden
// state after layer depth[slot] (the input its next layer needs).
#pragma once

#include <cstdint>
#include <vector>

#include "core/lazyllm/aux_cache.h"
#include "core/lazyllm/lazy_schedule.h"

namespace prepack {

class LazyState {
public:
    // For a sequence whose first `computed` tokens already have K/V in every
    // layer (a shared or cached prefix).
    LazyState(KvBlockPool& pool, int32_t n_layers, int32_t dim, LazySchedule schedule, int32_t computed);

    const LazySchedule& schedule() const { return schedule_; }
    int32_t n_layers() const { return n_layers_; }
    AuxCache& aux() { return aux_; }

    // Per token slot: the deepest layer holding its K/V (-1: none yet).
    // Grows on demand; the attention kernel reads it directly.
    const int16_t* depth() const { return depth_.data(); }
    int16_t depth(int32_t slot) const { return slot < static_cast<int32_t>(depth_.size()) ? depth_[slot] : -1; }
    // Records that `slot` was computed at `layer` (its K/V written there).
    void Computed(int32_t slot, int32_t layer);
    void Reserve(int32_t slots);

    // Token-layers computed so far, per layer, for the prompt tokens that
    // were not already computed at construction.
    const std::vector<int64_t>& prompt_work() const { return prompt_work_; }
    void set_n_prompt(int32_t n) { n_prompt_ = n; }
    // Fraction of those token-layers computed (1.0 = no pruning).
    double PromptWorkFraction() const;
    // Per layer: fraction of prompt tokens whose K/V that layer holds.
    std::vector<double> PromptLayerFractions() const;
    // A token computed twice at one layer would break the aux-cache
    // contract; counted so tests can check it stays 0.
    int64_t recomputed() const { return recomputed_; }

private:
    int32_t              n_layers_;
    LazySchedule         schedule_;
    AuxCache             aux_;
    std::vector<int16_t> depth_;
    std::vector<int64_t> prompt_work_;
    int32_t              first_ = 0;   // tokens computed before this state existed
    int32_t              n_prompt_ = 0;
    int64_t              recomputed_ = 0;
};

}  // namespace prepack
