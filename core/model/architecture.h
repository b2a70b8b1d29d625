// What each architecture prepack runs fixes, one row of traits per GGUF
// `general.architecture` name. Everything a file states (sizes, RoPE bases,
// the sliding window, multipliers, soft-caps) is read from its metadata by
// ConfigFromGguf (model_config.h); a row holds only what the file leaves
// implicit and llama.cpp hard-codes per architecture. Adding a family is a
// row here plus, where it brings a new operation, the layer code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/model_config.h"

namespace prepack {

struct ArchTraits {
    const char*   name;
    RopeStyle     rope_style;
    FfnActivation ffn_act = FfnActivation::kSilu;
    bool    embed_scale_sqrt_dim = false;   // embeddings times sqrt(dim) (Gemma)
    bool    post_norms = false;             // post_attention_norm / post_ffw_norm (Gemma 2/3)
    // In every group of this many layers the last is global and the others
    // windowed (llama.cpp's set_swa_pattern), unless the file states
    // ARCH.attention.sliding_window_pattern. 0: the architecture has no
    // windowed layers, and ARCH.attention.sliding_window is ignored as
    // llama.cpp ignores it (Phi-3's and some Mistral files state one).
    int32_t swa_pattern = 0;
    float   rope_theta_swa = 0.0f;          // windowed layers' RoPE base unless ARCH.rope.freq_base_swa; 0: the global base
    float   attn_softcap = 0.0f;            // unless ARCH.attn_logit_softcapping (llama.cpp's defaults)
    float   final_softcap = 0.0f;           // unless ARCH.final_logit_softcapping
    bool    granite_scales = false;         // ARCH.embedding_scale, residual_scale, attention.scale, logit_scale
    // Gemma scales queries by 1/sqrt(query_pre_attn_scalar), which GGUF
    // files do not carry: llama.cpp takes dim/n_heads for the 27B models
    // (told apart by this many layers) and head_dim otherwise.
    int32_t wide_query_scale_layers = 0;
};

// The row for `name`, or null.
const ArchTraits* FindArchitecture(std::string_view name);
// "llama, qwen2, ..." for messages.
std::string ArchitectureNames();

}  // namespace prepack
