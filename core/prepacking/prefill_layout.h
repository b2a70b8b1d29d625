// Prefill layouts: four ways to lay a batch of prompts of different lengths
// out for the forward pass, all lowered to StepPlans (core/step/step_plan.h).
//
//   padded  one [B, max_len] batch, right-padded; pad rows are computed like
//           tokens (GEMMs and attention), the Hugging Face default that the
//           Prepacking paper measures against. Kept for comparison.
//   sorted  prompts sorted by length (longest first), then padded in
//           mini-batches: the paper's "length-ordered" baseline.
//   packed  Prepacking: prompts bin-packed (BFD by default) into rows of
//           capacity C (default: the longest prompt); positions restart at 0
//           per prompt, attention is causal within a prompt and never crosses
//           prompts, only row tails are padding (GEMM rows, no attention).
//   ragged  every prompt flattened into one token stream, no padding (varlen).
//
// Each prompt keeps its final token in the pass and its logits are taken
// from its last position (the reference code holds the last token back for
// the first decode step instead; the result is the same token). Each
// prompt's K/V are written straight into its own blocks during the pass, so
// there is nothing to unpack afterwards.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/prepacking/bin_packing.h"
#include "core/forward/cpu_pass.h"

namespace prepack {

enum class PrefillLayout { kPadded, kSorted, kPacked, kRagged };

const char* PrefillLayoutName(PrefillLayout layout);
// "padded", "sorted", "packed" or "ragged"; INVALID_ARGUMENT otherwise.
absl::StatusOr<PrefillLayout> ParsePrefillLayout(std::string_view name);

struct LayoutOptions {
    int32_t    pack_capacity = 0;   // packed row capacity; 0 = the longest prompt
    BinPacking packing = BinPacking::kBestFitDecreasing;
    int32_t    sorted_batch = 8;    // prompts per mini-batch of the sorted layout
    int32_t    pad_token = 0;       // id fed at padding rows
};

// One forward pass of a layout.
struct LayoutStep {
    StepPlan             plan;     // spans carry nullptr KV until BindKv()
    std::vector<int32_t> prompt;   // plan.seqs[i] prefills prompt[i]
    int32_t              rows = 0;
    int32_t              width = 0;
};

struct PrefillPlan {
    PrefillLayout           layout;
    std::vector<LayoutStep> steps;
    int32_t                 rows = 0;               // rectangular rows over all steps (ragged: 1 per step)
    int64_t                 computed_tokens = 0;    // every row the GEMMs process, padding included
    int64_t                 prompt_tokens = 0;
    std::vector<int32_t>    kv_slots;               // per prompt: KV slots written during prefill (pads included)

    double padding_fraction() const {
        return computed_tokens ? 1.0 - double(prompt_tokens) / double(computed_tokens) : 0.0;
    }
};

// Lays out `prompts` (token ids, each non-empty and within the context).
// INVALID_ARGUMENT for an empty batch or prompt, a packing capacity below the
// longest prompt, or sorted_batch < 1.
absl::StatusOr<PrefillPlan> PlanPrefill(PrefillLayout layout, const std::vector<std::vector<int32_t>>& prompts,
                                        const LayoutOptions& options);

struct PrefillResult {
    std::vector<float> logits;              // [prompts, vocab]: the next-token logits of each prompt
    uint64_t           peak_kv_bytes = 0;   // most KV bytes held by the batch at any point
    uint64_t           activation_bytes = 0;   // the largest step's activation workspace
};

// Runs `plan` for prompts whose (empty) block tables are `kv`: reserves each
// prompt's blocks just before its step, writes its K/V there, and afterwards
// keeps only the blocks its tokens need. On error every block is released.
absl::StatusOr<PrefillResult> RunPrefill(StepRunner& forward, PrefillPlan& plan,
                                         const std::vector<BlockTable*>& kv);

// Peak bytes (activations of the largest step + KV) that `plan` needs,
// computed without running it; used to ask how many prompts fit in a budget.
uint64_t EstimatePeakBytes(const ModelConfig& config, const PrefillPlan& plan, int32_t kv_block_size);

}  // namespace prepack
