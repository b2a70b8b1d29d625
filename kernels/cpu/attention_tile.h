// The inner loop of CPU attention: a tile of query rows (heads of queries
// that read the same KV head) attends to a run of one sequence's keys with an
// online softmax, FlashAttention style: keys are taken a chunk at a time
// (never more than one KV block), the chunk's scores are a small
// matrix product (rows x keys) and so is its weighted sum of V (rows x
// head_dim), both in register-blocked kernels; no rows x keys matrix beyond
// one chunk is ever formed.
//
// Prefill tiles have many rows (16 queries x the GQA group), so each K and V
// row loaded is used by all of them; a decode tile has `group` rows. Shared
// prefixes (cascade attention) are one tile whose rows are every member's
// queries, continued per member over its own keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/attention.h"

// Last: opens the per-level region (this header is per level, like its users).
#include "kernels/cpu/level_kernels.h"

PREPACK_ISA_BEGIN

class AttentionTile {
public:
    // Empties the tile for rows of `shape.head_dim` floats, scored as
    // `shape` says (scale, soft-cap, sliding window), and keys that arrive
    // in chunks of at most `max_chunk` (the KV block size, capped).
    void Reset(const AttentionShape& shape, int max_chunk);

    // Adds a row: query vector `q` (scaled here by shape.Scale()), seeing
    // keys up to `horizon` inclusive (and, under a sliding window, from
    // shape.FirstKey(horizon)). Rows must come in ascending horizon.
    void AddRow(const float* q, int64_t horizon);

    // Attends every row to keys [first_key, last_key] of `span` (its block
    // table and, under LazyLLM, which keys this layer holds) for KV head
    // `kv_head`, continuing from the state the rows already have.
    void Attend(const AttentionSpan& span, const PagedKv& kv, int32_t kv_head, int64_t first_key, int64_t last_key);

    // Row r's output (the weighted sum of V divided by the softmax sum).
    void Write(int r, float* out) const;

    // Copies row `from` of `other`'s state (running max, sum, weighted V)
    // into row `to` of this tile: a cascade member resumes from its prefix.
    void CopyState(const AttentionTile& other, int from, int to);

    int rows() const { return static_cast<int>(horizon_.size()); }

private:
    // T is the KV cache's element: float, or uint16_t holding bf16.
    template <typename T>
    void AttendChunks(const AttentionSpan& span, const T* k, const T* v, const PagedKv& kv, int32_t kv_head,
                      int64_t first_key, int64_t last_key);
    template <typename T>
    void TransposeKeys(const T* k_rows, int32_t stride, int n_keys);
    template <typename T>
    void ScoreByDots(int r_begin, const T* k_rows, int32_t stride, int n_keys);
    template <typename T>
    void PrefetchKeys(const T* k_rows, const T* v_rows, int32_t stride, int n_keys) const;
    void MaskAndSoftmax(int r_begin, int64_t c0, int n_keys, const AttentionSpan& span);
    template <typename T>
    void AccumulateV(int r_begin, const T* v_rows, int32_t stride, int n_keys);

    int   hd_ = 0;
    int   ld_ = 0;          // columns of kt_ / scores_: the chunk size rounded up to 16
    float scale_ = 1.0f;    // shape.Scale(), applied to queries as they are added
    float softcap_ = 0.0f;  // shape.softcap (0: none)
    int32_t window_ = 0;    // shape.window (0: none)
    std::vector<float> q_;        // [rows][hd], pre-scaled
    std::vector<int64_t> horizon_;
    std::vector<float> m_, l_, corr_;   // per row: running max, softmax sum, this chunk's rescale
    std::vector<float> acc_;      // [rows][hd]: weighted sum of V so far
    std::vector<float> scores_;   // [rows][ld]: the chunk's scores, then weights
    std::vector<float> kt_;       // [hd][ld]: the chunk's K, transposed
    std::vector<float> vz_;       // [chunk][hd]: V with absent (LazyLLM) keys zeroed
};

PREPACK_ISA_END
