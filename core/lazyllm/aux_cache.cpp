#include "core/lazyllm/aux_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace prepack {

AuxCache::AuxCache(KvBlockPool& pool, int32_t dim)
    : pool_(pool), dim_(dim),
      cells_per_piece_(static_cast<int32_t>(pool.piece_bytes() / (sizeof(float) * static_cast<size_t>(dim)))) {}

AuxCache::~AuxCache() { Clear(); }

int64_t AuxCache::BlocksFor(int64_t cells) const {
    if (!usable() || cells <= 0) return 0;
    const int64_t per_block = int64_t{cells_per_piece_} * 2 * pool_.n_layers();
    return (cells + per_block - 1) / per_block;
}

bool AuxCache::AddBlock() {
    absl::StatusOr<int32_t> b = pool_.Allocate();
    if (!b.ok()) return false;
    blocks_.push_back(*b);
    // A block is n_layers x {K, V} pieces of piece_bytes() each (whatever the
    // KV dtype); the hidden states kept here are always f32.
    for (int32_t layer = 0; layer < pool_.n_layers(); ++layer) {
        for (void* bytes : {pool_.KBytes(layer, *b), pool_.VBytes(layer, *b)}) {
            float* piece = static_cast<float*>(bytes);
            for (int32_t c = 0; c < cells_per_piece_; ++c) free_cells_.push_back(piece + int64_t{c} * dim_);
        }
    }
    return true;
}

absl::Status AuxCache::Reserve(int64_t cells) {
    const int64_t want = BlocksFor(cells + size()) - static_cast<int64_t>(blocks_.size());
    for (int64_t i = 0; i < want; ++i) {
        if (!AddBlock()) {
            return absl::ResourceExhaustedError(
                absl::StrCat("the KV pool has no room for the LazyLLM aux cache of ", cells, " tokens"));
        }
    }
    return absl::OkStatus();
}

bool AuxCache::Put(int32_t slot, const void* hidden, size_t bytes) {
    if (!usable()) return false;
    auto it = where_.find(slot);
    if (it == where_.end()) {
        if (free_cells_.empty() && !AddBlock()) return false;
        it = where_.emplace(slot, free_cells_.back()).first;
        free_cells_.pop_back();
    }
    pool_.CopyBytes(it->second, hidden, std::min(bytes, sizeof(float) * dim_));
    return true;
}

const float* AuxCache::Get(int32_t slot) const {
    auto it = where_.find(slot);
    return it == where_.end() ? nullptr : it->second;
}

void AuxCache::Erase(int32_t slot) {
    auto it = where_.find(slot);
    if (it == where_.end()) return;
    free_cells_.push_back(it->second);
    where_.erase(it);
}

void AuxCache::Clear() {
    for (int32_t b : blocks_) pool_.Release(b);
    blocks_.clear();
    free_cells_.clear();
    where_.clear();
}

}  // namespace prepack
