#include "core/model/model_config.h"

#include <algorithm>
#include <cmath>

#include "core/model/architecture.h"
#include "core/model/gguf.h"

namespace prepack {
namespace {

// Upper bounds that no real llama-family model reaches; they keep a hostile
// file from driving allocations of absurd size.
constexpr int64_t kMaxDim     = 1 << 16;
constexpr int64_t kMaxLayers  = 1024;
constexpr int64_t kMaxVocab   = 1 << 22;
constexpr int64_t kMaxContext = 1 << 24;

absl::Status CheckRange(const char* what, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " = ", v, " is out of range [", lo, ", ", hi, "]"));
    }
    return absl::OkStatus();
}

absl::StatusOr<int32_t> ReadDim(const GgufFile& f, const std::string& key, int64_t hi) {
    PP_ASSIGN_OR_RETURN(uint64_t v, f.GetUint(key));
    if (v == 0 || v > static_cast<uint64_t>(hi)) {
        return absl::InvalidArgumentError(
            absl::StrCat("metadata ", key, " = ", v, " is out of range [1, ", hi, "]"));
    }
    return static_cast<int32_t>(v);
}

}  // namespace

absl::Status ModelConfig::Validate() const {
    PP_RETURN_IF_ERROR(CheckRange("dim", dim, 1, kMaxDim));
    PP_RETURN_IF_ERROR(CheckRange("hidden_dim", hidden_dim, 1, 4 * kMaxDim));
    PP_RETURN_IF_ERROR(CheckRange("n_layers", n_layers, 1, kMaxLayers));
    PP_RETURN_IF_ERROR(CheckRange("n_heads", n_heads, 1, kMaxDim));
    PP_RETURN_IF_ERROR(CheckRange("n_kv_heads", n_kv_heads, 1, n_heads));
    PP_RETURN_IF_ERROR(CheckRange("head_dim", head_dim, 2, 1024));
    PP_RETURN_IF_ERROR(CheckRange("vocab_size", vocab_size, 1, kMaxVocab));
    PP_RETURN_IF_ERROR(CheckRange("max_context", max_context, 1, kMaxContext));
    PP_RETURN_IF_ERROR(CheckRange("rope_dim", rope_dim, 2, head_dim));
    if (n_heads % n_kv_heads != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "n_heads (", n_heads, ") is not a multiple of n_kv_heads (", n_kv_heads, ")"));
    }
    if (head_dim % 2 != 0 || rope_dim % 2 != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "head_dim (", head_dim, ") and rope_dim (", rope_dim, ") must be even"));
    }
    if (!(norm_eps > 0.0f && norm_eps < 1.0f)) {
        return absl::InvalidArgumentError(absl::StrCat("norm_eps = ", norm_eps, " is not in (0, 1)"));
    }
    if (!(rope_scale > 0.0f && rope_scale < 1e6f)) {
        return absl::InvalidArgumentError(absl::StrCat("rope_scale = ", rope_scale, " is not in (0, 1e6)"));
    }
    if (!(rope_theta > 1.0f && rope_theta < 1e12f)) {
        return absl::InvalidArgumentError(absl::StrCat("rope_theta = ", rope_theta, " is not in (1, 1e12)"));
    }
    if (rope_theta_swa != 0.0f && !(rope_theta_swa > 1.0f && rope_theta_swa < 1e12f)) {
        return absl::InvalidArgumentError(absl::StrCat("rope_theta_swa = ", rope_theta_swa, " is not in (1, 1e12)"));
    }
    // The multipliers and caps: finite and positive where set (0 = none for the caps and attn_scale).
    struct Multiplier {
        const char* what;
        float       v;
        bool        zero_ok;
    };
    const Multiplier multipliers[] = {{"embed_scale", embed_scale, false},  {"residual_scale", residual_scale, false},
                                      {"logit_scale", logit_scale, false},  {"attn_scale", attn_scale, true},
                                      {"attn_softcap", attn_softcap, true}, {"final_softcap", final_softcap, true}};
    for (const auto& [what, v, zero_ok] : multipliers) {
        if (!(std::isfinite(v) && (v > 0.0f || (zero_ok && v == 0.0f)) && v < 1e6f)) {
            return absl::InvalidArgumentError(absl::StrCat(what, " = ", v, " is not in (0, 1e6)"));
        }
    }
    if (sliding_window < 0 || (sliding_window > 0 && swa_layers.size() != static_cast<size_t>(n_layers))) {
        return absl::InvalidArgumentError(absl::StrCat("sliding_window = ", sliding_window, " needs one flag per layer (",
                                                       swa_layers.size(), " for ", n_layers, " layers)"));
    }
    return absl::OkStatus();
}

