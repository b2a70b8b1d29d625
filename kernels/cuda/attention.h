// Causal attention over the paged KV cache on the GPU: the CPU's
// cpu::PagedAttention (same slab layout, same spans semantics) with the
// spans flattened to per-row arrays on the device. One thread block per
// (query row, head) with an online softmax over chunks of keys: correct on
// every shape, not yet the flash-style tiled kernel (issue 9).
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
};

// Stores each row's K and V (kv_dim elements each, from column `k_col` of
// the rows of `qkv`, stride `qkv_stride`, dtype `act`) into the paged slabs
// of `kv` at the row's own position (rows.horizon), rounded to the cache's
// dtype: the forward pass's KV append, before attention reads it.
void AppendKv(const void* qkv, cpu::DType act, int64_t qkv_stride, int64_t k_col, const DeviceRows& rows,
              const cpu::PagedKv& kv);

// q and out: device buffers of `act` with the strides of `shape`; k and v:
// one layer's slabs of `kv` dtype (the pointers in `kv` are device
// pointers). False, launching nothing, for a head_dim above 512.
bool PagedAttention(const void* q, void* out, cpu::DType act, const cpu::AttentionShape& shape, const DeviceRows& rows,
                    const cpu::PagedKv& kv);

}  // namespace prepack::cuda
