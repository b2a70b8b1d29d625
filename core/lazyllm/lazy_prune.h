// LazyLLM's pruning decision inside a forward step, shared by the CPU and
// GPU passes: after a pruning layer, which rows go on, which stop (their
// hidden states to the aux cache) and which tokens an earlier step pruned
// come back (from the aux cache). The passes only move the bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/lazyllm/lazy_state.h"
#include "core/step/step_plan.h"
#include "core/step/step_rows.h"

namespace prepack {

// Makes room in each LazyLLM sequence's depth bookkeeping for the tokens
// `plan` adds (called by a pass as its step starts).
void ReserveLazyDepths(const StepPlan& plan);

// The keep fraction of `lazy`'s schedule after `layer`, or a negative value
// when it does not prune there.
float KeepAfter(const LazyState& lazy, int32_t layer);

// Whether any sequence of `plan` prunes after `layer` (never after the last).
bool PrunesAfter(const StepPlan& plan, int32_t layer, int32_t n_layers);

// The rows after pruning: per row its RoPE position, token index and where
// its hidden state is now (an activation row or an aux cell, in the memory
// the activations live in); per sequence its range.
struct PrunedRows {
    std::vector<int32_t>     pos, slot;
    std::vector<const void*> source;
    std::vector<SeqRows>     seq_rows;
    bool                     unchanged = false;   // nothing dropped or brought back: keep the rows
};

// For each pruning sequence, keeps its best ceil(keep * context) tokens by
// `scores` (its last token always; ties to the more recent token); rows it
// drops are Put into its aux cache from `x` (rows of `row_bytes`), which it
// keeps if the cache is full; selected tokens that stopped at exactly this
// layer come back from the cache. Other sequences keep their rows.
PrunedRows PlanPrune(const StepPlan& plan, int32_t layer, const std::vector<SeqRows>& seq_rows,
                     const std::vector<int32_t>& row_pos, const std::vector<int32_t>& row_slot,
                     const std::vector<std::vector<float>>& scores, const char* x, size_t row_bytes);

// After the new rows were gathered: frees the aux cells of the tokens that
// came back (a later pruning stores them afresh).
void EraseRevived(const StepPlan& plan, const PrunedRows& rows);

}  // namespace prepack
