// Splitting an offline batch over N machines without losing BatchLLM's
// global prefix sharing (issue 40). Cutting the input file by line number
// (as vLLM's data-parallel example does) or by a hash of the id scatters
// every shared prefix over all shards, and each shard computes it again; the
// planner instead builds the prefix tree over the WHOLE batch, cuts it into
// BatchLLM's (nested) prefix groups and gives whole groups to shards.
//
// Work model. A shard's estimated work is
//     prefill_weight * (prompt tokens it computes) + decode_weight * (output tokens it generates)
// where the prompt tokens it computes are what BatchLLM computes on that
// shard alone (each group prefix once, every member's own suffix; nested
// groups: each level once), and the output tokens are each request's
// expected output (the CLI passes max_tokens: an upper bound when EOS may
// end a request early). A decode token costs more wall time than a prefill
// token: prefill runs many tokens per weight read, decode one per sequence
// per step. kDecodeTokenWeight is that ratio as `prepack bench forward`
// measures it on synthetic:110m at the engine's decode batch size (see its
// comment); both weights are options (`batch plan --decode-weight`).
//
// Algorithm.
//   1. NestGroups over the whole batch (the single-machine BatchLLM
//      grouping, with the engine's options: prefixes of at least one KV
//      block). Its top-level nodes and the requests in no group are the
//      units; a unit's requests are laid out depth first (children by their
//      lowest request index), so any contiguous run of them touches only
//      the nodes on the run's paths.
//   2. LPT (longest processing time first): units in order of estimated
//      work, largest first, each to the shard with the least work so far.
//   3. A unit is split over shards only when it alone exceeds a shard's
//      fair share (total work / N) by more than `tolerance`, or when it is
//      a whole unit (not the rest of a split one) and placing it whole
//      would leave the least loaded shard more than `tolerance` over the
//      share, by at least the prefix a cut repeats (LPT alone leaves three
//      equal groups on two shards at 2:1). A cut needs the room left on
//      the shard to be at least that prefix. The head of the unit (a
//      contiguous run of its requests) fills the shard up to the share and
//      the rest goes back into the queue; the cut is where |head work -
//      room| + the work of the prefix tokens both sides then compute is
//      smallest, so it moves to a group boundary when that costs less than
//      a prefix computed twice. Each piece computes the prefixes on its
//      paths again, on purpose: the price of balance, reported by the plan
//      (split_prefix_tokens), and the share grows by it. A single request
//      is never split: one larger than the share leaves its shard over.
//   4. Every shard's requests go back into input order, and each shard is
//      evaluated by running NestGroups over its own prompts (what
//      `prepack batch` on that shard would group), as are the two naive
//      splits shown for contrast: contiguous (lines 0..k, k..2k, ...) and
//      hashed (FNV-1a of the request id, mod N).
//
// Bounds. Each cut fills the shard it is placed on up to its share, so a
// plan makes about N - 1 cuts at most, and the prompt tokens computed over
// N shards exceed the single-machine figure by about (N - 1) x the longest
// prefix chain of the split groups at most (plus any difference between
// NestGroups on a shard and on the whole batch: both are greedy level by
// level); the heaviest shard's estimated work stays within `tolerance` of
// the share unless one request, or one group whose prefix exceeds the room
// a cut would leave, is larger.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/batchllm/prefix_tree.h"

namespace prepack {

// Wall time of one decode token over one prefill token in an offline batch,
// rounded. `prepack bench forward --model synthetic:110m --threads 2
// --prompt-tokens 512 --decode-tokens 32 --decode-batch 64` (the engine's
// default --max-running; two runs on the project's 2-vCPU Xeon, f32):
// prefill 2017-2023 tokens/s, decode of 64 sequences at once 673-674
// tokens/s, so 3.0x; at 16 sequences (430 tokens/s) 4.3-4.7x, and one
// sequence alone ~20x, which a full batch never runs. A long batch keeps
// about --max-running sequences decoding, so 3.
constexpr double kDecodeTokenWeight = 3.0;

struct ShardPlanOptions {
    int32_t         shards = 1;
    GroupingOptions grouping;                       // the engine uses min_prefix_tokens = KV block size
    double          prefill_weight = 1.0;           // per prompt token computed
    double          decode_weight = kDecodeTokenWeight;   // per expected output token
    double          tolerance = 0.05;               // see step 3 above
};

// One shard of a split, as BatchLLM would run it alone.
struct ShardFigures {
    std::vector<int32_t> requests;             // request indices, ascending (input order)
    int64_t              prompt_tokens = 0;    // logical: sum of its prompt lengths
    int64_t              prompt_tokens_computed = 0;   // NestGroups over its prompts
    int64_t              output_tokens = 0;    // expected
    double               work = 0.0;           // the work model above
};

struct SplitFigures {
    std::vector<ShardFigures> shards;
    int64_t prompt_tokens_computed = 0;   // summed over the shards
    double  mean_work = 0.0, max_work = 0.0, min_work = 0.0;
    // The heaviest shard over the mean, as a fraction (0 = perfectly even).
    double imbalance() const { return mean_work > 0 ? max_work / mean_work - 1.0 : 0.0; }
};

struct ShardPlan {
    std::vector<int32_t> shard_of;          // per request: its shard
    SplitFigures         plan;              // the planner's split
    SplitFigures         contiguous;        // lines 0..k, k..2k, ...
    SplitFigures         hashed;            // FNV-1a(id) mod N
    int64_t prompt_tokens = 0;              // logical, the whole batch
    int64_t unique_prompt_tokens = 0;       // the prefix tree's minimum (multi-level sharing, no cap)
    int64_t single_machine_tokens = 0;      // NestGroups over the whole batch: what one machine computes
    int64_t output_tokens = 0;              // expected, the whole batch
    int32_t groups = 0;                     // units of step 1 (top-level groups and ungrouped requests)
    int32_t split_groups = 0;               // units placed on more than one shard
    int32_t cuts = 0;                       // splits made (a unit over k shards: k - 1)
    int64_t split_prefix_tokens = 0;        // planned prompt tokens paid again because of splits
};

// The plan for `prompts` (token ids) with `output_tokens[i]` the expected
// output of request i (negative counts as 0). `ids` are the requests' ids
// as text for the hashed contrast split (empty: the decimal index).
// INVALID_ARGUMENT on shards < 1 or mismatched sizes.
absl::StatusOr<ShardPlan> PlanShards(const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<int32_t>& output_tokens, const std::vector<std::string>& ids,
                                     const ShardPlanOptions& options);

// The figures of any split (shard_of[i] in [0, options.shards)), each shard
// grouped on its own by NestGroups.
SplitFigures EvaluateSplit(const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& output_tokens,
                           const std::vector<int32_t>& shard_of, const ShardPlanOptions& options);

// Requests [k*n/N, (k+1)*n/N) to shard k.
std::vector<int32_t> ContiguousSplit(int32_t n, int32_t shards);
// Shard FNV-1a-64(id) mod N per id.
std::vector<int32_t> HashedSplit(const std::vector<std::string>& ids, int32_t shards);

}  // namespace prepack
