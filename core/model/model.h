// A loaded model: hyper-parameters, weights and tokenizer, from a GGUF file
// or from a named synthetic shape ("synthetic:110m").
#pragma once

#include <memory>
#include <string>

#include "core/model/model_config.h"
#include "core/base/status.h"
#include "core/model/tokenizer.h"
#include "core/model/weights.h"

namespace prepack {

class GgufFile;

class Model {
public:
    // `spec` is a GGUF path or "synthetic:NAME". Errors: NOT_FOUND (no file,
    // unknown synthetic name), INVALID_ARGUMENT / DATA_LOSS (bad file),
    // RESOURCE_EXHAUSTED (does not fit in memory). `dtype` is the weight
    // matrices' storage (bf16 halves memory and decode's bytes per token).
    static absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& spec, cpu::DType dtype = cpu::DType::kF32);
    // Random weights at `config`'s shape with a synthetic vocabulary (tests).
    static absl::StatusOr<std::unique_ptr<Model>> FromConfig(const ModelConfig& config, uint64_t seed,
                                                             cpu::DType dtype = cpu::DType::kF32);

    const ModelConfig&  config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    const Tokenizer&    tokenizer() const { return tokenizer_; }
    // The spec it was loaded from.
    const std::string&  source() const { return source_; }

private:
    Model() = default;

    std::string  source_;
    ModelConfig  config_;
    ModelWeights weights_;
    Tokenizer    tokenizer_;
};

// The vocabulary alone of a GGUF file or "synthetic:NAME", without loading
// any weights (for tokenizing). Errors as Model::Load's.
absl::StatusOr<Tokenizer> LoadTokenizer(const std::string& spec);

constexpr const char kSyntheticPrefix[] = "synthetic:";
// Seed of the weights behind every "synthetic:NAME" model.
constexpr uint64_t kSyntheticSeed = 42;

}  // namespace prepack
