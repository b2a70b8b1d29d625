// The rows of a forward step as the passes track them through the layers:
// each row's RoPE position and token index, each sequence's range. Without
// LazyLLM they never change within a step; pruning moves them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/step/step_plan.h"

namespace prepack {

// Where a sequence's rows are in a layer's activations: contiguous, in
// token order.
struct SeqRows {
    int64_t begin;
    int32_t count;
};

// The rows `plan` starts with: per row its RoPE position and token index
// in its sequence (where its K/V go; -1 for rows in no span), per sequence
// its range. (LazyLLM sequences also need BeginLazyStep, lazyllm/lazy_prune.h.)
void InitStepRows(const StepPlan& plan, std::vector<int32_t>* pos, std::vector<int32_t>* slot,
                  std::vector<SeqRows>* seqs);

}  // namespace prepack
