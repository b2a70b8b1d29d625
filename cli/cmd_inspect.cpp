// `prepack inspect`: what a model is — architecture and its optional parts,
// hyper-parameters, tensors and their types, vocabulary (type, pre-tokenizer,
// special and end-of-generation tokens), and the memory its weights and KV
// cache take.
#include <cstdio>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/model/gguf.h"
#include "core/model/model_config.h"
#include "core/model/tokenizer.h"
#include "core/model/weights.h"
#include "kernels/cpu/cpu_level.h"

namespace prepack::cli {
namespace {

// What the architecture adds past llama's parts (model_config.h), only
// where it is in use, so a llama file's report stays as it was.
void AddFamilyTraits(const ModelConfig& c, nlohmann::json* j) {
    if (c.ffn_act == FfnActivation::kGeluTanh) (*j)["ffn_activation"] = "gelu_tanh";
    if (c.embed_scale != 1.0f) (*j)["embed_scale"] = c.embed_scale;
    if (c.post_norms) (*j)["post_norms"] = true;
    if (c.residual_scale != 1.0f) (*j)["residual_scale"] = c.residual_scale;
    if (c.attn_scale != 0.0f) (*j)["attn_scale"] = c.attn_scale;
    if (c.attn_softcap != 0.0f) (*j)["attn_softcap"] = c.attn_softcap;
    if (c.final_softcap != 0.0f) (*j)["final_softcap"] = c.final_softcap;
    if (c.logit_scale != 1.0f) (*j)["logit_scale"] = c.logit_scale;
    if (c.rope_attn_factor != 1.0f) (*j)["rope_attn_factor"] = c.rope_attn_factor;
    if (c.rope_freqs) (*j)["rope_freqs_tensor"] = c.rope_freqs_tensor;
    if (c.fused_qkv) (*j)["fused_qkv"] = true;
    if (c.fused_gate_up) (*j)["fused_gate_up"] = true;
    if (c.sliding_window > 0) {
        (*j)["sliding_window"] = c.sliding_window;
        std::vector<int> windowed;
        for (int l = 0; l < c.n_layers; ++l) {
            if (c.Windowed(l)) windowed.push_back(l);
        }
        (*j)["windowed_layers"] = windowed;
        (*j)["rope_theta_swa"] = c.rope_theta_swa > 0.0f ? c.rope_theta_swa : c.rope_theta;
    }
}

nlohmann::json ConfigJson(const ModelConfig& c) {
    nlohmann::json j = {
        {"name", c.name},           {"architecture", c.arch},        {"dim", c.dim},
        {"hidden_dim", c.hidden_dim}, {"n_layers", c.n_layers},      {"n_heads", c.n_heads},
        {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim},      {"rope_dim", c.rope_dim},
        {"rope_theta", c.rope_theta}, {"norm_eps", c.norm_eps},      {"vocab_size", c.vocab_size},
        {"context_length", c.max_context}, {"tied_output", c.tied_output},
        {"rope_style", c.rope_style == RopeStyle::kNeox ? "neox" : "adjacent"}, {"rope_scale", c.rope_scale},
        {"rope_freqs", c.rope_freqs},   {"qkv_bias", c.qkv_bias},      {"qk_norm", c.qk_norm},
        {"parameters", c.TotalParams()},
        {"weight_bytes_f32", WeightBytes(c, cpu::DType::kF32)}, {"weight_bytes_bf16", WeightBytes(c, cpu::DType::kBf16)},
        {"kv_bytes_per_token_f32", c.KvBytesPerToken(cpu::DType::kF32)},
    };
    AddFamilyTraits(c, &j);
    return j;
}

absl::StatusOr<nlohmann::json> Describe(const std::string& spec) {
    if (spec.rfind(kSyntheticPrefix, 0) == 0) {
        PP_ASSIGN_OR_RETURN(ModelConfig c, SyntheticConfig(spec.substr(sizeof(kSyntheticPrefix) - 1)));
        nlohmann::json j = ConfigJson(c);
        j["source"] = spec;
        j["weights"] = "synthetic f32 (deterministic pseudo-random)";
        j["cpu_kernels"] = cpu::KernelChoiceSummary();
        return j;
    }
    PP_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(spec));
    PP_ASSIGN_OR_RETURN(ModelConfig c, ConfigFromGguf(*f));
    nlohmann::json j = ConfigJson(c);
    j["source"] = spec;
    j["gguf_version"] = f->version();
    j["file_bytes"] = f->file_size();
    std::map<std::string, int> types;
    for (const GgufTensor& t : f->tensors()) ++types[GgmlTypeName(t.type)];
    j["tensor_count"] = f->tensors().size();
    j["tensor_types"] = types;
    // What loading keeps in memory: quantized matrices as they are in the
    // file, the rest converted (f32 by default, or bf16 with --dtype bf16).
    j["resident_weight_bytes_f32"] = ResidentWeightBytes(*f, c, cpu::DType::kF32);
    j["resident_weight_bytes_bf16"] = ResidentWeightBytes(*f, c, cpu::DType::kBf16);
    if (f->Has("tokenizer.ggml.model")) {
        PP_ASSIGN_OR_RETURN(std::string tm, f->GetString("tokenizer.ggml.model"));
        j["tokenizer"] = tm;
    }
    // The vocabulary as the engine reads it; a file whose tokenizer cannot
    // be read is still described, with the reason.
    if (absl::StatusOr<Tokenizer> tok = Tokenizer::FromGguf(*f); tok.ok()) {
        j["tokenizer_vocab_size"] = tok->vocab_size();
        j["vocab_type"] = std::string(tok->vocab_type());
        if (!tok->pre_tokenizer().empty()) j["pre_tokenizer"] = tok->pre_tokenizer();
        nlohmann::json special = nlohmann::json::object();
        auto add = [&](const char* what, int32_t id) {
            if (id >= 0) special[what] = {{"id", id}, {"text", tok->Piece(id)}};
        };
        add("bos", tok->bos_id());
        add("eos", tok->eos_id());
        add("eot", tok->eot_id());
        add("eom", tok->eom_id());
        add("unk", tok->unk_id());
        add("pad", tok->pad_id());
        j["special_tokens"] = special;
        nlohmann::json eog = nlohmann::json::array();
        for (int32_t id = 0; id < tok->vocab_size(); ++id) {
            if (tok->IsEndOfGeneration(id)) eog.push_back(tok->Piece(id));
        }
        j["end_of_generation"] = eog;
        j["add_bos"] = tok->add_bos();
        j["add_eos"] = tok->add_eos();
    } else {
        j["tokenizer_error"] = std::string(tok.status().message());
    }
    j["cpu_kernels"] = cpu::KernelChoiceSummary();
    nlohmann::json meta = nlohmann::json::object();
    for (const std::string& k : f->Keys()) meta[k] = f->ValueSummary(k);
    j["metadata"] = meta;
    return j;
}

void PrintText(const nlohmann::json& j) {
    for (const char* k : {"source", "name", "architecture", "parameters", "dim", "hidden_dim", "n_layers",
                          "n_heads", "n_kv_heads", "head_dim", "rope_dim", "rope_theta", "rope_style",
                          "rope_scale", "rope_freqs", "qkv_bias", "qk_norm", "norm_eps", "ffn_activation",
                          "embed_scale", "post_norms", "residual_scale", "attn_scale", "attn_softcap",
                          "final_softcap", "logit_scale", "rope_attn_factor", "rope_freqs_tensor", "fused_qkv",
                          "fused_gate_up", "sliding_window", "windowed_layers", "rope_theta_swa",
                          "context_length", "vocab_size", "tied_output", "weight_bytes_f32", "weight_bytes_bf16",
                          "kv_bytes_per_token_f32", "gguf_version", "file_bytes",
                          "tensor_count", "tensor_types", "resident_weight_bytes_f32", "resident_weight_bytes_bf16", "tokenizer", "tokenizer_vocab_size", "vocab_type",
                          "pre_tokenizer", "special_tokens", "end_of_generation", "add_bos", "add_eos",
                          "tokenizer_error", "weights", "cpu_kernels"}) {
        if (j.contains(k)) std::printf("%-22s %s\n", k, j[k].dump().c_str());
    }
    if (j.contains("metadata")) {
        std::printf("metadata:\n");
        for (const auto& [k, v] : j["metadata"].items()) {
            std::printf("  %-40s %s\n", k.c_str(), v.get<std::string>().c_str());
        }
    }
}

}  // namespace

void AddInspect(CLI::App& app, int* exit_code) {
    auto* o = new CommonOptions();
    CLI::App* cmd = app.add_subcommand("inspect", "Describe a model without running it");
    AddCommonOptions(cmd, o, /*with_kv=*/false);
    cmd->callback([o, exit_code]() {
        absl::StatusOr<nlohmann::json> j = Describe(o->model);
        if (!j.ok()) {
            *exit_code = Fail(j.status());
            return;
        }
        if (o->json) {
            std::printf("%s\n", j->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        } else {
            PrintText(*j);
        }
    });
}

}  // namespace prepack::cli
