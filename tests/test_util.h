// Helpers shared by the engine tests.
#pragma once

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/model/model_config.h"
#include "core/model/tokenizer.h"
#include "kernels/cpu/cpu_level.h"

#ifndef PREPACK_FETCHED_MODELS_DIR
#define PREPACK_FETCHED_MODELS_DIR "build/models"   // targets built without the definition
#endif

namespace prepack::testing {

// The build's models folder, unless $PREPACK_MODELS_DIR names another (the
// GPU machine runs binaries built elsewhere: scripts/gpu-check.sh).
inline std::string ModelsDir() {
    const char* env = std::getenv("PREPACK_MODELS_DIR");
    return env != nullptr && *env != '\0' ? env : PREPACK_MODELS_DIR;
}
inline std::string StoriesDir() { return ModelsDir() + "/stories260K"; }

// The real chat model scripts/get_models.sh fetches (SmolLM2-135M-Instruct,
// Q4_1, ChatML template), unless $PREPACK_CHAT_MODEL names another file.
inline std::string ChatModelPath() {
    const char* env = std::getenv("PREPACK_CHAT_MODEL");
    return env != nullptr && *env != '\0' ? env : PREPACK_FETCHED_MODELS_DIR "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// The real Gemma-3-270M (pretrained, Q4_K_M: sliding-window attention, a
// 262k SentencePiece vocabulary) scripts/get_models.sh assembles from PyPI,
// unless $PREPACK_GEMMA_MODEL names another file.
inline std::string GemmaModelPath() {
    const char* env = std::getenv("PREPACK_GEMMA_MODEL");
    return env != nullptr && *env != '\0' ? env : PREPACK_FETCHED_MODELS_DIR "/gemma-3-270m-q4_k_m.gguf";
}

// Every CPU level up to the one this CPU has, lowest first (avx512-bf16
// shares avx512's kernel table but has its own Q8_0 kernel, AVX-512 VNNI),
// less those the build did not compile (PREPACK_CPU_LEVELS: the sanitizer
// and fuzz trees have the baseline and this machine's level only): those
// are skipped, and said so.
inline std::vector<cpu::CpuLevel> CpuLevelsHere() {
    static bool told = false;   // once per process: some tests ask once per case
    std::vector<cpu::CpuLevel> levels;
    for (cpu::CpuLevel l : {cpu::CpuLevel::kBaseline, cpu::CpuLevel::kAvx2, cpu::CpuLevel::kAvx512,
                            cpu::CpuLevel::kAvx512Bf16}) {
        if (static_cast<int>(l) > static_cast<int>(cpu::DetectedCpuLevel())) continue;
        if (cpu::CpuLevelBuilt(l)) {
            levels.push_back(l);
        } else if (!told) {
            std::printf("skipping CPU level %s: not compiled in this build (PREPACK_CPU_LEVELS)\n",
                        cpu::CpuLevelName(l));
        }
    }
    told = true;
    return levels;
}

inline bool FileExists(const std::string& path) {
    std::ifstream f(path);
    return f.good();
}

// GTEST_SKIP()s the calling test (returns from it) when the stories260K files are absent.
#define PREPACK_REQUIRE_STORIES()                                                              \
    do {                                                                                       \
        if (!::prepack::testing::FileExists(::prepack::testing::StoriesDir() + "/stories260K.gguf")) { \
            GTEST_SKIP() << "stories260K model not found in " << ::prepack::testing::StoriesDir() \
                         << " (shared/models is absent); skipping";                            \
        }                                                                                      \
    } while (0)

// GTEST_SKIP()s the calling test when the fetched chat model is absent.
#define PREPACK_REQUIRE_CHAT_MODEL()                                                           \
    do {                                                                                       \
        if (!::prepack::testing::FileExists(::prepack::testing::ChatModelPath())) {            \
            GTEST_SKIP() << ::prepack::testing::ChatModelPath()                                \
                         << " is absent (scripts/get_models.sh fetches it); skipping";          \
        }                                                                                      \
    } while (0)

inline std::string ReadFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// A small llama-shaped config for random-weight models (head_dim = dim /
// heads; rope over the whole head unless rope_dim is given).
inline ModelConfig SmallConfig(int dim, int heads, int kv_heads, int layers, int hidden, int vocab, int rope_dim = 0) {
    ModelConfig c;
    c.name = "test";
    c.dim = dim;
    c.n_heads = heads;
    c.n_kv_heads = kv_heads;
    c.head_dim = dim / heads;
    c.rope_dim = rope_dim ? rope_dim : c.head_dim;
    c.n_layers = layers;
    c.hidden_dim = hidden;
    c.vocab_size = vocab;
    c.max_context = 512;
    return c;
}

// Ids encoded without a BOS, decoded as the start of a text: after a BOS
// (SPM), which drops the dummy-prefix space the encoder put in front. Decode
// alone keeps every byte the ids stand for (core/model/tokenizer.h).
inline std::string DecodeAsText(const Tokenizer& tok, std::vector<int32_t> ids) {
    if (tok.vocab_type() == "spm" && tok.bos_id() >= 0 && (ids.empty() || ids[0] != tok.bos_id())) {
        ids.insert(ids.begin(), tok.bos_id());
    }
    return tok.Decode(ids);
}

// Largest |a - b| relative to max(1, |b|) over two equally long rows.
inline double MaxRelDiff(const float* a, const float* b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double d = std::fabs(double(a[i]) - double(b[i])) / std::max(1.0, std::fabs(double(b[i])));
        if (!(d <= worst)) worst = d;   // NaN propagates as "worst"
    }
    return worst;
}

#ifdef PREPACK_CLI
// Runs the `prepack` CLI with `args` (shell syntax) and returns its stdout,
// with stderr merged when `merge_stderr`; *exit_code gets its exit status.
inline std::string RunCli(const std::string& args, int* exit_code, bool merge_stderr = false) {
    const std::string cmd = std::string(PREPACK_CLI) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

// Runs the CLI with `args` (stderr merged) and expects it to fail with
// `message` in what it printed.
inline void ExpectCliFailsSaying(const std::string& args, const std::string& message) {
    int code = 0;
    const std::string out = RunCli(args, &code, /*merge_stderr=*/true);
    EXPECT_NE(code, 0) << args << ": " << out;
    EXPECT_NE(out.find(message), std::string::npos) << args << ": " << out;
}
#endif

}  // namespace prepack::testing
