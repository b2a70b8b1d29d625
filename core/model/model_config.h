// Hyper-parameters of a llama-family decoder, read from GGUF metadata or
// taken from a named synthetic shape. Nothing about a model is a constant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "kernels/cpu/matrix.h"

namespace prepack {

class GgufFile;

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

// Reads the llama.* hyper-parameters. `vocab_size` comes from llama.vocab_size
// or, when absent, the tokenizer's token count.
absl::StatusOr<ModelConfig> ConfigFromGguf(const GgufFile& file);

// Named real shapes for models with random weights: tiny, 110m, 1b, 7b.
// NOT_FOUND lists the known names.
absl::StatusOr<ModelConfig> SyntheticConfig(std::string_view name);
std::vector<std::string> SyntheticModelNames();

}  // namespace prepack
