// Paged KV cache: a pool of fixed-size blocks under a byte budget, and a
// per-sequence block table mapping token index -> (block, slot).
//
// Storage is one anonymous mapping laid out [layer][K|V][block][slot][kv_dim],
// so one layer's blocks are contiguous for attention and pages that are never
// used are never touched. Elements are f32 or bf16 (vLLM's kv_cache_dtype,
// llama.cpp's cache type): bf16 holds twice the tokens in the same budget
// and halves the bytes attention reads; the kernels widen it in registers.
// Blocks are reference-counted so sequences can share
// a prefix's blocks (BatchLLM / prefix caching); a block returns to the free
// list when its last reference is dropped. The pool is thread-safe.
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/model/model_config.h"
#include "core/base/status.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/matrix.h"

namespace prepack {

// Block storage that lives outside host memory (the CUDA backend's device
// memory, from plain cudaMalloc): the pool keeps its bookkeeping on the host
// and reaches the bytes only through `copy` (copy-on-write of shared
// blocks); `free` gives them back when the pool goes. Both are required.
struct KvStorage {
    void* base = nullptr;
    std::function<void(void* dst, const void* src, size_t bytes)> copy;
    std::function<void(void* base)> free;
};
// Allocates `bytes` of storage, or fails (RESOURCE_EXHAUSTED naming the size).
using KvStorageAllocator = std::function<absl::StatusOr<KvStorage>(size_t bytes)>;

class KvBlockPool {
public:
    // INVALID_ARGUMENT for a block size < 1, RESOURCE_EXHAUSTED when the
    // budget holds no block or the memory cannot be had. Storage is host
    // memory unless `allocator` provides it.
    static absl::StatusOr<std::unique_ptr<KvBlockPool>> Create(const ModelConfig& config,
                                                               int32_t block_size,
                                                               uint64_t budget_bytes,
                                                               cpu::DType dtype = cpu::DType::kF32,
                                                               const KvStorageAllocator& allocator = nullptr);
    ~KvBlockPool();
    KvBlockPool(const KvBlockPool&) = delete;
    KvBlockPool& operator=(const KvBlockPool&) = delete;

    // A free block with reference count 1; RESOURCE_EXHAUSTED when none is left.
    absl::StatusOr<int32_t> Allocate();
    void AddRef(int32_t block);
    void Release(int32_t block);   // frees the block when its count reaches 0
    int32_t RefCount(int32_t block) const;
    // A cache that holds one reference to a block can watch it: `listener`
    // hears (block, true) when a watched block's count drops to 1 (only the
    // cache holds it: it could be freed) and (block, false) when it rises
    // from 1 (in use again). Called on the thread that changed the count,
    // outside the pool's lock. One listener per pool; unwatch a block before
    // dropping the cache's own reference.
    void SetWatchListener(std::function<void(int32_t block, bool idle)> listener);
    void Watch(int32_t block, bool watched);
    // Copies every layer's K and V of block `src` into block `dst` (bytes: any dtype).
    void CopyBlock(int32_t src, int32_t dst);
    // Whether the blocks are in host memory (the CPU kernels can read them).
    bool on_host() const { return storage_.base == nullptr; }
    // Copies `bytes` between two places in the pool's memory (memcpy, or the
    // storage's own copy when it is not host memory).
    void CopyBytes(void* dst, const void* src, size_t bytes) const;

    int32_t  block_size() const { return block_size_; }
    int32_t  num_blocks() const { return num_blocks_; }
    int32_t  num_free() const;
    uint64_t bytes_per_block() const { return bytes_per_block_; }
    uint64_t used_bytes() const { return static_cast<uint64_t>(num_blocks_ - num_free()) * bytes_per_block_; }
    int32_t  kv_dim() const { return kv_dim_; }
    int32_t  n_layers() const { return n_layers_; }

    cpu::DType dtype() const { return dtype_; }
    size_t     elem_bytes() const { return dtype_ == cpu::DType::kBf16 ? 2 : 4; }

