// Causal attention over the paged KV cache on the GPU: the CPU's
// cpu::PagedAttention (same slab layout, same spans semantics). PagedAttention:
// one thread block per (query row, head) with an online softmax over chunks
// of keys (decode rows, LazyLLM rows, any row on any shape; split over the
// keys when the rows are few, continued after a CascadePrefix for rows that
// share a prefix). TiledAttention, flash-style, for runs of consecutive
// tokens of one sequence (prefill: packed, ragged or padded rows alike): a
// block takes a tile of queries x one head, streams the sequence's keys a
// tile at a time through shared memory, and stops at the tile's last
// visible key, so a prompt never touches keys it cannot see.
//
// Every kernel forms scores as `shape` says, as the CPU does: the query
// times shape.Scale(), then shape.softcap's soft-cap, and under a sliding
// window (shape.window) each query sees only its window's keys, those
// before it skipped, not read (kernels/cuda/score_rule.cuh).
#pragma once

#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/matrix.h"

namespace prepack::cuda {

struct DeviceRows {
    int64_t        rows;          // query rows
    const int32_t* horizon;       // per row: the last key it sees (its own slot); -1: a row in no span
    const int32_t* table_begin;   // per row: where its sequence's block table starts in `tables`
    const int32_t* tables;        // block tables, concatenated
    // When set, PagedAttention runs only for rows row_ids[0 .. rows) (the
    // others are TiledAttention's); AppendKv ignores it.
    const int32_t* row_ids = nullptr;
    // Cascade members (PagedAttention only): a row with key_begin[row] > 0
    // attends to keys from there on and merges the result with the shared
    // prefix's partial attention that CascadePrefix left at the row.
    const int32_t* key_begin = nullptr;
    const float*   partial_o = nullptr;     // [row, n_heads * head_dim], normalised
    const float*   partial_lse = nullptr;   // [row, n_heads]: log-sum-exp of the prefix's scores
    // LazyLLM (PagedAttention only): a row with depth_begin[row] >= 0 sees
    // key j only if key_depth[depth_begin[row] + j] >= layer (the layer holds it).
    const int16_t* key_depth = nullptr;
    const int32_t* depth_begin = nullptr;
    int32_t        layer = 0;
    // Split-K (flash-decoding), for steps with too few rows x heads to fill
    // the GPU (batch-1 decode): with n_splits > 1 each row's keys are cut
    // into ranges of split_keys, scored by separate blocks into split_o /
    // split_lse ([listed row, head, split] x head_dim, and x 1), and merged
    // (with a cascade prefix, if any) by a second kernel.
    int32_t        n_splits = 1;
    int32_t        split_keys = 0;
    float*         split_o = nullptr;
    float*         split_lse = nullptr;
};

// Rows [row, row + n_rows) of one sequence whose slots are consecutive from
// first_slot (each row sees the keys up to its own slot).
struct QueryTile {
    int32_t row;
    int32_t n_rows;        // 1 .. kQueryTileRows
    int32_t first_slot;
    int32_t table_begin;   // where the sequence's block table starts in `tables`
};
constexpr int kQueryTileRows = 32;
constexpr int kTiledMaxHeadDim = 256;

// Stores each row's K and V (kv_dim elements each, from column `k_col` of
// the rows of `qkv`, stride `qkv_stride`, dtype `act`) into the paged slabs
// of `kv` at the row's own position (rows.horizon), rounded to the cache's
// dtype: the forward pass's KV append, before attention reads it.
void AppendKv(const void* qkv, cpu::DType act, int64_t qkv_stride, int64_t k_col, const DeviceRows& rows,
              const cpu::PagedKv& kv);

// q and out: device buffers of `act` with the strides of `shape`; k and v:
// one layer's slabs of `kv` dtype (the pointers in `kv` are device
// pointers). False, launching nothing, for a head_dim above 512, or for
// cascade members (rows.key_begin) under a sliding window.
bool PagedAttention(const void* q, void* out, cpu::DType act, const cpu::AttentionShape& shape, const DeviceRows& rows,
                    const cpu::PagedKv& kv);

// Cascade attention's first step (Hydragen / FlashInfer cascade) for
// groups of decode rows whose block tables begin with the same shared
// prefix: tile.row indexes `member_rows` (the members, up to
// kQueryTileRows per tile), tile.first_slot is the prefix length, and
// tile.table_begin any member's table. Each prefix key is loaded once per
// tile and head and scored against every member; each member's prefix-only
// attention goes to partial_o / partial_lse, which PagedAttention then
// continues over the member's own keys (DeviceRows::key_begin). False,
// launching nothing, under a sliding window (each member's window starts
// elsewhere: such layers attend per row, as the CPU's PagedAttention does).
bool CascadePrefix(const void* q, cpu::DType act, const cpu::AttentionShape& shape, const QueryTile* tiles,
                   int32_t n_tiles, const int32_t* member_rows, const int32_t* tables, const cpu::PagedKv& kv,
                   float* partial_o, float* partial_lse);

// The same attention for `n_tiles` query tiles (a device array) against
// `tables` (device). False, launching nothing, for a head_dim above
// kTiledMaxHeadDim.
bool TiledAttention(const void* q, void* out, cpu::DType act, const cpu::AttentionShape& shape,
                    const QueryTile* tiles, int32_t n_tiles, const int32_t* tables, const cpu::PagedKv& kv);

}  // namespace prepack::cuda