uint64_t ModelConfig::MatmulParams() const {
    const uint64_t d = dim, h = hidden_dim;
    const uint64_t per_layer = d * static_cast<uint64_t>(qkv_dim())   // wq, wk, wv
                             + static_cast<uint64_t>(q_dim()) * d      // wo
                             + 3 * d * h;                              // gate, up, down
    return n_layers * per_layer + static_cast<uint64_t>(vocab_size) * d;   // + output
}

uint64_t ModelConfig::TotalParams() const {
    const uint64_t norms = static_cast<uint64_t>(dim) * ((post_norms ? 4 : 2) * n_layers + 1) +
                           (qk_norm ? 2ull * head_dim * n_layers : 0) + (qkv_bias ? uint64_t(qkv_dim()) * n_layers : 0) +
                           (rope_freqs ? rope_dim / 2 : 0);
    const uint64_t embed = static_cast<uint64_t>(vocab_size) * dim;
    return MatmulParams() + norms + (tied_output ? 0 : embed);
}

namespace {

// Reads ARCH.rope.scaling.*: none and linear are supported; llama3-style
// scaling comes as the rope_freqs.weight tensor (read with the weights).
absl::Status ReadRopeScaling(const GgufFile& f, const std::string& p, ModelConfig* c) {
    std::string type = "none";
    if (f.Has(p + "rope.scaling.type")) {
        PP_ASSIGN_OR_RETURN(type, f.GetString(p + "rope.scaling.type"));
    }
    double factor = 1.0;
    if (f.Has(p + "rope.scaling.factor")) {
        PP_ASSIGN_OR_RETURN(factor, f.GetFloat(p + "rope.scaling.factor"));
    }
    if (type == "none" || factor == 0.0 || factor == 1.0) return absl::OkStatus();
    if (type != "linear") {
        return absl::InvalidArgumentError(absl::StrCat("unsupported RoPE scaling '", type, "' (", p,
                                                       "rope.scaling.type; prepack applies none, linear and "
                                                       "llama3's rope_freqs.weight)"));
    }
    if (!(factor > 0.0 && factor < 1e6)) {
        return absl::InvalidArgumentError(absl::StrCat(p, "rope.scaling.factor = ", factor, " is not in (0, 1e6)"));
    }
    c->rope_scale = static_cast<float>(factor);
    return absl::OkStatus();
}

// LongRoPE (Phi-3.5/4): per-frequency divisors for short contexts and for
// long ones, chosen as llama.cpp does by the context (the model's whole
// context_length here) against ARCH.rope.scaling.original_context_length,
// and an attention factor on the rotated dims.
absl::Status ReadLongRope(const GgufFile& f, const std::string& p, ModelConfig* c) {
    if (f.Has(p + "rope.scaling.attn_factor")) {
        PP_ASSIGN_OR_RETURN(const double factor, f.GetFloat(p + "rope.scaling.attn_factor"));
        if (!(factor > 0.0 && factor < 100.0)) {
            return absl::InvalidArgumentError(absl::StrCat(p, "rope.scaling.attn_factor = ", factor, " is not in (0, 100)"));
        }
        c->rope_attn_factor = static_cast<float>(factor);
    }
    const bool has_short = f.FindTensor("rope_factors_short.weight") != nullptr;
    const bool has_long = f.FindTensor("rope_factors_long.weight") != nullptr;
    if (!has_short && !has_long) return absl::OkStatus();
    if (c->rope_freqs) {
        return absl::InvalidArgumentError("the file has both rope_freqs.weight and LongRoPE's rope_factors_* tensors");
    }
    int64_t original = c->max_context;
    if (f.Has(p + "rope.scaling.original_context_length")) {
        PP_ASSIGN_OR_RETURN(const uint64_t n, f.GetUint(p + "rope.scaling.original_context_length"));
        original = static_cast<int64_t>(std::min<uint64_t>(n, kMaxContext));
    }
    const bool want_long = c->max_context > original;
    if (want_long ? !has_long : !has_short) {
        return absl::InvalidArgumentError(absl::StrCat("LongRoPE needs rope_factors_", want_long ? "long" : "short",
                                                       ".weight for a context of ", c->max_context,
                                                       " (original context ", original, ")"));
    }
    c->rope_freqs = true;
    c->rope_freqs_tensor = want_long ? "rope_factors_long.weight" : "rope_factors_short.weight";
    return absl::OkStatus();
}

// A float the file may state, else `fallback`.
absl::StatusOr<float> OptionalFloat(const GgufFile& f, const std::string& key, float fallback) {
    if (!f.Has(key)) return fallback;
    PP_ASSIGN_OR_RETURN(double v, f.GetFloat(key));
    if (!std::isfinite(v)) return absl::InvalidArgumentError(absl::StrCat("metadata ", key, " is not finite"));
    return static_cast<float>(v);
}

// Which layers are windowed: ARCH.attention.sliding_window_pattern as a
// period (every n-th layer global; 0: none) or as one flag per layer, else
// the architecture's period.
absl::Status ReadWindowedLayers(const GgufFile& f, const std::string& p, const ArchTraits& arch, ModelConfig* c) {
    const std::string key = p + "attention.sliding_window_pattern";
    int64_t period = arch.swa_pattern;
    c->swa_layers.assign(c->n_layers, 0);
    if (f.Has(key)) {
        if (absl::StatusOr<uint64_t> n = f.GetUint(key); n.ok()) {
            period = static_cast<int64_t>(std::min<uint64_t>(*n, kMaxLayers + 1));
        } else {
            absl::StatusOr<std::vector<int32_t>> flags = f.GetInt32Array(key);
            if (!flags.ok() || flags->size() != static_cast<size_t>(c->n_layers)) {
                return absl::InvalidArgumentError(absl::StrCat(
                    "metadata ", key, " must be a layer period or one integer flag per layer (", c->n_layers, ")"));
            }
            for (int l = 0; l < c->n_layers; ++l) c->swa_layers[l] = (*flags)[l] != 0;
            return absl::OkStatus();
        }
    }
    // As llama.cpp's set_swa_pattern: a period of 0 windows every layer.
    for (int l = 0; l < c->n_layers; ++l) c->swa_layers[l] = period == 0 || l % period < period - 1;
    return absl::OkStatus();
}

// What the architecture's row adds, with the keys that override it.
absl::Status ReadFamilyTraits(const GgufFile& f, const std::string& p, const ArchTraits& arch, ModelConfig* c) {
    c->rope_style = arch.rope_style;
    c->ffn_act = arch.ffn_act;
    c->post_norms = arch.post_norms;
    if (arch.embed_scale_sqrt_dim) c->embed_scale = std::sqrt(static_cast<float>(c->dim));
    if (arch.wide_query_scale_layers != 0 && c->n_layers == arch.wide_query_scale_layers) {
        c->attn_scale = 1.0f / std::sqrt(static_cast<float>(c->dim / c->n_heads));
    }
    PP_ASSIGN_OR_RETURN(c->attn_softcap, OptionalFloat(f, p + "attn_logit_softcapping", arch.attn_softcap));
    PP_ASSIGN_OR_RETURN(c->final_softcap, OptionalFloat(f, p + "final_logit_softcapping", arch.final_softcap));
    if (arch.granite_scales) {
        PP_ASSIGN_OR_RETURN(c->embed_scale, OptionalFloat(f, p + "embedding_scale", 1.0f));
        PP_ASSIGN_OR_RETURN(c->residual_scale, OptionalFloat(f, p + "residual_scale", 1.0f));
        PP_ASSIGN_OR_RETURN(c->attn_scale, OptionalFloat(f, p + "attention.scale", 0.0f));
        PP_ASSIGN_OR_RETURN(c->logit_scale, OptionalFloat(f, p + "logit_scale", 1.0f));
    }
    if (arch.swa_pattern > 0 && f.Has(p + "attention.sliding_window")) {
        PP_ASSIGN_OR_RETURN(const uint64_t window, f.GetUint(p + "attention.sliding_window"));
        if (window > 0 && window < static_cast<uint64_t>(c->max_context)) {
            c->sliding_window = static_cast<int32_t>(window);
            PP_RETURN_IF_ERROR(ReadWindowedLayers(f, p, arch, c));
            PP_ASSIGN_OR_RETURN(c->rope_theta_swa, OptionalFloat(f, p + "rope.freq_base_swa", arch.rope_theta_swa));
        }
    }
    return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ConfigFromGguf(const GgufFile& f) {
    ModelConfig c;
    PP_ASSIGN_OR_RETURN(c.arch, f.GetString("general.architecture"));
    const ArchTraits* arch = FindArchitecture(c.arch);
    if (arch == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("unsupported architecture '", c.arch, "' (prepack runs ", ArchitectureNames(), ")"));
    }
    const std::string p = c.arch + ".";
    if (f.Has("general.name")) {
        PP_ASSIGN_OR_RETURN(c.name, f.GetString("general.name"));
    }
    PP_ASSIGN_OR_RETURN(c.dim,         ReadDim(f, p + "embedding_length", kMaxDim));
    PP_ASSIGN_OR_RETURN(c.hidden_dim,  ReadDim(f, p + "feed_forward_length", 4 * kMaxDim));
    PP_ASSIGN_OR_RETURN(c.n_layers,    ReadDim(f, p + "block_count", kMaxLayers));
    PP_ASSIGN_OR_RETURN(c.n_heads,     ReadDim(f, p + "attention.head_count", kMaxDim));
    PP_ASSIGN_OR_RETURN(c.max_context, ReadDim(f, p + "context_length", kMaxContext));
    c.n_kv_heads = c.n_heads;
    if (f.Has(p + "attention.head_count_kv")) {
        PP_ASSIGN_OR_RETURN(c.n_kv_heads, ReadDim(f, p + "attention.head_count_kv", kMaxDim));
    }
    c.head_dim = c.dim / c.n_heads;
    if (f.Has(p + "attention.key_length")) {
        PP_ASSIGN_OR_RETURN(c.head_dim, ReadDim(f, p + "attention.key_length", kMaxDim));
    }
    if (f.Has(p + "attention.value_length")) {
        PP_ASSIGN_OR_RETURN(int32_t value_length, ReadDim(f, p + "attention.value_length", kMaxDim));
        if (value_length != c.head_dim) {
            return absl::InvalidArgumentError(absl::StrCat(p, "attention.value_length (", value_length,
                                                           ") differs from the key length (", c.head_dim,
                                                           "): not supported"));
        }
    }
    c.rope_dim = c.head_dim;
    if (f.Has(p + "rope.dimension_count")) {
        PP_ASSIGN_OR_RETURN(c.rope_dim, ReadDim(f, p + "rope.dimension_count", kMaxDim));
    }
    if (f.Has(p + "rope.freq_base")) {
        PP_ASSIGN_OR_RETURN(double theta, f.GetFloat(p + "rope.freq_base"));
        c.rope_theta = static_cast<float>(theta);
    }
    PP_RETURN_IF_ERROR(ReadRopeScaling(f, p, &c));
    if (f.Has(p + "attention.layer_norm_rms_epsilon")) {
        PP_ASSIGN_OR_RETURN(double eps, f.GetFloat(p + "attention.layer_norm_rms_epsilon"));
        c.norm_eps = static_cast<float>(eps);
    }
    if (f.Has(p + "vocab_size")) {
        PP_ASSIGN_OR_RETURN(c.vocab_size, ReadDim(f, p + "vocab_size", kMaxVocab));
    } else {
        const GgufTensor* embd = f.FindTensor("token_embd.weight");
        if (embd == nullptr || embd->ne.size() != 2) {
            return absl::InvalidArgumentError(absl::StrCat("cannot tell the vocabulary size: no ", p,
                                                           "vocab_size and no 2-D token_embd.weight"));
        }
        if (embd->ne[1] == 0 || embd->ne[1] > static_cast<uint64_t>(kMaxVocab)) {
            return absl::InvalidArgumentError("token_embd.weight has an out-of-range vocabulary size");
        }
        c.vocab_size = static_cast<int32_t>(embd->ne[1]);
    }
    // The optional parts are as the tensors say (llama.cpp loads them the
    // same way: present means used).
    c.tied_output = f.FindTensor("output.weight") == nullptr;
    c.rope_freqs = f.FindTensor("rope_freqs.weight") != nullptr;
    PP_RETURN_IF_ERROR(ReadLongRope(f, p, &c));
    c.fused_qkv = f.FindTensor("blk.0.attn_qkv.weight") != nullptr;
    c.fused_gate_up = f.FindTensor("blk.0.ffn_gate.weight") == nullptr && f.FindTensor("blk.0.ffn_up.weight") != nullptr;
    c.qkv_bias = f.FindTensor("blk.0.attn_q.bias") != nullptr;
    c.qk_norm = f.FindTensor("blk.0.attn_q_norm.weight") != nullptr;
    PP_RETURN_IF_ERROR(ReadFamilyTraits(f, p, *arch, &c));
    PP_RETURN_IF_ERROR(c.Validate());
    return c;
}

namespace {

struct NamedShape {
    const char* name;
    ModelConfig config;
};

ModelConfig Shape(const char* name, int dim, int hidden, int layers, int heads, int kv_heads,
                  int vocab, int ctx, float theta, bool tied) {
    ModelConfig c;
    c.name = std::string("synthetic:") + name;
    c.dim = dim;
    c.hidden_dim = hidden;
    c.n_layers = layers;
    c.n_heads = heads;
    c.n_kv_heads = kv_heads;
    c.head_dim = dim / heads;
    c.rope_dim = c.head_dim;
    c.vocab_size = vocab;
    c.max_context = ctx;
    c.rope_theta = theta;
    c.tied_output = tied;
    return c;
}

const std::vector<NamedShape>& Shapes() {
    static const std::vector<NamedShape> shapes = {
        // llama2.c's stories15M-like shape with MHA.
        {"tiny", Shape("tiny", 288, 768, 6, 6, 6, 512, 2048, 10000.0f, false)},
        // llama2.c's stories110M shape with GQA 3:1 and a Llama-2 vocabulary.
        {"110m", Shape("110m", 768, 2048, 12, 12, 4, 32000, 4096, 10000.0f, false)},
        // Llama-3.2-1B: tied embeddings, 128k vocabulary, GQA 4:1.
        {"1b", Shape("1b", 2048, 8192, 16, 32, 8, 128256, 131072, 500000.0f, true)},
        // Llama-2-7B.
        {"7b", Shape("7b", 4096, 11008, 32, 32, 32, 32000, 4096, 10000.0f, false)},
    };
    return shapes;
}

}  // namespace

std::vector<std::string> SyntheticModelNames() {
    std::vector<std::string> names;
    for (const NamedShape& s : Shapes()) names.push_back(s.name);
    return names;
}

absl::StatusOr<ModelConfig> SyntheticConfig(std::string_view name) {
    for (const NamedShape& s : Shapes()) {
        if (name == s.name) return s.config;
    }
    std::string known;
    for (const NamedShape& s : Shapes()) absl::StrAppend(&known, known.empty() ? "" : ", ", s.name);
    return absl::NotFoundError(absl::StrCat("unknown synthetic model '", std::string(name), "' (known: ", known, ")"));
}

}  // namespace prepack