    // [block_size, kv_dim] K (or V) rows of `block` at `layer`, as raw bytes
    // (`piece_bytes()` of them) ...
    void*  KBytes(int32_t layer, int32_t block) const { return Slab(layer, 0) + Offset(block); }
    void*  VBytes(int32_t layer, int32_t block) const { return Slab(layer, 1) + Offset(block); }
    size_t piece_bytes() const { return block_elems_ * elem_bytes(); }
    // ... or typed, for an f32 pool (asserted).
    float* K(int32_t layer, int32_t block) const { return AsF32(KBytes(layer, block)); }
    float* V(int32_t layer, int32_t block) const { return AsF32(VBytes(layer, block)); }
    // All of a layer's K and V blocks as the attention kernels read them.
    cpu::PagedKv Layer(int32_t layer) const {
        return {Slab(layer, 0), Slab(layer, 1), block_size_, kv_dim_, dtype_};
    }
    // Stores token `slot`'s K and V rows (kv_dim f32 each) at `layer` in
    // `block`, rounded to the pool's dtype. Host storage only.
    void WriteRow(int32_t layer, int32_t block, int32_t slot, const float* k, const float* v);

private:
    KvBlockPool() = default;
    char* Slab(int32_t layer, int kv) const {
        return base_ + (static_cast<size_t>(layer) * 2 + kv) * num_blocks_ * piece_bytes();
    }
    size_t Offset(int32_t block) const { return static_cast<size_t>(block) * piece_bytes(); }
    float* AsF32(void* p) const {
        assert(dtype_ == cpu::DType::kF32);
        return static_cast<float*>(p);
    }

    char*                base_ = nullptr;
    KvStorage            storage_;   // set when the blocks are not host memory
    cpu::DType           dtype_ = cpu::DType::kF32;
    size_t               map_bytes_ = 0;
    int32_t              n_layers_ = 0, kv_dim_ = 0, block_size_ = 0, num_blocks_ = 0;
    size_t               block_elems_ = 0;   // block_size * kv_dim
    uint64_t             bytes_per_block_ = 0;
    mutable std::mutex   mu_;
    std::vector<int32_t> free_;
    std::vector<int32_t> refs_;
    std::vector<uint8_t> watched_;
    std::function<void(int32_t, bool)> listener_;
};

// A KV budget when the caller names none: room for `min_tokens` tokens and
// at least 256 MiB, but never more than a quarter of the memory free now
// (pages are only touched as blocks are used).
uint64_t AutoKvBudget(const ModelConfig& config, int64_t min_tokens, cpu::DType dtype = cpu::DType::kF32);

// The blocks that hold one sequence's KV, in token order.
class BlockTable {
public:
    BlockTable() = default;
    ~BlockTable();   // releases its blocks
    BlockTable(BlockTable&&) noexcept;
    BlockTable& operator=(BlockTable&&) noexcept;
    BlockTable(const BlockTable&) = delete;
    BlockTable& operator=(const BlockTable&) = delete;

    // Makes room for `n_tokens` tokens in total, allocating blocks from
    // `pool`. The block the next token lands in is made private first when
    // it is shared (copy on write), so writes never touch another sequence's
    // cache. On RESOURCE_EXHAUSTED nothing was allocated or copied.
    absl::Status Reserve(KvBlockPool& pool, int32_t n_tokens);
    // Starts this (empty) table as a sharer of the first `n_tokens` tokens of
    // `blocks` (a prefix computed by another sequence): takes a reference to
    // each block that holds them; num_tokens() becomes n_tokens.
    void Share(KvBlockPool& pool, const std::vector<int32_t>& blocks, int32_t n_tokens);
    // Keeps only the blocks that `n_tokens` tokens need and releases the
    // rest (after a padded prefill wrote pad K/V past the real tokens).
    void Trim(int32_t n_tokens);
    // Drops every block reference.
    void Release();

    const std::vector<int32_t>& blocks() const { return blocks_; }
    int32_t capacity() const;   // tokens that fit in the reserved blocks
    // Tokens whose K/V have been written (the forward pass advances it).
    int32_t num_tokens() const { return num_tokens_; }
    void    set_num_tokens(int32_t n) { num_tokens_ = n; }

private:
    KvBlockPool*         pool_ = nullptr;
    std::vector<int32_t> blocks_;
    int32_t              num_tokens_ = 0;
};

}  // namespace prepack
