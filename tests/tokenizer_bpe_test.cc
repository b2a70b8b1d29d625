// Tests for byte-level BPE vocabularies (GGUF `tokenizer.ggml.model =
// "gpt2"`) and for what both vocabulary kinds share (special tokens, end of
// generation).
//
// The reference is llama.cpp itself: ../shared/models/vocab holds real
// vocabularies with llama.cpp's tokenizer test vectors (texts and the ids
// llama.cpp's tests expect, add_special = false, parse_special = false), and
// every vector of every file there must come out exactly. The rest are small
// in-memory vocabularies, so the basics are checked without model files too.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/bpe.h"
#include "core/model/gguf.h"
#include "core/model/pretokenizer.h"
#include "core/model/tokenizer.h"
#include "tests/gguf_builder.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using ::prepack::testing::ReadFile;

std::string VocabDir() { return ::prepack::testing::ModelsDir() + "/vocab"; }

#define SKIP_WITHOUT_VOCABS()                                                                  \
    if (!std::filesystem::is_directory(VocabDir()))                                            \
    GTEST_SKIP() << "no vocabulary directory " << VocabDir()                                   \
                 << " (shared/models is absent; set PREPACK_MODELS_DIR to the folder holding vocab/)"

Tokenizer LoadVocab(const std::string& name) {
    auto file = GgufFile::Open(VocabDir() + "/ggml-vocab-" + name + ".gguf");
    EXPECT_TRUE(file.ok()) << file.status();
    auto tok = Tokenizer::FromGguf(**file);
    EXPECT_TRUE(tok.ok()) << tok.status();
    return *std::move(tok);
}

// llama.cpp's test-tokenizer-0 format (vocab/README.md).
struct Vector {
    std::string text;
    std::vector<int32_t> ids;
};

std::vector<Vector> ReadVectors(const std::string& gguf_path) {
    const std::string inp = ReadFile(gguf_path + ".inp");
    const std::string out = ReadFile(gguf_path + ".out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t at = 0;;) {
        const size_t next = inp.find(sep, at);
        if (next == std::string::npos) {
            texts.push_back(inp.substr(at));
            break;
        }
        texts.push_back(inp.substr(at, next - at));
        at = next + sep.size();
    }
    if (!texts.empty() && texts.back().empty()) texts.pop_back();
    std::vector<std::string> lines;
    for (size_t at = 0; at < out.size();) {
        size_t next = out.find('\n', at);
        if (next == std::string::npos) next = out.size();
        lines.push_back(out.substr(at, next - at));
        at = next + 1;
    }
    EXPECT_EQ(texts.size(), lines.size()) << gguf_path;
    std::vector<Vector> vectors;
    for (size_t i = 0; i < texts.size() && i < lines.size(); ++i) {
        Vector v{texts[i], {}};
        std::istringstream in(lines[i]);
        for (int32_t id; in >> id;) v.ids.push_back(id);
        vectors.push_back(std::move(v));
    }
    return vectors;
}

std::string Ids(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

// ---- llama.cpp's vectors, every file ----------------------------------------------

TEST(TokenizerVocab, EveryVectorMatchesLlamaCpp) {
    SKIP_WITHOUT_VOCABS();
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(VocabDir())) {
        if (e.path().extension() == ".gguf" && std::filesystem::exists(e.path().string() + ".inp")) {
            files.push_back(e.path().string());
        }
    }
    std::sort(files.begin(), files.end());
    ASSERT_FALSE(files.empty()) << "no *.gguf with test vectors in " << VocabDir();
    int failed_files = 0;
    for (const std::string& path : files) {
        SCOPED_TRACE(path);
        auto file = GgufFile::Open(path);
        ASSERT_TRUE(file.ok()) << file.status();
        auto tok = Tokenizer::FromGguf(**file);
        ASSERT_TRUE(tok.ok()) << tok.status();
        const std::vector<Vector> vectors = ReadVectors(path);
        int encoded = 0, round_trips = 0;
        for (const Vector& v : vectors) {
            auto ids = tok->Encode(v.text, /*add_special=*/false, /*parse_special=*/false);
            ASSERT_TRUE(ids.ok()) << ids.status();
            if (*ids == v.ids) {
                ++encoded;
            } else {
                ADD_FAILURE() << ::testing::PrintToString(v.text) << "\n  llama.cpp: " << Ids(v.ids)
                              << "\n  ours:      " << Ids(*ids);
            }
            // BPE decodes to the exact bytes; SPM as its contract says (the
            // vectors hold no U+2581), as the start of a text.
            if (testing::DecodeAsText(*tok, *ids) == v.text) {
                ++round_trips;
            } else {
                ADD_FAILURE() << "Decode(Encode(s)) != s for " << ::testing::PrintToString(v.text) << ": "
                              << ::testing::PrintToString(testing::DecodeAsText(*tok, *ids));
            }
        }
        const auto name = std::filesystem::path(path).filename().string();
        std::printf("[ vectors  ] %-28s %-4s %-14s encode %2d/%zu, round trip %2d/%zu\n", name.c_str(),
                    std::string(tok->vocab_type()).c_str(), tok->pre_tokenizer().c_str(), encoded,
                    vectors.size(), round_trips, vectors.size());
        failed_files += encoded != static_cast<int>(vectors.size());
    }
    EXPECT_EQ(failed_files, 0);
}

