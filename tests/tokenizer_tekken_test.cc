// Mistral's tekken vocabulary (Mistral Nemo's tekken_240911.json: 131,072
// tokens, `tokenizer.ggml.pre = tekken`) with two oracles:
// tests/data/tokenizer/tekken_goldens.json holds, for a varied text set, the
// ids llama.cpp gives (llama-cpp-python 0.3.36 on the GGUF
// scripts/make_tekken_vocab.py writes the way llama.cpp's converter does)
// and the ids Mistral's own encoder gives (mistral-common's Tekkenizer).
// prepack tokenizes as llama.cpp does. The two oracles differ only where
// llama.cpp's spelling of the split expression leaves combining marks out of
// words (Devanagari and Thai vowel signs); there prepack is llama.cpp's
// twin, and the test says so. Skips when the GGUF has not been made
// (scripts/get_vocabs.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/gguf.h"
#include "core/model/tokenizer.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

const char kGoldens[] = PREPACK_SOURCE_DIR "/tests/data/tokenizer/tekken_goldens.json";

std::string TekkenPath() { return PREPACK_FETCHED_MODELS_DIR "/vocab-tekken-240911.gguf"; }

TEST(TekkenTokenizer, IdsEqualLlamaCppAndMistralsEncoder) {
    if (!::prepack::testing::FileExists(TekkenPath())) {
        GTEST_SKIP() << TekkenPath() << " is absent (scripts/get_vocabs.sh makes it from PyPI's mistral-common); "
                     << "skipping";
    }
    std::ifstream in(kGoldens);
    ASSERT_TRUE(in.good()) << kGoldens;
    const nlohmann::json goldens = nlohmann::json::parse(in);
    auto file = GgufFile::Open(TekkenPath());
    ASSERT_TRUE(file.ok()) << file.status();
    auto tok = Tokenizer::FromGguf(**file);
    ASSERT_TRUE(tok.ok()) << tok.status();
    EXPECT_EQ(tok->vocab_size(), 131072);
    EXPECT_EQ(tok->pre_tokenizer(), "tekken");
    EXPECT_TRUE(tok->add_bos());

    const auto texts = goldens["texts"].get<std::vector<std::string>>();
    int oracles_differ = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        const auto llama = goldens["llama_cpp"][i].get<std::vector<int32_t>>();
        const auto mistral = goldens["mistral_common"][i].get<std::vector<int32_t>>();
        const auto ids = tok->Encode(texts[i], false, false);
        ASSERT_TRUE(ids.ok()) << ids.status();
        EXPECT_EQ(*ids, llama) << "text [" << texts[i] << "]";
        if (llama != mistral) {
            ++oracles_differ;
            std::printf("llama.cpp and mistral-common differ (prepack follows llama.cpp): [%s]\n", texts[i].c_str());
        }
        EXPECT_EQ(tok->Decode(*ids), texts[i]);
        // With add_special: the BOS in front, nothing else changes.
        const auto with_bos = tok->Encode(texts[i], true, false);
        ASSERT_TRUE(with_bos.ok());
        ASSERT_FALSE(with_bos->empty());
        EXPECT_EQ((*with_bos)[0], tok->bos_id());
        EXPECT_EQ(std::vector<int32_t>(with_bos->begin() + 1, with_bos->end()), *ids);
    }
    // Today: two texts (Hindi and Thai). More would mean an oracle changed.
    EXPECT_LE(oracles_differ, 2);
    std::printf("%zu texts; prepack equals llama.cpp on all, and mistral-common on all but %d\n", texts.size(),
                oracles_differ);
}

}  // namespace
}  // namespace prepack
