#include "core/model/model.h"

#include "core/model/gguf.h"

namespace prepack {

absl::StatusOr<std::unique_ptr<Model>> Model::FromConfig(const ModelConfig& config, uint64_t seed, cpu::DType dtype) {
    std::unique_ptr<Model> m(new Model());
    m->source_ = config.name;
    m->config_ = config;
    PP_ASSIGN_OR_RETURN(m->weights_, SyntheticWeights(config, seed, dtype));
    PP_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::Synthetic(config.vocab_size));
    return m;
}

absl::StatusOr<Tokenizer> LoadTokenizer(const std::string& spec) {
    if (spec.rfind(kSyntheticPrefix, 0) == 0) {
        PP_ASSIGN_OR_RETURN(ModelConfig config, SyntheticConfig(spec.substr(sizeof(kSyntheticPrefix) - 1)));
        return Tokenizer::Synthetic(config.vocab_size);
    }
    PP_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(spec));
    return Tokenizer::FromGguf(*file);
}

absl::StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& spec, cpu::DType dtype) {
    if (spec.rfind(kSyntheticPrefix, 0) == 0) {
        PP_ASSIGN_OR_RETURN(ModelConfig config,
                            SyntheticConfig(spec.substr(sizeof(kSyntheticPrefix) - 1)));
        return FromConfig(config, kSyntheticSeed, dtype);
    }
    PP_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(spec));
    std::unique_ptr<Model> m(new Model());
    m->source_ = spec;
    PP_ASSIGN_OR_RETURN(m->config_, ConfigFromGguf(*file));
    if (m->config_.name.empty()) m->config_.name = spec;
    PP_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::FromGguf(*file));
    if (m->tokenizer_.vocab_size() != m->config_.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tokenizer has ", m->tokenizer_.vocab_size(), " tokens but the model's vocabulary is ",
            m->config_.vocab_size));
    }
    PP_ASSIGN_OR_RETURN(m->weights_, LoadWeights(std::move(file), m->config_, dtype));
    return m;
}

}  // namespace prepack
