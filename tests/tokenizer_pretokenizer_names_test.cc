// The pre-tokenizer table (core/model/pretokenizer.cpp) against llama.cpp:
//  - tests/data/tokenizer/llama_cpp_pre_tokenizers.json is llama.cpp's own
//    list of `tokenizer.ggml.pre` names, the type each maps onto, the flags
//    it sets and each type's expressions (scripts/extract_llama_pre_table.py
//    read them out of llama-cpp-python 0.3.36's llama-vocab.cpp). Every name
//    must be accepted with exactly those expressions and flags, or refused
//    with a message that names it;
//  - pre_swap_goldens.json: the ids llama.cpp gives a text set with the real
//    Llama 3 vocabulary when its `tokenizer.ggml.pre` is replaced by one name
//    of each row of the table (the split decides the ids);
//  - pre_split_goldens.json: the words Python's `regex` module cuts the same
//    texts into with the tekken, gpt-4o and qwen35 expressions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/gguf.h"
#include "core/model/pretokenizer.h"
#include "core/model/tokenizer.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

nlohmann::json ReadJson(const std::string& name) {
    const std::string path = std::string(PREPACK_SOURCE_DIR "/tests/data/tokenizer/") + name;
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    return nlohmann::json::parse(in);
}

// `s` with every non-ASCII code point written as PCRE2's \x{HEX}, the
// spelling the table uses (source files stay ASCII, so no editor can
// normalise a character of an expression into another one).
std::string EscapeNonAscii(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        const auto lead = static_cast<unsigned char>(s[i]);
        if (lead < 0x80) {
            out.push_back(s[i++]);
            continue;
        }
        const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
        uint32_t cp = lead & (0xFF >> (len + 1));
        for (size_t k = 1; k < len; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        char buf[16];
        std::snprintf(buf, sizeof buf, "\\x{%X}", cp);
        out += buf;
        i += len;
    }
    return out;
}

TEST(PreTokenizerNames, EveryLlamaCppNameIsAcceptedWithItsExpressionsOrRefusedByName) {
    const nlohmann::json table = ReadJson("llama_cpp_pre_tokenizers.json");
    const auto refused = PreTokenizer::RefusedNames();
    std::set<std::string> upstream;
    int accepted = 0;
    for (const auto& entry : table["names"]) {
        const std::string name = entry["name"];
        upstream.insert(name);
        SCOPED_TRACE(name);
        auto pre = PreTokenizer::ForName(name);
        if (!pre.ok()) {
            EXPECT_NE(pre.status().message().find("'" + name + "'"), std::string::npos) << pre.status();
            EXPECT_TRUE(std::binary_search(refused.begin(), refused.end(), name))
                << "refused without saying what it needs: " << pre.status();
            continue;
        }
        ++accepted;
        EXPECT_FALSE(std::binary_search(refused.begin(), refused.end(), name));
        std::vector<std::string> expected;
        for (const auto& e : table["regexes"][entry["type"].get<std::string>()]) {
            expected.push_back(EscapeNonAscii(e.get<std::string>()));
        }
        EXPECT_EQ(pre->expressions(), expected) << "type " << entry["type"];
        EXPECT_EQ(pre->ignore_merges(), entry["ignore_merges"].get<bool>());
        EXPECT_EQ(pre->add_bos_default(), entry["add_bos"].get<bool>());
        EXPECT_EQ(pre->has_default_bos(), !entry["no_default_bos"].get<bool>());
        // Flags prepack has no implementation of must not be on an accepted name.
        EXPECT_FALSE(entry["add_sep"].get<bool>());
        EXPECT_FALSE(entry["escape_whitespaces"].get<bool>());
    }
    // Nothing beyond llama.cpp's names, accepted or refused.
    for (const std::string& n : PreTokenizer::KnownNames()) EXPECT_TRUE(upstream.count(n)) << n;
    for (const std::string& n : refused) EXPECT_TRUE(upstream.count(n)) << n;
    EXPECT_EQ(static_cast<size_t>(accepted) + refused.size(), upstream.size());
    std::printf("%d of llama.cpp's %zu pre-tokenizer names accepted, %zu refused by name\n", accepted,
                upstream.size(), refused.size());
}

TEST(PreTokenizerNames, UnknownNameIsRefusedByName) {
    const auto pre = PreTokenizer::ForName("no-such-pre");
    ASSERT_FALSE(pre.ok());
    EXPECT_NE(pre.status().message().find("'no-such-pre'"), std::string::npos);
    const auto refused = PreTokenizer::ForName("kimi-k2");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("'kimi-k2'"), std::string::npos);
    EXPECT_NE(refused.status().message().find("needs"), std::string::npos);
}

