// `prepack tokenize` and `prepack inspect` on the real vocabularies of
// ../shared/models/vocab: the ids llama.cpp gives (its test vectors, one per
// file), the two switches, the JSON contract, and what inspect says of the
// vocabulary. Skipped without the vocabulary files.
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
