#include "core/kv/kv_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "core/base/runtime.h"
#include "kernels/cpu/bf16.h"

namespace prepack {

absl::StatusOr<std::unique_ptr<KvBlockPool>> KvBlockPool::Create(const ModelConfig& c,
                                                                  int32_t block_size,
                                                                  uint64_t budget_bytes, cpu::DType dtype,
                                                                  const KvStorageAllocator& allocator) {
    if (block_size < 1 || block_size > 4096) {
        return absl::InvalidArgumentError(absl::StrCat("KV block size ", block_size, " is not in [1, 4096]"));
    }
    std::unique_ptr<KvBlockPool> p(new KvBlockPool());
    p->dtype_ = dtype;
    p->n_layers_ = c.n_layers;
    p->kv_dim_ = c.kv_dim();
    p->block_size_ = block_size;
    p->block_elems_ = static_cast<size_t>(block_size) * c.kv_dim();
    p->bytes_per_block_ = 2ull * c.n_layers * p->piece_bytes();
    const uint64_t n = budget_bytes / p->bytes_per_block_;
    if (n < 1) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "KV budget of ", budget_bytes, " bytes holds no block (one block of ", block_size,
            " tokens needs ", p->bytes_per_block_, " bytes)"));
    }
    if (n > (1u << 30)) {
        return absl::InvalidArgumentError(absl::StrCat("KV budget of ", budget_bytes, " bytes is too large"));
    }
    p->num_blocks_ = static_cast<int32_t>(n);
    p->map_bytes_ = n * p->bytes_per_block_;
    if (allocator) {
        PP_ASSIGN_OR_RETURN(p->storage_, allocator(p->map_bytes_));
        p->base_ = static_cast<char*>(p->storage_.base);
    } else {
        // MAP_NORESERVE: the budget is an upper bound; untouched pages cost nothing.
        void* m = mmap(nullptr, p->map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) {
            return absl::ResourceExhaustedError(
                absl::StrCat("cannot map ", p->map_bytes_, " bytes for the KV cache"));
        }
        p->base_ = static_cast<char*>(m);
    }
    p->refs_.assign(p->num_blocks_, 0);
    p->watched_.assign(p->num_blocks_, 0);
    p->free_.reserve(p->num_blocks_);
    // Hand out low block ids first: they are the ones already paged in.
    for (int32_t b = p->num_blocks_ - 1; b >= 0; --b) p->free_.push_back(b);
    return p;
}

uint64_t AutoKvBudget(const ModelConfig& config, int64_t min_tokens, cpu::DType dtype) {
    const uint64_t avail = AvailableMemoryBytes();
    uint64_t budget =
        std::max<uint64_t>(256ull << 20, config.KvBytesPerToken(dtype) * static_cast<uint64_t>(min_tokens));
    if (avail != 0) budget = std::min(budget, avail / 4);
    return budget;
}

KvBlockPool::~KvBlockPool() {
    if (!on_host()) {
        if (storage_.free) storage_.free(base_);
    } else if (base_ != nullptr) {
        munmap(base_, map_bytes_);
    }
}

absl::StatusOr<int32_t> KvBlockPool::Allocate() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "KV cache is full: all ", num_blocks_, " blocks of ", block_size_, " tokens are in use"));
    }
    const int32_t b = free_.back();
    free_.pop_back();
    refs_[b] = 1;
    return b;
}

void KvBlockPool::AddRef(int32_t block) {
    bool in_use_again;
    {
        std::lock_guard<std::mutex> lock(mu_);
        assert(refs_[block] > 0);
        in_use_again = ++refs_[block] == 2 && watched_[block];
    }
    if (in_use_again) listener_(block, false);
}

void KvBlockPool::Release(int32_t block) {
    bool idle;
    {
        std::lock_guard<std::mutex> lock(mu_);
        assert(refs_[block] > 0);
        const int32_t left = --refs_[block];
        if (left == 0) free_.push_back(block);
        idle = left == 1 && watched_[block];
    }
    if (idle) listener_(block, true);
}

void KvBlockPool::SetWatchListener(std::function<void(int32_t, bool)> listener) {
    std::lock_guard<std::mutex> lock(mu_);
    listener_ = std::move(listener);
    watched_.assign(num_blocks_, 0);
}

void KvBlockPool::Watch(int32_t block, bool watched) {
    std::lock_guard<std::mutex> lock(mu_);
    assert(listener_ && refs_[block] > 0);
    watched_[block] = watched;
}

int32_t KvBlockPool::RefCount(int32_t block) const {
    std::lock_guard<std::mutex> lock(mu_);
    return refs_[block];
}

void KvBlockPool::CopyBytes(void* dst, const void* src, size_t bytes) const {
    if (!on_host()) {
        storage_.copy(dst, src, bytes);
    } else {
        std::memcpy(dst, src, bytes);
    }
}