// ---- real vocabularies: properties ------------------------------------------------

TEST(TokenizerVocab, KindsAndDefaults) {
    SKIP_WITHOUT_VOCABS();
    const Tokenizer llama3 = LoadVocab("llama-bpe");
    EXPECT_EQ(llama3.vocab_type(), "bpe");
    EXPECT_EQ(llama3.pre_tokenizer(), "llama-bpe");
    EXPECT_TRUE(llama3.add_bos());   // llama.cpp's default for llama3 (the file has no add_bos_token)
    EXPECT_EQ(llama3.bos_id(), 128000);
    EXPECT_EQ(*llama3.Encode("Hello", true), (std::vector<int32_t>{128000, 9906}));
    const Tokenizer qwen2 = LoadVocab("qwen2");
    EXPECT_EQ(qwen2.pre_tokenizer(), "qwen2");
    EXPECT_FALSE(qwen2.add_bos());
    EXPECT_EQ(*qwen2.Encode("Hello", true), *qwen2.Encode("Hello", false));
    const Tokenizer spm = LoadVocab("llama-spm");
    EXPECT_EQ(spm.vocab_type(), "spm");
    EXPECT_EQ(spm.pre_tokenizer(), "");
}

TEST(TokenizerVocab, ControlTokenTextIsTextUnlessParseSpecial) {
    SKIP_WITHOUT_VOCABS();
    const Tokenizer tok = LoadVocab("llama-bpe");
    const std::string prompt = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
    const auto plain = *tok.Encode(prompt, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 128009), 0) << Ids(plain);
    EXPECT_GT(plain.size(), 8u);
    EXPECT_EQ(tok.Decode(plain), prompt);
    const auto eot_alone = *tok.Encode("<|eot_id|>", false);
    EXPECT_GT(eot_alone.size(), 1u);   // several ordinary tokens
    EXPECT_EQ(*tok.Encode("<|eot_id|>", false, true), (std::vector<int32_t>{128009}));

    const auto special = *tok.Encode(prompt, false, true);
    std::vector<int32_t> expected = {128006};
    const std::vector<int32_t> user = *tok.Encode("user", false), hi = *tok.Encode("\n\nHi", false);
    expected.insert(expected.end(), user.begin(), user.end());
    expected.push_back(128007);
    expected.insert(expected.end(), hi.begin(), hi.end());
    expected.push_back(128009);
    EXPECT_EQ(special, expected) << Ids(special);
    EXPECT_EQ(std::count(special.begin(), special.end(), 128009), 1);
    // Control tokens decode to nothing.
    EXPECT_EQ(tok.Decode(special), "user\n\nHi");
    // With add_special too, BOS first.
    EXPECT_EQ(tok.Encode(prompt, true, true)->front(), 128000);
}

TEST(TokenizerVocab, UserDefinedTokensSplitWithoutParseSpecial) {
    SKIP_WITHOUT_VOCABS();
    // MPT (GPT-NeoX) stores runs of spaces as user-defined tokens, which
    // Hugging Face and llama.cpp split out before pre-tokenizing.
    const Tokenizer mpt = LoadVocab("mpt");
    EXPECT_EQ(mpt.Piece(50275), "   ");
    const auto ids = *mpt.Encode("a   b", false);
    EXPECT_NE(std::find(ids.begin(), ids.end(), 50275), ids.end()) << Ids(ids);
    EXPECT_EQ(mpt.Decode(ids), "a   b");
}

