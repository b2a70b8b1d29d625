// Small synthetic configs of the families past llama/qwen (model_config.h's
// traits: GeGLU, post-norms, soft-caps, sliding windows, LongRoPE, Granite's
// multipliers), each exercising its parts at sizes the tests can afford:
// windows of a few keys, so prompts, chunks and batches run past them; caps
// low enough to bite. Shared by the CPU and CUDA forward tests.
#pragma once

#include <vector>

#include "core/model/model_config.h"
#include "tests/test_util.h"

namespace prepack::testing {

struct NamedConfig {
    const char* name;
    ModelConfig config;
};

inline std::vector<NamedConfig> FamilyConfigs() {
    std::vector<NamedConfig> configs;
    // Gemma 3: GeGLU, post-norms, embedding scale, Q/K norms, and a sliding
    // window of 8 keys on layers 0 and 2 with a RoPE base of their own.
    ModelConfig g3 = SmallConfig(64, 4, 1, 3, 96, 300);
    g3.head_dim = g3.rope_dim = 32;   // not dim / heads: Q is 128 wide
    g3.qk_norm = true;
    g3.rope_style = RopeStyle::kNeox;
    g3.tied_output = true;
    g3.ffn_act = FfnActivation::kGeluTanh;
    g3.post_norms = true;
    g3.embed_scale = 8.0f;
    g3.rope_theta = 1e6f;
    g3.rope_theta_swa = 10000.0f;
    g3.sliding_window = 8;
    g3.swa_layers = {1, 0, 1};
    configs.push_back({"gemma3_like", g3});
    // Gemma 2: attention and logit soft-caps low enough to bite, its own
    // query scale, every other layer windowed (5 keys).
    ModelConfig g2 = SmallConfig(64, 4, 2, 2, 96, 300);
    g2.rope_style = RopeStyle::kNeox;
    g2.ffn_act = FfnActivation::kGeluTanh;
    g2.post_norms = true;
    g2.embed_scale = 8.0f;
    g2.attn_scale = 0.2f;
    g2.attn_softcap = 1.5f;
    g2.final_softcap = 2.0f;
    g2.sliding_window = 5;
    g2.swa_layers = {1, 0};
    configs.push_back({"gemma2_like", g2});
    // Phi-4-mini: LongRoPE (per-frequency divisors and an attention factor
    // on the rotated dims) with partial rotary dims.
    ModelConfig phi = SmallConfig(64, 4, 2, 2, 96, 300, 12);
    phi.rope_style = RopeStyle::kNeox;
    phi.rope_freqs = true;
    phi.rope_attn_factor = 1.19f;
    configs.push_back({"phi4_like", phi});
    // Granite: embedding, residual, attention and logit multipliers.
    ModelConfig granite = SmallConfig(64, 4, 2, 2, 96, 300);
    granite.embed_scale = 12.0f;
    granite.residual_scale = 0.22f;
    granite.attn_scale = 0.0078125f;
    granite.logit_scale = 8.0f;
    configs.push_back({"granite_like", granite});
    return configs;
}

}  // namespace prepack::testing
