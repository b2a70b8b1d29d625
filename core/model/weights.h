// Model weights in the layout the forward pass wants: matrices whose GGUF
// tensors are block-quantized (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K,
// Q6_K) stay so, used where the file's mapping holds them; the others are
// converted once at load, matrices to f32 or bf16 (the dtype asked for),
// norm vectors always to f32. Matrices applied to the same input are fused
// (Q|K|V, gate|up: in one buffer, or as consecutive quantized slices) so
// each layer runs 4 GEMMs instead of 7.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/aligned_buffer.h"
#include "core/model/model_config.h"
#include "core/base/status.h"
#include "kernels/cpu/matrix.h"

namespace prepack {

class GgufFile;

// All matrices are row-major [out_features, in_features], i.e. y = W x.
struct LayerWeights {
    const float* attn_norm;   // [dim]
    cpu::Matrix  wqkv;        // [q_dim + 2*kv_dim, dim]: Q rows, then K rows, then V rows
    cpu::Matrix  wo;          // [dim, q_dim]
    const float* ffn_norm;    // [dim]
    cpu::Matrix  w_gate_up;   // [2*hidden, dim]: gate (w1) rows, then up (w3) rows
    cpu::Matrix  w_down;      // [dim, hidden]
    // Optional parts (null when the model has none):
    const float* bqkv = nullptr;     // [q_dim + 2*kv_dim]: Q, K, V biases (qwen2; some llama files)
    const float* q_norm = nullptr;   // [head_dim]: RMSNorm gain of each Q head before RoPE (qwen3)
    const float* k_norm = nullptr;   // [head_dim]: the same for each K head
    const float* attn_post_norm = nullptr;   // [dim]: RMSNorm gain of the attention output (Gemma 2/3)
    const float* ffn_post_norm = nullptr;    // [dim]: the same for the FFN output
};

struct ModelWeights {
    cpu::Matrix  token_embd;   // [vocab, dim]
    const float* output_norm;  // [dim]
    cpu::Matrix  output;       // [vocab, dim]; equals token_embd when tied
    const float* rope_freqs = nullptr;   // [rope_dim / 2]: each frequency's divisor (llama3 scaling, LongRoPE), or null
    std::vector<LayerWeights> layers;
    cpu::DType   dtype = cpu::DType::kF32;   // of the matrices that are not quantized

    AlignedFloats            storage;        // owns the f32 tensors above
    AlignedArray<uint16_t>   bf16_storage;   // and the bf16 ones
    std::shared_ptr<const GgufFile> file;    // holds the quantized ones (null when none)
    uint64_t                 quantized_bytes = 0;

    // Bytes the weights occupy in memory: converted plus quantized.
    uint64_t ResidentBytes() const;
    // What the matrices are held as, for reports: "f32", "bf16", or the
    // quantized types present ("Q4_K+Q6_K"), with the dense dtype of the
    // rest when some are not quantized ("Q8_0+f32").
    std::string MatrixTypes() const;
    bool AnyQuantized() const { return quantized_bytes > 0; }
};

// Converts and fuses the llama tensors of `file` (kept alive by the weights
// while they use its quantized tensors). Every tensor's presence, rank and
// dims are checked against `config` first (INVALID_ARGUMENT naming the
// tensor and both shapes).
absl::StatusOr<ModelWeights> LoadWeights(std::shared_ptr<const GgufFile> file, const ModelConfig& config,
                                         cpu::DType dtype = cpu::DType::kF32);

// Deterministic pseudo-random weights for `config` (same seed, same weights),
// scaled so activations stay O(1) through any number of layers.
// RESOURCE_EXHAUSTED when they would not fit in available memory.
// In bf16 they are the f32 weights rounded.
absl::StatusOr<ModelWeights> SyntheticWeights(const ModelConfig& config, uint64_t seed,
                                              cpu::DType dtype = cpu::DType::kF32);

// Bytes the weights of `config` occupy with every matrix in `dtype` (none
// quantized: synthetic models, and the upper bound for a file).
uint64_t WeightBytes(const ModelConfig& config, cpu::DType dtype = cpu::DType::kF32);

// Bytes the weights of `file` will occupy once loaded with dense matrices in
// `dtype` (quantized ones as in the file): what `prepack inspect` reports.
uint64_t ResidentWeightBytes(const GgufFile& file, const ModelConfig& config, cpu::DType dtype);

// RoPE's rope_dim/2 inverse frequencies theta^(-2i/rope_dim), divided by
// the linear scale and by rope_freqs.weight's factors where the model has
// them (as llama.cpp applies them): what every pass rotates by. Windowed
// layers (`windowed`) rotate by their own base (rope_theta_swa, when set)
// and without the scaling, as llama.cpp does for Gemma 3.
std::vector<float> RopeInverseFrequencies(const ModelConfig& config, const ModelWeights& weights,
                                          bool windowed = false);

// "f32" or "bf16" (INVALID_ARGUMENT naming the choices otherwise).
absl::StatusOr<cpu::DType> ParseDType(const std::string& name);

}  // namespace prepack