TEST(TokenizerVocab, EndOfGeneration) {
    SKIP_WITHOUT_VOCABS();
    const Tokenizer llama3 = LoadVocab("llama-bpe");
    EXPECT_TRUE(llama3.IsEndOfGeneration(128001));    // <|end_of_text|> (EOS)
    EXPECT_TRUE(llama3.IsEndOfGeneration(128009));    // <|eot_id|>
    EXPECT_EQ(llama3.eot_id(), 128009);
    EXPECT_FALSE(llama3.IsEndOfGeneration(128000));   // <|begin_of_text|>
    EXPECT_FALSE(llama3.IsEndOfGeneration(128006));   // <|start_header_id|>
    EXPECT_FALSE(llama3.IsEndOfGeneration(9906));     // "Hello"
    EXPECT_FALSE(llama3.IsEndOfGeneration(-1));
    EXPECT_FALSE(llama3.IsEndOfGeneration(1 << 30));

    const Tokenizer qwen2 = LoadVocab("qwen2");
    EXPECT_TRUE(qwen2.IsEndOfGeneration(151643));     // <|endoftext|> (EOS)
    EXPECT_TRUE(qwen2.IsEndOfGeneration(151645));     // <|im_end|>
    EXPECT_EQ(qwen2.eot_id(), 151645);
    EXPECT_FALSE(qwen2.IsEndOfGeneration(151644));    // <|im_start|>
    EXPECT_FALSE(qwen2.IsEndOfGeneration(9707));

    const Tokenizer spm = LoadVocab("llama-spm");
    EXPECT_TRUE(spm.IsEndOfGeneration(2));
    EXPECT_FALSE(spm.IsEndOfGeneration(1));
    const Tokenizer phi3 = LoadVocab("phi-3");
    EXPECT_TRUE(phi3.IsEndOfGeneration(32000));       // <|endoftext|> (EOS)
    EXPECT_TRUE(phi3.IsEndOfGeneration(32007));       // <|end|>
    EXPECT_FALSE(phi3.IsEndOfGeneration(32010));      // <|user|>
}

