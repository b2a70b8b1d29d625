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

// Called by a pass as its step starts: makes room in each LazyLLM
// sequence's depth bookkeeping for the tokens `plan` adds, and starts the
// step's revival count.
void BeginLazyStep(const StepPlan& plan);

// The keep fraction of `lazy`'s schedule after `layer`, or a negative value
// when it does not prune there.
float KeepAfter(const LazyState& lazy, int32_t layer);

// Whether pruning after `layer` can change the rows of `s` (`rows` this
// step): its schedule prunes there, and either several rows go on (some may
// stop) or a token that stopped at exactly `layer` could come back (and the
// revival bounds leave room for one). A lone row is the sequence's last
// token, which always goes on, so a decode step with nothing to bring back
// skips the scoring as well as the pruning.
bool PruneCanChange(const SeqStep& s, SeqRows rows, int32_t layer);

// Whether pruning can change any sequence of `plan` after `layer`.
bool PrunesAfter(const StepPlan& plan, const std::vector<SeqRows>& seq_rows, int32_t layer);

// `score` itself when `radius` is 0, else its first `n` entries each raised
// to the largest within `radius` of it (a 1-D max pool, stride 1), in `out`.
const std::vector<float>& PooledScores(const std::vector<float>& score, int32_t n, int32_t radius,
                                       std::vector<float>* out);

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
// `scores` pooled over the sequence's LazyScoring::pool, its first `sinks`
// and last `recent` tokens whatever their score (even past that count), its
// last token always (ties to the more recent token); rows it
// drops are Put into its aux cache from `x` (rows of `row_bytes`), which it
// keeps if the cache is full; selected tokens that stopped at exactly this
// layer come back from the cache, the best-scored first, at most the
// sequence's revive_room(layer) of them. Sequences where PruneCanChange is
// false keep their rows (and need no scores).
PrunedRows PlanPrune(const StepPlan& plan, int32_t layer, const std::vector<SeqRows>& seq_rows,
                     const std::vector<int32_t>& row_pos, const std::vector<int32_t>& row_slot,
                     const std::vector<std::vector<float>>& scores, const char* x, size_t row_bytes);

// After the new rows were gathered: frees the aux cells of the tokens that
// came back (a later pruning stores them afresh).
void EraseRevived(const StepPlan& plan, const PrunedRows& rows);

}  // namespace prepack
