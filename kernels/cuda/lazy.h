// LazyLLM's kernels on the GPU (the decisions stay on the host,
// core/lazyllm/lazy_prune.h): the last token's attention scores over its keys, and
// the gather that compacts the activations after pruning.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/matrix.h"

namespace prepack::cuda {

// One pruning sequence's scoring: its last query row, the last key it sees,
// its block table, its key depths (-1: every key held) and where its
// horizon + 1 scores go.
struct ScoreJob {
    int32_t row;
    int32_t horizon;
    int32_t table_begin;
    int32_t depth_begin;
    int32_t out_begin;
    int32_t window;     // rows row - window + 1 .. row, of tokens horizon - window + 1 .. horizon
    int32_t head_max;   // heads combined by their maximum (else their mean)
};

// cpu::LastQueryScores for each of `n_jobs` jobs (a device array): the
// attention probabilities of the window rows' queries over the keys each
// sees that the layer holds (key_depth[depth_begin + j] >= layer), averaged
// over the rows, then over heads (or their maximum); 0 for absent keys.
// Scores are formed as `shape` says (scale, soft-cap, sliding window: a
// row's probabilities cover its window's keys only), as on the CPU.
// `scores` holds `total` floats over all jobs, `scratch` twice as many.
void LastQueryScores(const void* q, cpu::DType act, const cpu::AttentionShape& shape, const ScoreJob* jobs,
                     int32_t n_jobs, const int32_t* tables, const int16_t* key_depth, int32_t layer,
                     const cpu::PagedKv& kv, float* scores, float* scratch, int64_t total);

// dst row r = the `row_bytes` at sources[r] (a device array of device
// pointers): activation rows and aux-cache cells into one compact buffer.
void GatherRows(const void* const* sources, void* dst, int64_t rows, int64_t row_bytes);

}  // namespace prepack::cuda