TEST(TokenizerVocab, EverySingleIdDecodesToItsBytes) {
    SKIP_WITHOUT_VOCABS();
    for (const char* name : {"llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "mpt", "starcoder"}) {
        SCOPED_TRACE(name);
        const Tokenizer tok = LoadVocab(name);
        std::string all;
        for (int32_t id = 0; id < tok.vocab_size(); ++id) {
            const std::string bytes = tok.TokenBytes(id);
            ASSERT_EQ(tok.Decode({id}), bytes) << id;
            if (tok.IsControl(id)) {
                ASSERT_EQ(bytes, "") << id;
            } else if (BytesToBpeText(bytes) != tok.Piece(id)) {
                // Only user-defined tokens are stored raw.
                ASSERT_EQ(bytes, tok.Piece(id)) << id;
            }
            all += bytes;
        }
        // Streaming over the whole vocabulary gives the same bytes wherever
        // they are valid UTF-8, and never anything invalid.
        StreamDecoder stream(tok);
        std::string streamed;
        for (int32_t id = 0; id < tok.vocab_size(); ++id) streamed += stream.Push(id);
        streamed += stream.Flush();
        ASSERT_TRUE(IsValidUtf8(streamed));
        std::vector<int32_t> every(tok.vocab_size());
        for (int32_t id = 0; id < tok.vocab_size(); ++id) every[id] = id;
        ASSERT_EQ(tok.Decode(every), all);
    }
}

TEST(TokenizerVocab, SplitUtf8SequencesStreamWhole) {
    SKIP_WITHOUT_VOCABS();
    const Tokenizer tok = LoadVocab("gpt-2");
    // GPT-2 has no piece for the llama emoji: its 4 bytes come out as byte
    // pieces, which stream as one code point once complete.
    const std::string text = "a \xF0\x9F\xA6\x99 b";
    const auto ids = *tok.Encode(text, false);
    StreamDecoder stream(tok);
    std::string streamed;
    int partial = 0;
    for (int32_t id : ids) {
        const std::string piece = stream.Push(id);
        partial += !IsValidUtf8(tok.TokenBytes(id));
        streamed += piece;
        ASSERT_TRUE(IsValidUtf8(piece));
    }
    streamed += stream.Flush();
    EXPECT_EQ(streamed, text);
    EXPECT_GT(partial, 0);
}

TEST(TokenizerVocab, RandomTextRoundTripsExactly) {
    SKIP_WITHOUT_VOCABS();
    const std::vector<std::string> alphabet = {"a", "Z", "7", " ", "  ", "\n", "\t", "'s", "'LL", "!", "~",
                                               "\xC3\xA9", "\xE4\xBD\xA0", "\xF0\x9F\xA6\x99", "\xE2\x80\x8D",
                                               "\xC2\xA0", "\xE3\x80\x80", "<|eot_id|>", "<|im_end|>", "   ", "[PAD151650]",
                                               "\xC3\xB6", "\xE2\x96\x81", "\r\n", "12345"};
    std::mt19937 rng(7);
    for (const char* name : {"llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "mpt", "starcoder"}) {
        SCOPED_TRACE(name);
        const Tokenizer tok = LoadVocab(name);
        for (int it = 0; it < 300; ++it) {
            std::string text;
            const int n = rng() % 24;
            for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
            for (bool special : {false, true}) {
                auto ids = tok.Encode(text, false, special);
                ASSERT_TRUE(ids.ok()) << ids.status();
                for (int32_t id : *ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size());
                if (!special) {
                    ASSERT_EQ(tok.Decode(*ids), text) << ::testing::PrintToString(text);
                }
            }
        }
    }
}

// How long the Llama 3 vocabulary takes to load and to encode 1 MB; printed
// for the record, with generous bounds so a slow machine does not fail.
TEST(TokenizerVocab, Llama3LoadAndEncodeSpeed) {
    SKIP_WITHOUT_VOCABS();
    using Clock = std::chrono::steady_clock;
    auto file = GgufFile::Open(VocabDir() + "/ggml-vocab-llama-bpe.gguf");
    ASSERT_TRUE(file.ok());
    const auto t0 = Clock::now();
    auto tok = Tokenizer::FromGguf(**file);
    const auto t1 = Clock::now();
    ASSERT_TRUE(tok.ok());
    std::string text;
    const std::string inp = ReadFile(VocabDir() + "/ggml-vocab-llama-bpe.gguf.inp");
    while (text.size() < (1u << 20)) text += inp;
    text.resize(1u << 20);
    while (!IsValidUtf8(text)) text.pop_back();
    const auto t2 = Clock::now();
    auto ids = tok->Encode(text, false);
    const auto t3 = Clock::now();
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(tok->Decode(*ids), text);
    const double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double encode_ms = std::chrono::duration<double, std::milli>(t3 - t2).count();
    std::printf("[ speed    ] llama-bpe: FromGguf %.0f ms (280147 merges); Encode 1 MiB %.0f ms (%zu tokens)\n",
                load_ms, encode_ms, ids->size());
    EXPECT_LT(load_ms, 20000);
    EXPECT_LT(encode_ms, 20000);
}

TEST(TokenizerVocab, SpmParseSpecial) {
    SKIP_WITHOUT_VOCABS();
    const Tokenizer spm = LoadVocab("llama-spm");
    // Default: "</s>" is text, exactly as before.
    const auto plain = *spm.Encode("Hi</s>", false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
    const auto special = *spm.Encode("Hi</s>", false, true);
    std::vector<int32_t> expected = *spm.Encode("Hi", false);
    expected.push_back(2);
    EXPECT_EQ(special, expected);
}

// ---- in-memory vocabularies -----------------------------------------------------------

using test::GgufBuilder;   // tests/gguf_builder.h

absl::StatusOr<Tokenizer> FromGgufBytes(const GgufBuilder& b) {
    auto file = GgufFile::FromBytes(b.Build());
    if (!file.ok()) return file.status();
    return Tokenizer::FromGguf(**file);
}

// The 256 byte pieces (ids 0..255, in byte order), then merged pieces.
std::vector<std::string> BytePieces() {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(BytesToBpeText(std::string(1, static_cast<char>(b))));
    return pieces;
}

GgufBuilder SmallBpe(const std::string& pre) {
    std::vector<std::string> pieces = BytePieces();
    const std::string G = BytesToBpeText(" ");   // "Ġ"
    for (const std::string& p : std::vector<std::string>{"he", "ll", "hell", "hello", G + "w", G + "wo", "<|end|>", "@@"}) pieces.push_back(p);
    std::vector<int32_t> types(pieces.size(), 1);
    types[262] = 3;   // <|end|>: control
    types[263] = 4;   // @@: user-defined, stored raw
    return GgufBuilder()
        .AddString("tokenizer.ggml.model", "gpt2")
        .AddString("tokenizer.ggml.pre", pre)
        .AddStringArray("tokenizer.ggml.tokens", pieces)
        .AddInt32Array("tokenizer.ggml.token_type", types)
        .AddStringArray("tokenizer.ggml.merges", {"h e", "l l", "he ll", "hell o", G + " w", G + "w o"})
        .AddUint32("tokenizer.ggml.eos_token_id", 262);
}

TEST(TokenizerBpe, UnknownPreTokenizerIsAnErrorNamingIt) {
    auto tok = FromGgufBytes(SmallBpe("no-such-pre"));
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(tok.status().message().find("'no-such-pre'"), std::string::npos) << tok.status();
    auto pre = PreTokenizer::ForName("llama4-typo");
    ASSERT_FALSE(pre.ok());
    EXPECT_NE(pre.status().message().find("llama4-typo"), std::string::npos);
}

TEST(TokenizerBpe, EveryKnownPreTokenizerCompiles) {
    const std::vector<std::string> names = PreTokenizer::KnownNames();
    for (const char* required : {"llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "deepseek-coder", "mpt", "starcoder",
                                 "falcon", "command-r", "refact", "smollm", "olmo", "dbrx", "stablelm2", "default"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
    }
    const std::string text = "Hello, y'all! 123456 \xE4\xBD\xA0\xE5\xA5\xBD  \n\n x\xC2\xA0y \xF0\x9F\xA6\x99";
    for (const std::string& name : names) {
        auto pre = PreTokenizer::ForName(name);
        ASSERT_TRUE(pre.ok()) << name << ": " << pre.status();
        std::vector<std::pair<size_t, size_t>> words;
        ASSERT_TRUE(pre->Split(text, &words).ok());
        size_t at = 0;   // the words tile the text
        for (const auto& [b, e] : words) {
            ASSERT_EQ(b, at) << name;
            ASSERT_GT(e, b) << name;
            at = e;
        }
        EXPECT_EQ(at, text.size()) << name;
    }
    auto missing = PreTokenizer::ForName("");
    ASSERT_TRUE(missing.ok());
    EXPECT_EQ(missing->name(), "default");
}

std::vector<std::string> Words(const std::string& pre_name, const std::string& text) {
    auto pre = PreTokenizer::ForName(pre_name);
    EXPECT_TRUE(pre.ok());
    std::vector<std::pair<size_t, size_t>> words;
    EXPECT_TRUE(pre->Split(text, &words).ok());
    std::vector<std::string> out;
    for (const auto& [b, e] : words) out.push_back(text.substr(b, e - b));
    return out;
}

TEST(TokenizerBpe, PreTokenizerSplits) {
    using V = std::vector<std::string>;
    EXPECT_EQ(Words("gpt-2", "Hello world's  end  "), (V{"Hello", " world", "'s", " ", " end", "  "}));
    EXPECT_EQ(Words("llama-bpe", "I'VE 1234567 ok!!\n\n  x"), (V{"I", "'VE", " ", "123", "456", "7", " ok", "!!\n\n", " ", " x"}));
    EXPECT_EQ(Words("qwen2", "ab 123"), (V{"ab", " ", "1", "2", "3"}));
    EXPECT_EQ(Words("starcoder", "x 42"), (V{"x", " ", "4", "2"}));
    // default: punctuation runs first, then GPT-2's expression, then digit
    // runs, then threes; each cuts only inside the pieces of the one before.
    EXPECT_EQ(Words("default", "a,b 12345"), (V{"a", ",", "b", " ", "123", "45"}));
    // llama.cpp's whitespace: NBSP is whitespace (and, unlike ' ', never the
    // optional prefix of a word), U+180E is not.
    EXPECT_EQ(Words("gpt-2", "a\xC2\xA0\xC2\xA0" "b"), (V{"a", "\xC2\xA0", "\xC2\xA0", "b"}));
    EXPECT_EQ(Words("gpt-2", "a \xE1\xA0\x8E"), (V{"a", " \xE1\xA0\x8E"}));
    // deepseek-llm: `\s+$` ends at the piece's end only, not before a final newline.
    EXPECT_EQ(Words("deepseek-llm", "ab  "), (V{"ab", "  "}));
    EXPECT_EQ(PreTokenizer::ToPcre2("\\s+(?!\\S)$"),
              "[\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
              "\\x{3000}]+(?![^\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
              "\\x{202F}\\x{205F}\\x{3000}])\\z");
}

TEST(TokenizerBpe, ByteMapping) {
    for (int b = 0; b < 256; ++b) {
        const std::string byte(1, static_cast<char>(b));
        const std::string text = BytesToBpeText(byte);
        ASSERT_TRUE(IsValidUtf8(text));
        ASSERT_EQ(BpeTextToBytes(text), byte);
    }
    EXPECT_EQ(BytesToBpeText(" "), "\xC4\xA0");   // Ġ
    EXPECT_EQ(BytesToBpeText("\n"), "\xC4\x8A");  // Ċ
    EXPECT_EQ(BytesToBpeText("a!"), "a!");
    EXPECT_EQ(BpeTextToBytes("\xE2\x96\x81"), "\xE2\x96\x81");   // no byte code point: kept
}

TEST(TokenizerBpe, SmallVocabulary) {
    auto tok = FromGgufBytes(SmallBpe("gpt-2"));
    ASSERT_TRUE(tok.ok()) << tok.status();
    EXPECT_EQ(tok->vocab_type(), "bpe");
    EXPECT_EQ(tok->pre_tokenizer(), "gpt-2");
    EXPECT_FALSE(tok->add_bos());
    EXPECT_EQ(tok->unk_id(), -1);
    EXPECT_EQ(tok->bos_id(), 11);    // llama.cpp's BPE default
    EXPECT_EQ(tok->eos_id(), 262);
    EXPECT_TRUE(tok->IsEndOfGeneration(262));
    EXPECT_EQ(tok->eot_id(), 262);   // "<|end|>" by text
    // "hello" -> he, ll -> hell -> hello; " wo" -> Ġw -> Ġwo; "x" a byte piece.
    EXPECT_EQ(*tok->Encode("hello wox", false), (std::vector<int32_t>{259, 261, 'x'}));
    EXPECT_EQ(tok->Decode({259, 261, 'x'}), "hello wox");
    // Token 11 is the default BOS id here but a normal piece: it still prints.
    EXPECT_EQ(tok->Decode({11}), BpeTextToBytes(tok->Piece(11)));
    // User-defined "@@" splits out always, control "<|end|>" only with parse_special.
    EXPECT_EQ(*tok->Encode("he@@ll", false), (std::vector<int32_t>{256, 263, 257}));
    const auto plain = *tok->Encode("he<|end|>", false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 262), 0);
    EXPECT_EQ(*tok->Encode("he<|end|>", false, true), (std::vector<int32_t>{256, 262}));
    EXPECT_EQ(tok->Decode({256, 262, 263}), "he@@");
    EXPECT_FALSE(tok->Encode("\xC3", false).ok());   // invalid UTF-8 refused, as for SPM
    EXPECT_TRUE(tok->Encode("", true)->empty());
}

TEST(TokenizerBpe, MergeRanksDecide) {
    // Lower rank first, leftmost on ties: "aaa" with only "a a" merges to
    // "aa" + "a"; with "aa a" too, to "aaa".
    std::vector<std::string> pieces = BytePieces();
    pieces.push_back("aa");
    pieces.push_back("aaa");
    auto make = [&](std::vector<std::string> merges) {
        return FromGgufBytes(GgufBuilder()
                                 .AddString("tokenizer.ggml.model", "gpt2")
                                 .AddString("tokenizer.ggml.pre", "gpt-2")
                                 .AddStringArray("tokenizer.ggml.tokens", pieces)
                                 .AddStringArray("tokenizer.ggml.merges", merges));
    };
    auto one = make({"a a"});
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(*one->Encode("aaa", false), (std::vector<int32_t>{256, 'a'}));
    auto two = make({"a a", "aa a"});
    EXPECT_EQ(*two->Encode("aaa", false), (std::vector<int32_t>{257}));
    // A merge whose result is no piece: its bytes' pieces stand in.
    auto orphan = make({"b c"});
    EXPECT_EQ(*orphan->Encode("bc", false), (std::vector<int32_t>{'b', 'c'}));
    // No merges key at all: refused.
    auto none = FromGgufBytes(GgufBuilder()
                                  .AddString("tokenizer.ggml.model", "gpt2")
                                  .AddStringArray("tokenizer.ggml.tokens", pieces));
    EXPECT_FALSE(none.ok());
}

}  // namespace
}  // namespace prepack
