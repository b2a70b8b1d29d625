// Model weights in the layout the forward pass wants, always f32 for now:
// GGUF tensors of any supported type are converted once at load; matrices
// that are applied to the same input are fused (Q|K|V, gate|up) so each
// layer runs 4 GEMMs instead of 7.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/model_config.h"
#include "core/status.h"

namespace prepack {

class GgufFile;

// All matrices are row-major [out_features, in_features], i.e. y = W x.
struct LayerWeights {
    const float* attn_norm;   // [dim]
    const float* wqkv;        // [q_dim + 2*kv_dim, dim]: Q rows, then K rows, then V rows
    const float* wo;          // [dim, q_dim]
    const float* ffn_norm;    // [dim]
    const float* w_gate_up;   // [2*hidden, dim]: gate (w1) rows, then up (w3) rows
    const float* w_down;      // [dim, hidden]
};

struct ModelWeights {
    const float* token_embd;   // [vocab, dim]
    const float* output_norm;  // [dim]
    const float* output;       // [vocab, dim]; equals token_embd when tied
    std::vector<LayerWeights> layers;

    AlignedFloats storage;     // owns everything above
};

// Converts and fuses the llama tensors of `file`. Every tensor's presence,
// rank and dims are checked against `config` first (INVALID_ARGUMENT naming
// the tensor and both shapes).
absl::StatusOr<ModelWeights> LoadWeights(const GgufFile& file, const ModelConfig& config);

// Deterministic pseudo-random weights for `config` (same seed, same weights),
// scaled so activations stay O(1) through any number of layers.
// RESOURCE_EXHAUSTED when they would not fit in available memory.
absl::StatusOr<ModelWeights> SyntheticWeights(const ModelConfig& config, uint64_t seed);

// Bytes the f32 weights of `config` occupy.
uint64_t WeightBytes(const ModelConfig& config);

}  // namespace prepack
