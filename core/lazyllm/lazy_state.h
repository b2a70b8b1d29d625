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

#include "core/base/status.h"
#include "core/lazyllm/aux_cache.h"
#include "core/lazyllm/lazy_schedule.h"
#include "core/lazyllm/lazy_scoring.h"

namespace prepack {

// How many pruned tokens one step may bring back when a request names no
// bound. Revived tokens ride along the step's rows (the weights are read for
// the decode token anyway), so a few per step cost little; an unbounded step
// on a long prompt can hand back most of what pruning saved. Chosen by
// measurement (docs/benchmarks.md, "LazyLLM"): 2, 4 and 8 were alike within
// noise on speed, 4 kept greedy agreement on stories260K within 3 points of
// no bound, 16 and more gave back the whole-generation gain on 1k prompts.
constexpr int32_t kDefaultLazyReviveLimit = 4;

// Under a bound, revival over a whole generation may spend at most this
// share of the work pruning skipped (both in token-layers: a token stopped
// or revived after layer L counts the n_layers - 1 - L layers after it). A
// revived token runs with a decode step's few rows, which costs about 1.5x a
// prefill row on the CPU (docs/benchmarks.md, "LazyLLM"), and with random or
// flat attention every pruned token is wanted back sooner or later: without
// this share a short prompt with a long answer spent all that pruning saved
// and more (0.94x). A quarter keeps ~60% of the saving however long the
// answer runs; on stories260K it kept greedy agreement where a half did
// (62.0% vs 61.6% over 32 tokens; none at all: 58.7%).
constexpr double kLazyReviveShare = 0.25;

// A request's revival bound as the APIs spell it: 0 = the default, -1 = no
// bound, N > 0 = at most N per step. INVALID_ARGUMENT below -1.
absl::StatusOr<int32_t> ResolveReviveLimit(int32_t requested);

class LazyState {
public:
    // For a sequence whose first `computed` tokens already have K/V in every
    // layer (a shared or cached prefix).
    LazyState(KvBlockPool& pool, int32_t n_layers, int32_t dim, LazySchedule schedule, int32_t computed);

    const LazySchedule& schedule() const { return schedule_; }
    // How tokens are scored and which are kept whatever their score.
    const LazyScoring& scoring() const { return scoring_; }
    void set_scoring(const LazyScoring& scoring) { scoring_ = scoring; }
    // At most this many pruned tokens come back in one step, and revival
    // spends at most kLazyReviveShare of the skipped work (negative: neither
    // bound, as in the paper). Each revived token costs its remaining layers,
    // so unbounded revival can hand back all the prefill saved (issue 19).
    int32_t revive_limit() const { return revive_limit_; }
    void set_revive_limit(int32_t limit) { revive_limit_ = limit; }
    int32_t n_layers() const { return n_layers_; }
    AuxCache& aux() { return aux_; }

    // Per token slot: the deepest layer holding its K/V (-1: none yet).
    // Grows on demand; the attention kernel reads it directly.
    const int16_t* depth() const { return depth_.data(); }
    int16_t depth(int32_t slot) const { return slot < static_cast<int32_t>(depth_.size()) ? depth_[slot] : -1; }
    // Records that `slot` was computed at `layer` (its K/V written there).
    void Computed(int32_t slot, int32_t layer);
    // Whether a token before `end` stopped at exactly `layer` and waits in
    // the aux cache (so a step could bring it back there).
    bool HasStoppedAt(int32_t layer, int32_t end) const;
    void Reserve(int32_t slots);

    // A forward step starts: the revival bound counts from here.
    void BeginStep();
    // Tokens this step may still bring back after `layer`: the step's bound
    // and what the revival share has left.
    int32_t revive_room(int32_t layer) const;
    // Records that a token stopped after `layer` (into the aux cache).
    void Stopped(int32_t layer);
    // Records that `n` tokens came back after `layer` in this step.
    void Revived(int32_t n, int32_t layer);
    // Tokens brought back over all steps (a token revived at two layers
    // counts twice), the most in one step, and the steps taken.
    int64_t revived() const { return revived_; }
    int32_t max_revived_in_step() const { return max_revived_in_step_; }
    int64_t steps() const { return steps_; }
    // Token-layers that stopping skipped and that revival took back (a token
    // stopped twice counts twice); what was saved is the difference.
    int64_t skipped_work() const { return skipped_work_; }
    int64_t revived_work() const { return revived_work_; }

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
    LazyScoring          scoring_ = DefaultLazyScoring();
    AuxCache             aux_;
    std::vector<int16_t> depth_;
    std::vector<int64_t> prompt_work_;
    int32_t              first_ = 0;   // tokens computed before this state existed
    int32_t              n_prompt_ = 0;
    int64_t              recomputed_ = 0;
    int32_t              revive_limit_ = -1;
    int32_t              revived_in_step_ = 0;
    int32_t              max_revived_in_step_ = 0;
    int64_t              revived_ = 0;
    int64_t              steps_ = 0;
    int64_t              skipped_work_ = 0;
    int64_t              revived_work_ = 0;
};

}  // namespace prepack
