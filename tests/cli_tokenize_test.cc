// `prepack tokenize` and `prepack inspect` on the real vocabularies of
// ../shared/models/vocab: the ids llama.cpp gives (its test vectors, one per
// file), the two switches, the JSON contract, and what inspect says of the
// vocabulary; `tokenize` and `generate` on stories260K with an empty
// --prompt. Skipped without the model files.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

std::string Vocab(const std::string& name) { return testing::ModelsDir() + "/vocab/ggml-vocab-" + name + ".gguf"; }

nlohmann::json Tokenize(const std::string& args) {
    int code = 0;
    const std::string out = testing::RunCli("tokenize " + args + " --json", &code);
    EXPECT_EQ(code, 0) << out;
    return code == 0 ? nlohmann::json::parse(out) : nlohmann::json{};
}

TEST(TokenizeCli, Llama3IdsSwitchesAndPieces) {
    if (!testing::FileExists(Vocab("llama-bpe"))) GTEST_SKIP() << "no " << Vocab("llama-bpe");
    const std::string m = "--model " + Vocab("llama-bpe");
    // llama.cpp's test vector: "Hello world" without specials is 9906 1917.
    EXPECT_EQ(Tokenize(m + " --no-special --prompt 'Hello world'")["ids"], nlohmann::json({9906, 1917}));
    // With specials the vocabulary adds BOS (<|begin_of_text|>, 128000).
    const nlohmann::json j = Tokenize(m + " --prompt 'Hello world'");
    EXPECT_EQ(j["ids"], nlohmann::json({128000, 9906, 1917}));
    EXPECT_EQ(j["pieces"], nlohmann::json({"<|begin_of_text|>", "Hello", " world"}));
    // <|eot_id|> (128009) is text by default, one control token when parsed.
    const auto plain = Tokenize(m + " --no-special --prompt 'a<|eot_id|>'")["ids"];
    EXPECT_GT(plain.size(), 2u);
    for (const auto& id : plain) EXPECT_NE(id, 128009);
    EXPECT_EQ(Tokenize(m + " --no-special --parse-special --prompt 'a<|eot_id|>'")["ids"],
              nlohmann::json({64, 128009}));
}

TEST(TokenizeCli, StdinAndTextOutput) {
    if (!testing::FileExists(Vocab("qwen2"))) GTEST_SKIP() << "no " << Vocab("qwen2");
    int code = 0;
    const std::string out =
        testing::RunCli("tokenize --model " + Vocab("qwen2") + " --no-special < /dev/null", &code, true);
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "") << "empty stdin, no specials: no ids";
    const std::string text = testing::RunCli("tokenize --model " + Vocab("qwen2") + " --prompt 'Hello'", &code);
    EXPECT_EQ(code, 0);
    EXPECT_NE(text.find("9707 -> \"Hello\""), std::string::npos) << text;   // Qwen2 adds no BOS
}

std::string Stories() { return testing::StoriesDir() + "/stories260K.gguf"; }

// --prompt="" is the empty text, as the library takes it, in both spellings.
// CLI11 2.1 read `--prompt=` as a bare --prompt: it took the next argument as
// the text (here --no-special) or failed with "1 required TEXT missing".
TEST(TokenizeCli, AnEmptyPromptIsTheEmptyText) {
    if (!testing::FileExists(Stories())) GTEST_SKIP() << "no " << Stories();
    const std::string m = "--model " + Stories();
    for (const std::string empty : {"--prompt=''", "--prompt ''", "--prompt="}) {
        SCOPED_TRACE(empty);
        // stories260K adds BOS (id 1): the empty text is BOS alone, and nothing without specials.
        const nlohmann::json j = Tokenize(m + " " + empty);
        EXPECT_EQ(j["ids"], nlohmann::json({1}));
        EXPECT_EQ(j["pieces"], nlohmann::json({"<s>"}));
        EXPECT_EQ(Tokenize(m + " " + empty + " --no-special")["ids"], nlohmann::json::array());
        EXPECT_EQ(Tokenize(m + " --no-special " + empty)["ids"], nlohmann::json::array());
    }
    // Given, even empty, --prompt is the text: stdin is not read.
    const std::string input = ::testing::TempDir() + "/cli_tokenize_stdin.txt";
    std::ofstream(input) << "Once upon a time";
    int code = 0;
    std::string out = testing::RunCli("tokenize " + m + " --prompt= < " + input, &code);
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "     1 -> \"<s>\"\n");
    out = testing::RunCli("tokenize " + m + " --no-special --prompt '' < " + input, &code);
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "");
    // Without --prompt the text is stdin's.
    EXPECT_EQ(Tokenize(m + " < " + input)["ids"], Tokenize(m + " --prompt 'Once upon a time'")["ids"]);
    // A value that looks like an option is still the text, in both spellings.
    const nlohmann::json dashes = Tokenize(m + " --no-special --prompt=--json")["ids"];
    EXPECT_FALSE(dashes.empty());
    EXPECT_EQ(Tokenize(m + " --no-special --prompt --json")["ids"], dashes);
}

// generate --prompt="" generates from BOS alone, as the library does for the
// empty text, and the option after it keeps its meaning.
TEST(GenerateCli, AnEmptyPromptGeneratesFromBosAlone) {
    if (!testing::FileExists(Stories())) GTEST_SKIP() << "no " << Stories();
    const std::string m = "generate --json --threads 1 --temperature 0 --model " + Stories();
    nlohmann::json first;
    for (const std::string empty : {"--prompt=''", "--prompt ''", "--prompt="}) {
        SCOPED_TRACE(empty);
        int code = 0;
        const std::string out = testing::RunCli(m + " " + empty + " --max-tokens=3", &code);
        ASSERT_EQ(code, 0) << out;
        const nlohmann::json j = nlohmann::json::parse(out);
        EXPECT_EQ(j["prompt_tokens"], nlohmann::json({1}));   // BOS alone
        EXPECT_GE(j["tokens"].size(), 1u);
        EXPECT_LE(j["tokens"].size(), 3u);                     // --max-tokens=3 was not the prompt
        if (first.is_null()) first = j["tokens"];
        EXPECT_EQ(j["tokens"], first) << "greedy: the same tokens in every spelling";
    }
    int code = 0;
    const std::string out = testing::RunCli(m + " --max-tokens=3 --prompt=", &code);   // last on the line
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(nlohmann::json::parse(out)["tokens"], first);
}

TEST(InspectCli, DescribesTheArchitectureVocabularyAndEndTokens) {
    const std::string model = std::string(PREPACK_REALSHAPE_DIR) + "/qwen3.gguf";
    if (!testing::FileExists(model)) GTEST_SKIP() << "no " << model << " (scripts/make_realshape_f32.sh makes it)";
    int code = 0;
    const std::string out = testing::RunCli("inspect --json --model " + model, &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["architecture"], "qwen3");
    EXPECT_EQ(j["qk_norm"], true);
    EXPECT_EQ(j["rope_style"], "neox");
    EXPECT_EQ(j["head_dim"], 64);
    EXPECT_EQ(j["vocab_type"], "bpe");
    EXPECT_EQ(j["pre_tokenizer"], "qwen2");
    EXPECT_EQ(j["add_bos"], false);
    EXPECT_EQ(j["special_tokens"]["eot"]["text"], "<|im_end|>");
    EXPECT_NE(j["end_of_generation"].dump().find("<|im_end|>"), std::string::npos) << j["end_of_generation"];
    EXPECT_EQ(j["tensor_types"]["F32"], j["tensor_count"]);
}

}  // namespace
}  // namespace prepack
