// Causal attention over a paged KV cache for a ragged batch of query spans
// (a CSR-like view in the FlashInfer style: plain pointers and spans, no
// engine objects). Each span is one sequence's new tokens in this step; query
// i of a span sees keys [0, kv_before + i] of that sequence only, so spans
// never see each other and key blocks past a query's horizon are skipped,
// not computed and masked.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/matrix.h"

namespace prepack::cpu {

struct PagedKv {
    const void* k;        // one layer's K slab: block b starts at b * block_size * kv_dim elements
    const void* v;        // same for V
    int32_t     block_size;
    int32_t     kv_dim;   // elements per token row (n_kv_heads * head_dim)
    DType       dtype = DType::kF32;   // of the elements: f32, or bf16 (widened as they are read)
};

struct AttentionSpan {
    int64_t        q_row;       // first row of this span in q / out
    int32_t        n_q;         // query rows in the span
    int32_t        kv_before;   // keys of this sequence before the span's first query
    const int32_t* blocks;      // the sequence's block table
    // LazyLLM (both null otherwise): the span's queries need not be
    // consecutive tokens, and a layer need not hold every key.
    const int32_t* q_slots = nullptr;     // per query, ascending: its token index (it sees keys <= it)
    const int16_t* key_depth = nullptr;   // per key: the deepest layer holding its K/V
    int32_t        layer = 0;             // keys with key_depth < layer are absent here

    int64_t Horizon(int32_t i) const { return q_slots ? q_slots[i] : int64_t{kv_before} + i; }
    bool    Holds(int64_t key) const { return key_depth == nullptr || key_depth[key] >= layer; }
};

struct AttentionShape {
    int32_t n_heads;
    int32_t n_kv_heads;
    int32_t head_dim;
    int64_t q_stride;     // floats between query rows (heads packed at the row start)
    int64_t out_stride;   // floats between output rows
    // What some families add (0 = absent: the llama defaults):
    float   scale = 0.0f;     // score = scale * q.k; 0 means 1/sqrt(head_dim)
    float   softcap = 0.0f;   // score = softcap * tanh(score / softcap) before the softmax (Gemma 2)
    int32_t window = 0;       // sliding window: a query at token p sees keys p - window < k <= p only

    float   Scale() const { return scale > 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(head_dim)); }
    // The first key a query whose horizon is `horizon` sees.
    int64_t FirstKey(int64_t horizon) const { return window > 0 ? std::max<int64_t>(0, horizon - window + 1) : 0; }
};

// Decode spans (one query each) whose block tables begin with the same
// `shared_len` tokens in the same blocks: a prefix shared by reference.
struct SharedPrefixGroup {
    std::vector<int32_t> spans;        // indices into the span array
    int32_t              shared_len;   // whole blocks, below every member's first query
};

// Finds groups of at least `min_members` decode spans sharing at least
// `min_shared` tokens of identical full blocks.
std::vector<SharedPrefixGroup> FindSharedPrefixes(const AttentionSpan* spans, int32_t n_spans, int32_t block_size,
                                                  int32_t min_shared, int32_t min_members);

// The K/V of every key a query sees must already be in the cache (the span's
// own keys are written before this is called). With a sliding window
// (shape.window) keys before a query's window are skipped a chunk at a
// time and masked within one; `shared` is then ignored (members' windows
// differ, so a shared prefix is no longer one tile's keys) and LazyLLM
// spans are not compacted (the window is counted in token positions). Online softmax over key
// blocks: no [queries x keys] matrix is materialised.
//
// Spans in `shared` are computed as cascade attention (Hydragen / FlashInfer
// cascade): each block of the shared prefix is loaded once and scored
// against the queries of every member (a matrix-matrix product instead of
// one matrix-vector per sequence); each member's own suffix continues from
// that partial (max, sum, weighted V) state, which is exactly the
// log-sum-exp merge of the prefix and suffix partial attentions.
void PagedAttention(const float* q, float* out, const AttentionShape& shape,
                    const AttentionSpan* spans, int32_t n_spans, const PagedKv& kv,
                    const std::vector<SharedPrefixGroup>& shared = {});

// How LazyLLM scores a sequence's keys from its last queries' attention.
struct QueryScoring {
    // The queries whose attention is averaged: the span's last query and
    // those of the tokens just before it while they are consecutive rows,
    // up to `window` in all (SnapKV's observation window; 1 is the paper's
    // last token alone).
    int32_t window = 1;
    // Heads combined by their maximum instead of their mean, so a key one
    // head alone needs (a retrieval head) scores as that head sees it.
    bool head_max = false;
};

// LazyLLM scoring: the attention probabilities of the span's last queries
// (`scoring.window` tokens, those in the span) over the keys each sees
// (those the layer holds), averaged over those queries, then over heads (or
// their maximum), into scores[0 .. horizon of the last query] (0 for absent
// keys). A few query rows: no attention matrix is formed.
void LastQueryScores(const float* q, const AttentionShape& shape, const AttentionSpan& span, const PagedKv& kv,
                     const QueryScoring& scoring, float* scores);

}  // namespace prepack::cpu
