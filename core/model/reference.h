// The numerical oracle: a naive, single-sequence forward pass written to be
// obviously correct (in the spirit of llama2.c's run.c). It shares nothing
// with the optimised path but the weights: its own loops for matmul, RMSNorm,
// RoPE, softmax and attention, and a plain contiguous KV cache. Every
// optimised path (layouts, pruning, prefix sharing, CUDA) is tested against it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model.h"

namespace prepack {

class ReferenceForward {
public:
    explicit ReferenceForward(const Model& model);

    // Feeds one token at position `pos` (which must be the number of tokens
    // fed so far) and returns the logits for the next token.
    const std::vector<float>& Step(int32_t token);
    int32_t position() const { return pos_; }
    // The K (or V) row, kv_dim floats, that layer `layer` computed for the
    // token at `pos` (< position()).
    const float* Key(int32_t layer, int32_t pos) const;
    const float* Value(int32_t layer, int32_t pos) const;

private:
    const ModelConfig&  c_;
    const ModelWeights& w_;
    int32_t             pos_ = 0;
    std::vector<float>  x_, xb_, q_, k_, v_, att_out_, scores_, hb_, hb2_, logits_;
    std::vector<std::vector<float>> key_cache_, value_cache_;   // [layer][pos * kv_dim]
};

}  // namespace prepack