// ---- against llama.cpp on a real vocabulary ----------------------------------

// GGUF `bytes` with the string value of `key` replaced by `value` (a
// vocabulary-only file: nothing after the metadata points into it).
std::vector<uint8_t> ReplaceStringValue(const std::string& bytes, const std::string& key, const std::string& value) {
    std::string needle(8, '\0');
    const uint64_t key_len = key.size();
    std::memcpy(needle.data(), &key_len, 8);
    needle += key;
    const size_t at = bytes.find(needle);
    EXPECT_NE(at, std::string::npos) << key;
    const size_t type_at = at + needle.size();
    uint64_t old_len = 0;
    std::memcpy(&old_len, bytes.data() + type_at + 4, 8);
    std::string out = bytes.substr(0, type_at + 4);
    const uint64_t new_len = value.size();
    out.append(reinterpret_cast<const char*>(&new_len), 8);
    out += value;
    out += bytes.substr(type_at + 12 + old_len);
    return std::vector<uint8_t>(out.begin(), out.end());
}

TEST(PreTokenizerNames, EveryRowSplitsAsLlamaCppOnARealVocabulary) {
    const nlohmann::json goldens = ReadJson("pre_swap_goldens.json");
    const std::string base_path =
        ::prepack::testing::ModelsDir() + "/vocab/" + goldens["base_vocab"].get<std::string>();
    if (!std::filesystem::exists(base_path)) {
        GTEST_SKIP() << base_path << " is absent (shared/models); skipping";
    }
    const std::string base = ::prepack::testing::ReadFile(base_path);
    const auto texts = goldens["texts"].get<std::vector<std::string>>();
    int rows = 0;
    for (const auto& [name, expected] : goldens["ids"].items()) {
        SCOPED_TRACE(name);
        auto file = GgufFile::FromBytes(ReplaceStringValue(base, "tokenizer.ggml.pre", name));
        ASSERT_TRUE(file.ok()) << file.status();
        auto tok = Tokenizer::FromGguf(**file);
        ASSERT_TRUE(tok.ok()) << tok.status();
        ASSERT_EQ(tok->pre_tokenizer(), name);
        ASSERT_EQ(expected.size(), texts.size());
        int wrong = 0;
        for (size_t i = 0; i < texts.size(); ++i) {
            const auto ids = tok->Encode(texts[i], false, false);
            ASSERT_TRUE(ids.ok()) << ids.status();
            if (*ids != expected[i].get<std::vector<int32_t>>() && ++wrong <= 3) {
                ADD_FAILURE() << "text " << i << " [" << texts[i] << "]";
            }
            // Byte-level BPE keeps every byte, whatever the split.
            EXPECT_EQ(tok->Decode(*ids), texts[i]);
        }
        EXPECT_EQ(wrong, 0) << "texts that differ from llama.cpp";
        ++rows;
    }
    // Every row of the table has goldens (make_tokenizer_goldens.py reads the rows from the source).
    EXPECT_GE(rows, 25);
}

// ---- the split alone, against Python's regex module ----------------------------

TEST(PreTokenizerNames, NewSplitsEqualPythonRegex) {
    const nlohmann::json goldens = ReadJson("pre_split_goldens.json");
    const auto texts = goldens["texts"].get<std::vector<std::string>>();
    for (const auto& [name, words_per_text] : goldens["words"].items()) {
        SCOPED_TRACE(name);
        auto pre = PreTokenizer::ForName(name);
        ASSERT_TRUE(pre.ok()) << pre.status();
        ASSERT_EQ(words_per_text.size(), texts.size());
        for (size_t i = 0; i < texts.size(); ++i) {
            std::vector<std::pair<size_t, size_t>> ranges;
            ASSERT_TRUE(pre->Split(texts[i], &ranges).ok());
            std::vector<std::string> words;
            for (const auto& [b, e] : ranges) words.push_back(texts[i].substr(b, e - b));
            EXPECT_EQ(words, words_per_text[i].get<std::vector<std::string>>()) << "text [" << texts[i] << "]";
        }
    }
}

// The ChatGLM rows have no default BOS: a file without bos_token_id has none.
TEST(PreTokenizerNames, ChatGlmHasNoDefaultBos) {
    auto glm = PreTokenizer::ForName("glm4");
    ASSERT_TRUE(glm.ok());
    EXPECT_FALSE(glm->has_default_bos());
    EXPECT_TRUE(glm->ignore_merges());
    auto qwen = PreTokenizer::ForName("qwen2");
    ASSERT_TRUE(qwen.ok());
    EXPECT_TRUE(qwen->has_default_bos());
}

}  // namespace
}  // namespace prepack
