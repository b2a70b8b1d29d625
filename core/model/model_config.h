// Hyper-parameters of a llama-family decoder, read from GGUF metadata or
// taken from a named synthetic shape. Nothing about a model is a constant.
//
// One description with optional parts covers every family prepack runs
// (core/model/architecture.h holds what each fixes): `llama` (Llama
// 2/3/3.1/3.2/3.3, Mistral, TinyLlama, SmolLM: optional Q/K/V biases, RoPE
// frequency factors), `qwen2` (Q/K/V biases, NEOX RoPE), `qwen3` (per-head
// Q/K RMSNorm, NEOX RoPE, a head size of its own), `gemma`/`gemma2`/`gemma3`
// (embedding scale, GeGLU, post-norms, soft-caps, sliding-window layers
// with their own RoPE base) and `granite` (embedding, residual, attention
// and logit multipliers), `phi3` (fused projections, LongRoPE). The CPU,
// CUDA and reference passes follow it; none is written per family.
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

// The feed-forward gate's activation: SiLU (SwiGLU) or GELU in its tanh
// form (GeGLU: Gemma).
enum class FfnActivation : uint8_t { kSilu, kGeluTanh };

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
    bool    rope_freqs  = false;   // per-frequency divisors (rope_freqs_tensor: llama3 scaling, LongRoPE)
    std::string rope_freqs_tensor = "rope_freqs.weight";   // or Phi-3's rope_factors_short/long.weight
    float   rope_attn_factor = 1.0f;   // rotated dims of Q and K times it (ARCH.rope.scaling.attn_factor: LongRoPE)
    bool    qkv_bias    = false;   // attn_q/k/v.bias
    bool    qk_norm     = false;   // per-head RMSNorm of Q and K before RoPE (attn_q_norm / attn_k_norm)
    bool    fused_qkv   = false;   // Q|K|V in one tensor, attn_qkv (Phi-3), instead of attn_q/k/v
    bool    fused_gate_up = false; // gate|up in one tensor, ffn_up of 2 * hidden rows (Phi-3), no ffn_gate

    // What some families add; the defaults are llama's (nothing added).
    FfnActivation ffn_act = FfnActivation::kSilu;
    float   embed_scale    = 1.0f;    // token embeddings are multiplied by it (Gemma: sqrt(dim))
    bool    post_norms     = false;   // RMSNorm of the attention and FFN outputs before the residual add (Gemma 2/3)
    float   residual_scale = 1.0f;    // each block's output is multiplied by it before the add (Granite)
    float   attn_scale     = 0.0f;    // score = attn_scale * q.k; 0: 1/sqrt(head_dim)
    float   attn_softcap   = 0.0f;    // scores soft-capped: c * tanh(s / c) (Gemma 2); 0: none
    float   final_softcap  = 0.0f;    // logits soft-capped the same way (Gemma 2); 0: none
    float   logit_scale    = 1.0f;    // logits are divided by it (Granite)
    int32_t sliding_window = 0;       // keys a windowed layer's query sees, itself included; 0: none
    std::vector<uint8_t> swa_layers;  // per layer, 1 where the sliding window applies
    float   rope_theta_swa = 0.0f;    // RoPE base of windowed layers (no linear scaling there); 0: rope_theta

    bool Windowed(int32_t layer) const {
        return sliding_window > 0 && layer >= 0 && layer < static_cast<int32_t>(swa_layers.size()) &&
               swa_layers[layer] != 0;
    }

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
    // KV-cache bytes one token occupies across all layers (K and V): every
    // layer keeps every token today, windowed layers included.
    uint64_t KvBytesPerToken(cpu::DType kv = cpu::DType::kF32) const {
        return 2ull * n_layers * static_cast<uint64_t>(kv_dim()) * (kv == cpu::DType::kBf16 ? 2 : 4);
    }
};

// Reads the hyper-parameters under the prefix `general.architecture` names
// (the rows of core/model/architecture.h), and which optional parts the
// file's tensors have.
// `vocab_size` comes from ARCH.vocab_size or, when absent, the embedding's
// rows. INVALID_ARGUMENT names an unsupported architecture or RoPE scaling.
absl::StatusOr<ModelConfig> ConfigFromGguf(const GgufFile& file);

// Named real shapes for models with random weights: tiny, 110m, 1b, 7b.
// NOT_FOUND lists the known names.
absl::StatusOr<ModelConfig> SyntheticConfig(std::string_view name);
std::vector<std::string> SyntheticModelNames();

}  // namespace prepack
