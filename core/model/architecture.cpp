#include "core/model/architecture.h"

#include "absl/strings/str_cat.h"

namespace prepack {
namespace {

constexpr ArchTraits kArchs[] = {
    {.name = "llama", .rope_style = RopeStyle::kAdjacent},
    {.name = "qwen2", .rope_style = RopeStyle::kNeox},
    {.name = "qwen3", .rope_style = RopeStyle::kNeox},
    {.name = "granite", .rope_style = RopeStyle::kAdjacent, .granite_scales = true},
    // Phi-3/3.5/4-mini: fused attn_qkv and gate|up (read from the tensors),
    // LongRoPE factors (model_config.cpp); its files state a sliding window
    // that llama.cpp ignores, as prepack does (no swa_pattern).
    {.name = "phi3", .rope_style = RopeStyle::kNeox},
    {.name = "gemma",
     .rope_style = RopeStyle::kNeox,
     .ffn_act = FfnActivation::kGeluTanh,
     .embed_scale_sqrt_dim = true},
    {.name = "gemma2",
     .rope_style = RopeStyle::kNeox,
     .ffn_act = FfnActivation::kGeluTanh,
     .embed_scale_sqrt_dim = true,
     .post_norms = true,
     .swa_pattern = 2,
     .attn_softcap = 50.0f,
     .final_softcap = 30.0f,
     .wide_query_scale_layers = 46},
    {.name = "gemma3",
     .rope_style = RopeStyle::kNeox,
     .ffn_act = FfnActivation::kGeluTanh,
     .embed_scale_sqrt_dim = true,
     .post_norms = true,
     .swa_pattern = 6,
     .rope_theta_swa = 10000.0f,
     .wide_query_scale_layers = 62},
};

}  // namespace

const ArchTraits* FindArchitecture(std::string_view name) {
    for (const ArchTraits& a : kArchs) {
        if (name == a.name) return &a;
    }
    return nullptr;
}

std::string ArchitectureNames() {
    std::string out;
    for (const ArchTraits& a : kArchs) absl::StrAppend(&out, out.empty() ? "" : ", ", a.name);
    return out;
}

}  // namespace prepack
