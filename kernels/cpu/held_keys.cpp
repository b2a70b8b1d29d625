// Copying a LazyLLM span's held keys (kernels/cpu/held_keys.h): row copies
// and bookkeeping, no arithmetic, so built once for every CPU level.
#include "kernels/cpu/held_keys.h"

#include <cstring>

namespace prepack::cpu {
namespace {

size_t ElementBytes(DType dtype) { return dtype == DType::kBf16 ? 2 : 4; }

}  // namespace

bool WorthCompacting(const AttentionSpan& span) {
    if (span.key_depth == nullptr) return false;
    const int64_t horizon = span.Horizon(span.n_q - 1);
    int64_t held = 0;
    for (int64_t j = 0; j <= horizon; ++j) held += span.Holds(j) ? 1 : 0;
    if (held == horizon + 1) return false;   // nothing absent: mask-free already
    // Masking loads every key once per query tile and scores it for each
    // query: about keys * (1 + n_q). The copy reads and writes the held
    // keys, then attends to them: about held * (3 + n_q).
    return held * (3 + span.n_q) < (horizon + 1) * (1 + span.n_q);
}

void CompactHeldKeys(const AttentionSpan& span, const PagedKv& kv, HeldKeys* out) {
    const int64_t horizon = span.Horizon(span.n_q - 1);
    const size_t row_bytes = ElementBytes(kv.dtype) * static_cast<size_t>(kv.kv_dim);
    std::vector<int32_t> held;
    held.reserve(static_cast<size_t>(horizon) + 1);
    for (int64_t j = 0; j <= horizon; ++j) {
        if (span.Holds(j)) held.push_back(static_cast<int32_t>(j));
    }
    const int64_t n = static_cast<int64_t>(held.size());
    out->k.resize(static_cast<size_t>(n) * row_bytes);
    out->v.resize(out->k.size());
    const auto* k = static_cast<const uint8_t*>(kv.k);
    const auto* v = static_cast<const uint8_t*>(kv.v);
#pragma omp parallel for schedule(static) if (n >= 256)
    for (int64_t i = 0; i < n; ++i) {
        const int64_t j = held[i];
        const size_t src = (static_cast<size_t>(span.blocks[j / kv.block_size]) * kv.block_size +
                            static_cast<size_t>(j % kv.block_size)) * row_bytes;
        std::memcpy(out->k.data() + i * row_bytes, k + src, row_bytes);
        std::memcpy(out->v.data() + i * row_bytes, v + src, row_bytes);
    }
    out->blocks.resize(static_cast<size_t>((n + kv.block_size - 1) / kv.block_size));
    for (size_t b = 0; b < out->blocks.size(); ++b) out->blocks[b] = static_cast<int32_t>(b);
    // A query's horizon in the copy: the rank of its own key among the held
    // ones (both ascend, so one merge-like walk).
    out->q_rank.resize(static_cast<size_t>(span.n_q));
    int64_t rank = 0;
    for (int32_t i = 0; i < span.n_q; ++i) {
        const int64_t slot = span.Horizon(i);
        while (rank < n && held[rank] < slot) ++rank;
        out->q_rank[i] = static_cast<int32_t>(rank);
    }
    out->kv = PagedKv{out->k.data(), out->v.data(), kv.block_size, kv.kv_dim, kv.dtype};
    out->span = span;
    out->span.kv_before = 0;
    out->span.blocks = out->blocks.data();
    out->span.q_slots = out->q_rank.data();
    out->span.key_depth = nullptr;
}

}  // namespace prepack::cpu
