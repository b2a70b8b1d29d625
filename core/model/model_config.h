// Hyper-parameters of a llama-family decoder, read from GGUF metadata or
// taken from a named synthetic shape. Nothing about a model is a constant.
//
// One description with optional parts covers the families GGUF names
// `llama` (Llama 2/3/3.1/3.2/3.3, Mistral, TinyLlama, SmolLM: optional
// Q/K/V biases, RoPE frequency factors), `qwen2` (Q/K/V biases, NEOX RoPE)
// and `qwen3` (per-head Q/K RMSNorm, NEOX RoPE, a head size of its own); the
// CPU, CUDA and reference passes all follow it, none is written per family.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "kernels/cpu/matrix.h"

namespace prepack {

class GgufFile;

// Which pairs of a head's dims RoPE rotates: (2i, 2i+1) as llama.cpp's
// llama files are laid out, or (i, i + rope_dim/2) ("NEOX", Qwen's layout).
enum class RopeStyle : uint8_t { kAdjacent, kNeox };

struct ModelConfig {
    std::string name;
    std::string arch = "llama";
    int32_t dim         = 0;    // residual width (embedding_length)
    int32_t hidden_dim  = 0;    // feed-forward width
    int32_t n_layers    = 0;
    int32_t n_heads     = 0;
    int32_t n_kv_heads  = 0;
    int32_t head_dim    = 0;    // key_length; dim / n_heads unless stated
    int32_t rope_dim    = 0;    // leading dims of each head that RoPE rotates
    int32_t vocab_size  = 0;
    int32_t max_context = 0;
    float   rope_theta  = 10000.0f;
    float   norm_eps    = 1e-5f;
    bool    tied_output = false;   // output matrix is the token embedding
    RopeStyle rope_style = RopeStyle::kAdjacent;
    float   rope_scale  = 1.0f;    // linear RoPE scaling: positions divided by it
    bool    rope_freqs  = false;   // per-frequency divisors (rope_freqs.weight, llama3 scaling)
    bool    qkv_bias    = false;   // attn_q/k/v.bias
    bool    qk_norm     = false;   // per-head RMSNorm of Q and K before RoPE (attn_q_norm / attn_k_norm)

    int32_t q_dim() const { return n_heads * head_dim; }
    int32_t kv_dim() const { return n_kv_heads * head_dim; }
    int32_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }

    // INVALID_ARGUMENT naming the first inconsistent or out-of-range value.
    absl::Status Validate() const;

    // Parameters in the matmuls of one forward token (all layers + output):
    // prefill costs ~2 FLOPs per such parameter per token.
    uint64_t MatmulParams() const;
    uint64_t TotalParams() const;
    // FLOPs of attention scores + weighted sum for one query over `ctx` keys.
    double AttentionFlops(int64_t ctx) const {
        return 4.0 * n_layers * static_cast<double>(q_dim()) * static_cast<double>(ctx);
    }
    // KV-cache bytes one token occupies across all layers (K and V).
    uint64_t KvBytesPerToken(cpu::DType kv = cpu::DType::kF32) const {
        return 2ull * n_layers * static_cast<uint64_t>(kv_dim()) * (kv == cpu::DType::kBf16 ? 2 : 4);
    }
};

// Reads the hyper-parameters under the prefix `general.architecture` names
// (llama, qwen2, qwen3), and which optional parts the file's tensors have.
// `vocab_size` comes from ARCH.vocab_size or, when absent, the embedding's
// rows. INVALID_ARGUMENT names an unsupported architecture or RoPE scaling.
absl::StatusOr<ModelConfig> ConfigFromGguf(const GgufFile& file);

// Named real shapes for models with random weights: tiny, 110m, 1b, 7b.
// NOT_FOUND lists the known names.
absl::StatusOr<ModelConfig> SyntheticConfig(std::string_view name);
std::vector<std::string> SyntheticModelNames();

}  // namespace prepack