void KvBlockPool::CopyBlock(int32_t src, int32_t dst) {
    for (int32_t l = 0; l < n_layers_; ++l) {
        CopyBytes(KBytes(l, dst), KBytes(l, src), piece_bytes());
        CopyBytes(VBytes(l, dst), VBytes(l, src), piece_bytes());
    }
}

void KvBlockPool::WriteRow(int32_t layer, int32_t block, int32_t slot, const float* k, const float* v) {
    assert(on_host());
    const size_t off = static_cast<size_t>(slot) * kv_dim_ * elem_bytes();
    char* kd = static_cast<char*>(KBytes(layer, block)) + off;
    char* vd = static_cast<char*>(VBytes(layer, block)) + off;
    if (dtype_ == cpu::DType::kBf16) {
        cpu::F32ToBf16Row(k, reinterpret_cast<uint16_t*>(kd), kv_dim_);
        cpu::F32ToBf16Row(v, reinterpret_cast<uint16_t*>(vd), kv_dim_);
    } else {
        std::memcpy(kd, k, kv_dim_ * sizeof(float));
        std::memcpy(vd, v, kv_dim_ * sizeof(float));
    }
}

int32_t KvBlockPool::num_free() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int32_t>(free_.size());
}

BlockTable::~BlockTable() { Release(); }

BlockTable::BlockTable(BlockTable&& o) noexcept
    : pool_(std::exchange(o.pool_, nullptr)), blocks_(std::move(o.blocks_)),
      num_tokens_(std::exchange(o.num_tokens_, 0)) {
    o.blocks_.clear();
}

BlockTable& BlockTable::operator=(BlockTable&& o) noexcept {
    if (this != &o) {
        Release();
        pool_ = std::exchange(o.pool_, nullptr);
        blocks_ = std::move(o.blocks_);
        o.blocks_.clear();
        num_tokens_ = std::exchange(o.num_tokens_, 0);
    }
    return *this;
}

int32_t BlockTable::capacity() const {
    return pool_ == nullptr ? 0 : static_cast<int32_t>(blocks_.size()) * pool_->block_size();
}

absl::Status BlockTable::Reserve(KvBlockPool& pool, int32_t n_tokens) {
    if (pool_ != nullptr && pool_ != &pool) {
        return absl::InternalError("block table already belongs to another KV pool");
    }
    pool_ = &pool;
    const int32_t bs = pool.block_size();
    const int32_t need = (n_tokens + bs - 1) / bs;
    // The block that receives the next token is shared: it needs a private copy.
    const size_t write_block = static_cast<size_t>(num_tokens_ / bs);
    const bool cow = n_tokens > num_tokens_ && num_tokens_ % bs != 0 && write_block < blocks_.size() &&
                     pool.RefCount(blocks_[write_block]) > 1;
    std::vector<int32_t> added;
    while (static_cast<int32_t>(blocks_.size() + added.size()) < need + (cow ? 1 : 0)) {
        absl::StatusOr<int32_t> b = pool.Allocate();
        if (!b.ok()) {
            for (int32_t x : added) pool.Release(x);
            return b.status();
        }
        added.push_back(*b);
    }
    if (cow) {
        const int32_t copy = added.back();
        added.pop_back();
        pool.CopyBlock(blocks_[write_block], copy);
        pool.Release(blocks_[write_block]);
        blocks_[write_block] = copy;
    }
    blocks_.insert(blocks_.end(), added.begin(), added.end());
    return absl::OkStatus();
}

void BlockTable::Share(KvBlockPool& pool, const std::vector<int32_t>& blocks, int32_t n_tokens) {
    Release();
    pool_ = &pool;
    const size_t n = (static_cast<size_t>(n_tokens) + pool.block_size() - 1) / pool.block_size();
    for (size_t i = 0; i < n && i < blocks.size(); ++i) {
        pool.AddRef(blocks[i]);
        blocks_.push_back(blocks[i]);
    }
    num_tokens_ = n_tokens;
}

void BlockTable::Trim(int32_t n_tokens) {
    if (pool_ == nullptr) return;
    const size_t keep = (static_cast<size_t>(std::max(n_tokens, 0)) + pool_->block_size() - 1) / pool_->block_size();
    while (blocks_.size() > keep) {
        pool_->Release(blocks_.back());
        blocks_.pop_back();
    }
    num_tokens_ = std::min<int32_t>(num_tokens_, static_cast<int32_t>(keep) * pool_->block_size());
}

void BlockTable::Release() {
    if (pool_ != nullptr) {
        for (int32_t b : blocks_) pool_->Release(b);
    }
    blocks_.clear();
    num_tokens_ = 0;
}

}  // namespace prepack
