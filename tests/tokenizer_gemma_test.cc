// Gemma 3's SentencePiece vocabulary (262,144 tokens, `tokenizer.ggml.model
// = llama`, add_space_prefix = false, user-defined tokens for whitespace runs
// and HTML-like tags) against llama.cpp: tests/data/tokenizer/
// gemma3_goldens.json holds the ids llama.cpp (llama-cpp-python 0.3.36)
// gives a varied text set with add_special and parse_special on and off, and
// its detokenization (scripts/make_tokenizer_goldens.py). The vocabulary
// comes from the real model file scripts/get_models.sh fetches; the test
// skips when it is absent.
#include <gtest/gtest.h>

#include <chrono>
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

const char kGoldens[] = PREPACK_SOURCE_DIR "/tests/data/tokenizer/gemma3_goldens.json";

nlohmann::json ReadGoldens() {
    std::ifstream in(kGoldens);
    EXPECT_TRUE(in.good()) << kGoldens;
    return nlohmann::json::parse(in);
}

class GemmaTokenizerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const std::string path = ::prepack::testing::GemmaModelPath();
        if (!::prepack::testing::FileExists(path)) return;
        auto file = GgufFile::Open(path);
        ASSERT_TRUE(file.ok()) << file.status();
        const auto start = std::chrono::steady_clock::now();
        auto tok = Tokenizer::FromGguf(**file);
        load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ASSERT_TRUE(tok.ok()) << tok.status();
        tok_ = new Tokenizer(*std::move(tok));
    }
    static void TearDownTestSuite() {
        delete tok_;
        tok_ = nullptr;
    }
    void SetUp() override {
        if (tok_ == nullptr) {
            GTEST_SKIP() << ::prepack::testing::GemmaModelPath()
                         << " is absent (scripts/get_models.sh fetches it); skipping";
        }
    }
    static inline Tokenizer* tok_ = nullptr;
    static inline double load_seconds_ = 0;
};

TEST_F(GemmaTokenizerTest, VocabularyAsLlamaCppReadsIt) {
    const nlohmann::json goldens = ReadGoldens();
    EXPECT_EQ(tok_->vocab_size(), goldens["vocab_size"].get<int>());
    EXPECT_EQ(tok_->vocab_type(), "spm");
    EXPECT_EQ(tok_->Piece(tok_->bos_id()), "<bos>");
    EXPECT_EQ(tok_->Piece(tok_->eos_id()), "<eos>");
    // <end_of_turn> ends a chat turn: generation must stop there.
    const auto eot = tok_->Encode("<end_of_turn>", false, true);
    ASSERT_TRUE(eot.ok()) << eot.status();
    ASSERT_EQ(eot->size(), 1u);
    EXPECT_TRUE(tok_->IsEndOfGeneration((*eot)[0]));
    std::printf("Gemma 3 vocabulary (262,144 tokens) loaded in %.3f s\n", load_seconds_);
}

// Every text, in all four add_special x parse_special combinations.
TEST_F(GemmaTokenizerTest, IdsEqualLlamaCpp) {
    const nlohmann::json goldens = ReadGoldens();
    int compared = 0;
    for (const auto& c : goldens["cases"]) {
        const std::string text = c["text"];
        for (bool add : {false, true}) {
            for (bool special : {false, true}) {
                const std::string key = std::string("ids_add") + (add ? "1" : "0") + "_special" + (special ? "1" : "0");
                const auto expected = c[key].get<std::vector<int32_t>>();
                const auto ids = tok_->Encode(text, add, special);
                ASSERT_TRUE(ids.ok()) << ids.status();
                EXPECT_EQ(*ids, expected) << key << " text: [" << text << "]";
                ++compared;
            }
        }
    }
    EXPECT_GT(compared, 300);
}

// Decode gives back the text (no dummy prefix to drop: Gemma adds none),
// as llama.cpp's detokenizer does.
TEST_F(GemmaTokenizerTest, DecodeEqualsLlamaCpp) {
    const nlohmann::json goldens = ReadGoldens();
    for (const auto& c : goldens["cases"]) {
        const std::string text = c["text"];
        const auto ids = c["ids_add0_special0"].get<std::vector<int32_t>>();
        const std::string detok = c["detok"];
        EXPECT_EQ(tok_->Decode(ids), detok) << text;
        // A literal U+2581 in the text decodes as a space (it is SentencePiece's
        // space), in llama.cpp too; every other text comes back unchanged.
        if (text.find("\xE2\x96\x81") == std::string::npos) {
            EXPECT_EQ(detok, text);
        }
    }
}

// A long text on a 262k vocabulary: it decodes back to itself (a tag
// spelled in plain text stays text without parse_special). Prints tokens
// per second, for information: speed is a benchmark's job, not a test's.
TEST_F(GemmaTokenizerTest, EncodeSpeed) {
    std::string text;
    while (text.size() < 200000) {
        // No newline or other user-defined token: one long fragment, the
        // merge loop's worst case.
        text += "The quick brown fox jumps over the lazy dog. def f(x): return x * 2  # comment "
                "\xC3\x9C" "ber na\xC3\xAF" "ve caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD <start_of_turn>user ";
    }
    const auto start = std::chrono::steady_clock::now();
    size_t tokens = 0;
    for (int round = 0; round < 3; ++round) {
        const auto ids = tok_->Encode(text, true, false);
        ASSERT_TRUE(ids.ok());
        tokens += ids->size();
        if (round == 0) {
            EXPECT_EQ(tok_->Decode(*ids), text);
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("Gemma 3 encode: %zu tokens in %.3f s = %.0f tokens/s (%zu bytes per round)\n", tokens, seconds,
                tokens / seconds, text.size());
}

}  // namespace
}  // namespace prepack
