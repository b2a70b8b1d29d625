// Tests for the SentencePiece-style tokenizer (byte-level BPE: tokenizer_bpe_test.cc).
//
// The fast encoder (priority queue over a linked list) is checked against an
// independent, deliberately naive port of llama2.c's O(n^2) encode loop on
// many random strings, and against llama2.c's own ids for the real
// stories260K vocabulary (reference.json).
#include "core/model/tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/model/gguf.h"
#include "tests/gguf_builder.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

const std::string kMarker = "\xE2\x96\x81";   // U+2581

std::string ModelDir() { return std::string(PREPACK_MODELS_DIR) + "/stories260K/"; }

bool ModelsPresent() { return std::filesystem::exists(ModelDir() + "tok512.bin"); }

#define SKIP_WITHOUT_MODELS()                                                          \
    if (!ModelsPresent())                                                              \
    GTEST_SKIP() << "stories260K not found under " << ModelDir()                      \
                 << " (set PREPACK_MODELS_DIR to the directory holding stories260K/)"

std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
    for (size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) {
        s.replace(i, from.size(), to);
    }
    return s;
}

// A vocabulary spelled out, for building a Tokenizer and for the oracle.
struct Vocab {
    std::vector<std::string> pieces;
    std::vector<float>       scores;
    std::vector<int32_t>     types;
    int32_t bos = 1, eos = 2, unk = 0;
};

Tokenizer Build(const Vocab& v) {
    auto tok = Tokenizer::FromPieces(v.pieces, v.scores, v.types, v.bos, v.eos, v.unk);
    EXPECT_TRUE(tok.ok()) << tok.status();
    return *std::move(tok);
}

// tok512.bin (llama2.c format) converted the way llama2c_to_gguf.py does.
Vocab LoadTok512() {
    const std::string data = ReadFile(ModelDir() + "tok512.bin");
    Vocab v;
    size_t off = 4;   // max_token_length
    for (int i = 0; i < 512; ++i) {
        float score;
        int32_t len;
        std::memcpy(&score, data.data() + off, 4);
        std::memcpy(&len, data.data() + off + 4, 4);
        std::string piece = data.substr(off + 8, len);
        off += 8 + len;
        TokenType type = TokenType::kNormal;
        if (i == 0) {
            piece = "<unk>", type = TokenType::kUnknown;
        } else if (i <= 2) {
            piece = i == 1 ? "<s>" : "</s>", type = TokenType::kControl;
        } else if (i <= 258) {
            type = TokenType::kByte;
        } else {
            piece = Replace(piece, " ", kMarker);   // llama2.c exported U+2581 as ' '
        }
        v.pieces.push_back(piece);
        v.scores.push_back(type == TokenType::kNormal ? score : 0.0f);
        v.types.push_back(static_cast<int32_t>(type));
    }
    EXPECT_EQ(off, data.size());
    return v;
}

// The synthetic vocabulary as the oracle sees it: the contract says normal
// pieces come with strictly decreasing scores, so -id ranks them correctly.
Vocab VocabOf(const Tokenizer& tok) {
    Vocab v;
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
        const std::string& p = tok.Piece(id);
        v.pieces.push_back(p);
        const bool special = id == tok.bos_id() || id == tok.eos_id() || id == tok.unk_id();
        const bool byte = p.size() == 6 && p.rfind("<0x", 0) == 0;
        v.types.push_back(static_cast<int32_t>(
            special ? (id == tok.unk_id() ? TokenType::kUnknown : TokenType::kControl)
                    : byte ? TokenType::kByte : TokenType::kNormal));
        v.scores.push_back(special || byte ? 0.0f : -static_cast<float>(id));
    }
    return v;
}

// ---- the oracle: llama2.c's encode, written as plainly as possible ---------

size_t Utf8Length(unsigned char lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

class NaiveEncoder {
public:
    explicit NaiveEncoder(const Vocab& v) : v_(v) {
        for (size_t i = 0; i < v.pieces.size(); ++i) {
            const auto t = static_cast<TokenType>(v.types[i]);
            if (t == TokenType::kNormal || t == TokenType::kUserDefined) text_ids_[v.pieces[i]] = i;
            if (t == TokenType::kByte) byte_ids_[v.pieces[i]] = i;
        }
    }

    std::vector<int32_t> Encode(const std::string& text, bool bos) const {
        std::vector<int32_t> ids;
        if (bos) ids.push_back(v_.bos);
        if (text.empty()) return ids;
        std::vector<int32_t> toks = CodePoints(kMarker + Replace(text, " ", kMarker));
        // Each round: the best-scoring adjacent pair, the first one on ties.
        while (true) {
            int best = -1;
            float best_score = 0;
            int32_t best_id = -1;
            for (size_t i = 0; i + 1 < toks.size(); ++i) {
                const auto it = text_ids_.find(v_.pieces[toks[i]] + v_.pieces[toks[i + 1]]);
                if (it != text_ids_.end() && (best < 0 || v_.scores[it->second] > best_score)) {
                    best = static_cast<int>(i);
                    best_score = v_.scores[it->second];
                    best_id = it->second;
                }
            }
            if (best < 0) break;
            toks[best] = best_id;
            toks.erase(toks.begin() + best + 1);
        }
        ids.insert(ids.end(), toks.begin(), toks.end());
        return ids;
    }

private:
    std::vector<int32_t> CodePoints(const std::string& norm) const {
        std::vector<int32_t> toks;
        for (size_t i = 0; i < norm.size();) {
            const size_t n = Utf8Length(norm[i]);
            const auto it = text_ids_.find(norm.substr(i, n));
            if (it != text_ids_.end()) {
                toks.push_back(it->second);
            } else {
                for (size_t k = 0; k < n; ++k) {
                    char name[8];
                    std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(norm[i + k]));
                    const auto b = byte_ids_.find(name);
                    toks.push_back(b != byte_ids_.end() ? b->second : v_.unk);
                }
            }
            i += n;
        }
        return toks;
    }

    const Vocab& v_;
    std::map<std::string, int32_t> text_ids_, byte_ids_;
};

std::vector<int32_t> NaiveEncode(const Vocab& v, const std::string& text, bool bos) {
    return NaiveEncoder(v).Encode(text, bos);
}

// ---- random text --------------------------------------------------------------

// Valid UTF-8 (without U+2581, which SentencePiece cannot round-trip) mixing
// words the vocabularies know with characters that force byte fallback.
std::string RandomText(std::mt19937& rng, size_t max_parts) {
    static const std::vector<std::string> kParts = {
        "the", "Tom", "and", "Once", "upon", "a", "time", "ball", "Lily", "play", "dog",
        "he", "was", "ing", "ed", "x", "q", "Z", ".", ",", "!", "\"", "'", "?", "0", "42",
        " ", " ", " ", "  ", "   ", "\n", "\n\n", "\t", "\r",
        "\xC3\xA9",             // é
        "\xC3\xBC",             // ü
        "\xC3\xA2",             // â (a tok512 piece)
        "\xE2\x82\xAC",         // € (a tok512 piece)
        "\xE2\x84\xA2",         // ™ (a tok512 piece)
        "\xE2\x80\x8A",         // hair space (a tok512 piece)
        "\xC2\xA0",             // no-break space
        "\xE4\xB8\xAD\xE6\x96\x87",   // 中文
        "\xF0\x9F\x98\x80",     // 😀
        "\xF0\x9F\xA6\x99",     // 🦙
        "\xF4\x8F\xBF\xBF",     // U+10FFFF
        "\xEF\xBF\xBD",         // U+FFFD
        "<0x41>", "<s>", "</s>", "<unk>",   // must stay literal text
    };
    std::uniform_int_distribution<size_t> n_parts(0, max_parts), pick(0, kParts.size() - 1);
    std::uniform_int_distribution<int> ascii(1, 127);
    std::string s;
    const size_t n = n_parts(rng);
    for (size_t i = 0; i < n; ++i) {
        if (rng() % 8 == 0) {
            s += static_cast<char>(ascii(rng));   // any ASCII, controls included
        } else {
            s += kParts[pick(rng)];
        }
    }
    return s;
}

// What the encoder saw: the pieces of the ids with byte tokens as raw bytes.
std::string Spelled(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) {
        const std::string& p = tok.Piece(id);
        s += (p.size() == 6 && p.rfind("<0x", 0) == 0) ? tok.TokenBytes(id) : p;
    }
    return s;
}

std::string StreamAll(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    StreamDecoder dec(tok);
    std::string out;
    for (int32_t id : ids) out += dec.Push(id);
    return out + dec.Flush();
}

// Random strings through encode (vs. the oracle), decode and stream decode.
void CheckRandomRoundTrips(const Vocab& vocab, uint32_t seed, int iterations, size_t max_parts) {
    const Tokenizer tok = Build(vocab);
    const NaiveEncoder oracle(vocab);
    std::mt19937 rng(seed);
    for (int it = 0; it < iterations; ++it) {
        const std::string s = RandomText(rng, max_parts);
        const bool bos = it % 3 != 0;
        auto ids = tok.Encode(s, bos);
        ASSERT_TRUE(ids.ok()) << ids.status();
        ASSERT_EQ(*ids, oracle.Encode(s, bos)) << "text: '" << s << "'";
        ASSERT_EQ(testing::DecodeAsText(tok, *ids), s) << "text: '" << s << "'";
        // Without a BOS the ids keep the dummy-prefix space (exact bytes).
        const std::string exact = bos || s.empty() ? s : " " + s;
        ASSERT_EQ(tok.Decode(*ids), exact) << "text: '" << s << "'";
        ASSERT_EQ(StreamAll(tok, *ids), exact) << "text: '" << s << "'";
        const std::vector<int32_t> body(ids->begin() + (bos ? 1 : 0), ids->end());
        if (!s.empty()) {
            ASSERT_EQ(Spelled(tok, body), kMarker + Replace(s, " ", kMarker));
        }
    }
}

// ---- stories260K: llama2.c's own ids --------------------------------------------

TEST(Tokenizer, Stories260KMatchesLlama2cPromptIds) {
    SKIP_WITHOUT_MODELS();
    const Tokenizer tok = Build(LoadTok512());
    const auto ref = nlohmann::json::parse(ReadFile(ModelDir() + "reference.json"));
    ASSERT_GE(ref["cases"].size(), 2u);
    for (const auto& c : ref["cases"]) {
        const std::string prompt = c["prompt"];
        const auto expected = c["prompt_ids"].get<std::vector<int32_t>>();
        auto ids = tok.Encode(prompt, true);
        ASSERT_TRUE(ids.ok()) << ids.status();
        EXPECT_EQ(*ids, expected) << c["name"];
        EXPECT_EQ(tok.Decode(*ids), prompt);
    }
}

TEST(Tokenizer, Stories260KPromptIdsSpotCheck) {
    SKIP_WITHOUT_MODELS();
    const Tokenizer tok = Build(LoadTok512());
    EXPECT_EQ(*tok.Encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
}

TEST(Tokenizer, Stories260KGreedyTextDecodes) {
    SKIP_WITHOUT_MODELS();
    const Tokenizer tok = Build(LoadTok512());
    const auto ref = nlohmann::json::parse(ReadFile(ModelDir() + "reference.json"));
    for (const auto& c : ref["cases"]) {
        const std::string prompt = c["prompt"], greedy_text = c["greedy_text"];
        auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
        const auto greedy = c["greedy_ids"].get<std::vector<int32_t>>();

        // A streaming client primed with the prompt prints exactly the continuation.
        StreamDecoder dec(tok);
        for (int32_t id : ids) dec.Push(id);
        std::string streamed;
        for (int32_t id : greedy) streamed += dec.Push(id);
        streamed += dec.Flush();
        EXPECT_EQ(streamed, greedy_text) << c["name"];

        // The robust property: decoding prompt and continuation together.
        ids.insert(ids.end(), greedy.begin(), greedy.end());
        EXPECT_EQ(tok.Decode(ids), prompt + greedy_text) << c["name"];
    }
}

TEST(Tokenizer, Stories260KMatchesOracleOnRandomText) {
    SKIP_WITHOUT_MODELS();
    CheckRandomRoundTrips(LoadTok512(), 1234, 3000, 40);
}

TEST(Tokenizer, Stories260KMatchesOracleOnLongText) {
    SKIP_WITHOUT_MODELS();
    const Vocab vocab = LoadTok512();
    const Tokenizer tok = Build(vocab);
    std::mt19937 rng(99);
    std::string s;
    while (s.size() < 3000) s += RandomText(rng, 50);
    auto ids = tok.Encode(s, true);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, NaiveEncode(vocab, s, true));
    EXPECT_EQ(tok.Decode(*ids), s);
}

TEST(Tokenizer, Stories260KFromGguf) {
    SKIP_WITHOUT_MODELS();
    auto file = GgufFile::Open(ModelDir() + "stories260K.gguf");
    ASSERT_TRUE(file.ok()) << file.status();
    auto tok = Tokenizer::FromGguf(**file);
    ASSERT_TRUE(tok.ok()) << tok.status();
    const Vocab vocab = LoadTok512();
    ASSERT_EQ(tok->vocab_size(), 512);
    for (int32_t id = 0; id < 512; ++id) EXPECT_EQ(tok->Piece(id), vocab.pieces[id]) << id;
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->unk_id(), 0);
    EXPECT_TRUE(tok->add_bos());
    EXPECT_TRUE(tok->IsControl(1));
    EXPECT_TRUE(tok->IsControl(2));
    const auto ref = nlohmann::json::parse(ReadFile(ModelDir() + "reference.json"));
    for (const auto& c : ref["cases"]) {
        auto ids = tok->Encode(c["prompt"].get<std::string>(), true);
        ASSERT_TRUE(ids.ok());
        EXPECT_EQ(*ids, c["prompt_ids"].get<std::vector<int32_t>>());
    }
}

// ---- synthetic vocabularies ---------------------------------------------------

TEST(Tokenizer, SyntheticRejectsTooSmall) {
    for (int n : {-1, 0, 258, 259}) {
        auto tok = Tokenizer::Synthetic(n);
        ASSERT_FALSE(tok.ok()) << n;
        EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
    }
}

TEST(Tokenizer, SyntheticLayout) {
    for (int n : {260, 261, 512, 32000, 200000}) {
        auto tok = Tokenizer::Synthetic(n);   // Assemble rejects duplicate pieces
        ASSERT_TRUE(tok.ok()) << n << ": " << tok.status();
        ASSERT_EQ(tok->vocab_size(), n);
        EXPECT_EQ(tok->Piece(0), "<unk>");
        EXPECT_EQ(tok->Piece(1), "<s>");
        EXPECT_EQ(tok->Piece(2), "</s>");
        EXPECT_EQ(tok->Piece(3), "<0x00>");
        EXPECT_EQ(tok->Piece(3 + 0xAB), "<0xAB>");
        EXPECT_EQ(tok->Piece(258), "<0xFF>");
        EXPECT_EQ(tok->Piece(259), kMarker);
        EXPECT_EQ(tok->bos_id(), 1);
        EXPECT_EQ(tok->eos_id(), 2);
        EXPECT_EQ(tok->unk_id(), 0);
        EXPECT_TRUE(tok->IsControl(1));
        EXPECT_FALSE(tok->IsControl(0));
        EXPECT_FALSE(tok->IsControl(259));
        EXPECT_EQ(tok->TokenBytes(3 + 'A'), "A");
    }
}

TEST(Tokenizer, SyntheticIsDeterministic) {
    auto a = Tokenizer::Synthetic(32000), b = Tokenizer::Synthetic(32000);
    auto small = Tokenizer::Synthetic(512);
    ASSERT_TRUE(a.ok() && b.ok() && small.ok());
    for (int32_t id = 0; id < 32000; ++id) ASSERT_EQ(a->Piece(id), b->Piece(id));
    // A smaller vocabulary is a prefix of a larger one.
    for (int32_t id = 0; id < 512; ++id) ASSERT_EQ(a->Piece(id), small->Piece(id));
}

TEST(Tokenizer, SyntheticMergesWords) {
    auto tok = Tokenizer::Synthetic(32000);
    ASSERT_TRUE(tok.ok());
    auto ids = tok->Encode("the cat", true);
    ASSERT_TRUE(ids.ok());
    // "▁the" and "▁cat" are both pieces, so two tokens after BOS.
    EXPECT_EQ(ids->size(), 3u);
    EXPECT_EQ(tok->Decode(*ids), "the cat");
}

TEST(Tokenizer, SyntheticMatchesOracle) {
    for (int n : {260, 512, 32000}) {
        SCOPED_TRACE(n);
        auto tok = Tokenizer::Synthetic(n);
        ASSERT_TRUE(tok.ok());
        CheckRandomRoundTrips(VocabOf(*tok), 7 + n, 2000, 30);
    }
}

TEST(Tokenizer, LongInputIsFast) {
    // Quadratic merging would take minutes here; the queue takes milliseconds.
    auto tok = Tokenizer::Synthetic(32000);
    ASSERT_TRUE(tok.ok());
    std::mt19937 rng(5);
    std::string s;
    while (s.size() < 300000) s += RandomText(rng, 50);
    auto ids = tok->Encode(s, true);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(tok->Decode(*ids), s);
}

// ---- merge order ------------------------------------------------------------

// Every string over {a, b, ▁} up to length 4 as a piece, with scores from a
// tiny set so ties are everywhere: the leftmost-on-ties rule is exercised.
Vocab TieHeavyVocab(uint32_t seed) {
    Vocab v;
    v.pieces = {"<unk>", "<s>", "</s>"};
    v.types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        v.pieces.push_back(name);
        v.types.push_back(6);
    }
    v.scores.assign(v.pieces.size(), 0.0f);
    std::mt19937 rng(seed);
    std::vector<std::string> level = {""};
    for (int len = 1; len <= 4; ++len) {
        std::vector<std::string> next;
        for (const auto& s : level) {
            for (const std::string& c : std::vector<std::string>{"a", "b", kMarker}) next.push_back(s + c);
        }
        for (const auto& s : next) {
            if (len > 1 && rng() % 3 == 0) continue;   // leave gaps so merges get stuck
            v.pieces.push_back(s);
            v.types.push_back(1);
            v.scores.push_back(static_cast<float>(static_cast<int>(rng() % 3)) - 1.0f);
        }
        level = next;
    }
    return v;
}

TEST(Tokenizer, TiesMergeLeftmostLikeOracle) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
        const Vocab v = TieHeavyVocab(seed);
        const Tokenizer tok = Build(v);
        const NaiveEncoder oracle(v);
        std::mt19937 rng(seed);
        for (int it = 0; it < 300; ++it) {
            std::string s;
            const size_t n = rng() % 30;
            for (size_t i = 0; i < n; ++i) s += "ab "[rng() % 3];
            auto ids = tok.Encode(s, false);
            ASSERT_TRUE(ids.ok());
            ASSERT_EQ(*ids, oracle.Encode(s, false)) << "seed " << seed << " text '" << s << "'";
            ASSERT_EQ(testing::DecodeAsText(tok, *ids), s);
        }
    }
}

TEST(Tokenizer, EqualScoresMergeLeftmostPair) {
    // "aaa": both "a"+"a" pairs score the same; llama2.c merges the left one.
    Vocab v{{"<unk>", "<s>", "</s>", kMarker, "a", "aa"}, {0, 0, 0, 0, 0, -1}, {2, 3, 3, 1, 1, 1}};
    const Tokenizer tok = Build(v);
    EXPECT_EQ(*tok.Encode("aaa", false), (std::vector<int32_t>{3, 5, 4}));
}

// ---- spaces, decoding and the dummy prefix ---------------------------------------

TEST(Tokenizer, LeadingSpacesSurvive) {
    auto tok = Tokenizer::Synthetic(32000);
    ASSERT_TRUE(tok.ok());
    for (const std::string s : {" hi", "  hi", "hi ", " ", "  ", "\n hi", " \n", "a  b"}) {
        auto ids = tok->Encode(s, true);
        ASSERT_TRUE(ids.ok());
        EXPECT_EQ(Spelled(*tok, std::vector<int32_t>(ids->begin() + 1, ids->end())),
                  kMarker + Replace(s, " ", kMarker)) << "'" << s << "'";
        EXPECT_EQ(tok->Decode(*ids), s) << "'" << s << "'";
        auto no_bos = tok->Encode(s, false);
        EXPECT_EQ(tok->Decode(*no_bos), " " + s) << "'" << s << "': without a BOS the dummy prefix stays";
        EXPECT_EQ(testing::DecodeAsText(*tok, *no_bos), s) << "'" << s << "'";
    }
}

TEST(Tokenizer, EmptyText) {
    auto tok = Tokenizer::Synthetic(512);
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(*tok->Encode("", true), (std::vector<int32_t>{1}));
    EXPECT_TRUE(tok->Encode("", false)->empty());
    EXPECT_EQ(tok->Decode({}), "");
}

TEST(Tokenizer, RejectsInvalidUtf8) {
    auto tok = Tokenizer::Synthetic(512);
    ASSERT_TRUE(tok.ok());
    for (const std::string s : {"\xFF", "ab\xC3", "\xC0\x80", "\xED\xA0\x80", "x\x80y"}) {
        auto ids = tok->Encode(s, true);
        ASSERT_FALSE(ids.ok());
        EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
    }
}

TEST(Tokenizer, TokenBytesAndDecode) {
    Vocab v{{"<unk>", "<s>", "</s>", "<0x41>", "<0xE2>", kMarker + "the", kMarker, "a" + kMarker + "b",
             "x", "<pad>", "<|user|>"},
            {}, {2, 3, 3, 6, 6, 1, 1, 1, 1, 5, 4}};
    const Tokenizer tok = Build(v);
    EXPECT_EQ(tok.TokenBytes(3), "A");
    EXPECT_EQ(tok.TokenBytes(4), "\xE2");
    EXPECT_EQ(tok.TokenBytes(5), " the");
    EXPECT_EQ(tok.TokenBytes(5, /*after_bos=*/true), "the");
    EXPECT_EQ(tok.TokenBytes(7), "a b");
    EXPECT_EQ(tok.TokenBytes(0), "");    // unknown
    EXPECT_EQ(tok.TokenBytes(1), "");    // control
    EXPECT_EQ(tok.TokenBytes(9), "");    // unused
    EXPECT_EQ(tok.TokenBytes(10), "<|user|>");   // user-defined is text
    EXPECT_EQ(tok.TokenBytes(-1), "");
    EXPECT_EQ(tok.TokenBytes(11), "");

    EXPECT_EQ(tok.Decode({1, 5, 5}), "the the");        // only the first space drops
    EXPECT_EQ(tok.Decode({5, 5}), " the the");          // not at the very start: a completion's ids keep it
    EXPECT_EQ(tok.Decode({1, 5, 2, 1, 5}), "thethe");   // and after every BOS
    EXPECT_EQ(tok.Decode({1, 6, 5}), " the");           // a lone "▁" is the dropped prefix
    EXPECT_EQ(tok.Decode({1, 3, 5}), "A the");          // byte tokens are not a prefix
    EXPECT_EQ(tok.Decode({1, 0, 9, 8, 5}), "x the");    // silent tokens do not end the start
    EXPECT_EQ(tok.Decode({-5, 1, 100, 8}), "x");        // out of range: nothing
}

TEST(Tokenizer, NoSpacePrefixKeepsSpaces) {
    // FromPieces always uses a dummy prefix; GGUF can switch it off (see the
    // GGUF metadata tests below), so here only TokenBytes' default is checked.
    auto tok = Tokenizer::Synthetic(512);
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(tok->TokenBytes(259), " ");
    EXPECT_EQ(tok->TokenBytes(259, true), "");
}

TEST(Tokenizer, LiteralSpecialSpellingsStayText) {
    // Encoding never produces a byte or control token from text that spells one.
    // Here llama2.c would merge "<s"+">" into BOS and "<0x4"+"1>" into a byte token.
    Vocab v{{"<unk>", "<s>", "</s>", "<0x41>", kMarker, "<", ">", "s", "<s", "<0", "<0x", "<0x4", "1>",
             "0", "x", "4", "1"},
            {}, {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
    const Tokenizer tok = Build(v);
    for (const std::string s : {"<s>", "<0x41>"}) {
        auto ids = tok.Encode(s, false);
        ASSERT_TRUE(ids.ok());
        for (int32_t id : *ids) EXPECT_TRUE(id != 1 && id != 3) << s;
        EXPECT_EQ(testing::DecodeAsText(tok, *ids), s);
    }
}

TEST(Tokenizer, MissingByteTokensFallBackToUnknown) {
    Vocab v{{"<unk>", "<s>", "</s>", kMarker, "a"}, {}, {2, 3, 3, 1, 1}};
    const Tokenizer tok = Build(v);
    EXPECT_EQ(*tok.Encode("a\xC3\xA9", false), (std::vector<int32_t>{3, 4, 0, 0}));
}

// ---- construction errors ---------------------------------------------------------

void ExpectInvalid(const absl::StatusOr<Tokenizer>& tok, const std::string& needle) {
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument) << tok.status();
    EXPECT_NE(tok.status().message().find(needle), std::string::npos) << tok.status();
}

TEST(Tokenizer, FromPiecesValidates) {
    const std::vector<std::string> p = {"<unk>", "<s>", "</s>", "a", "b"};
    ExpectInvalid(Tokenizer::FromPieces({}, {}, {}, 0, 0, 0), "empty");
    ExpectInvalid(Tokenizer::FromPieces({"<unk>", "<s>", "</s>", "a", "a"}, {}, {}, 1, 2, 0), "ids 3 and 4");
    ExpectInvalid(Tokenizer::FromPieces(p, {0, 0}, {}, 1, 2, 0), "scores");
    ExpectInvalid(Tokenizer::FromPieces(p, {}, {1, 1}, 1, 2, 0), "types");
    ExpectInvalid(Tokenizer::FromPieces(p, {}, {}, 5, 2, 0), "BOS");
    ExpectInvalid(Tokenizer::FromPieces(p, {}, {}, 1, -1, 0), "EOS");
    ExpectInvalid(Tokenizer::FromPieces(p, {}, {}, 1, 2, 9), "unknown");
    ExpectInvalid(Tokenizer::FromPieces(p, {}, {2, 3, 3, 1, 7}, 1, 2, 0), "type 7");
    ExpectInvalid(Tokenizer::FromPieces(p, {}, {2, 3, 3, 6, 1}, 1, 2, 0), "byte token 3");
    ExpectInvalid(Tokenizer::FromPieces(p, {0, 0, 0, NAN, 0}, {}, 1, 2, 0), "NaN");
}

TEST(Tokenizer, SpmKindAndEndOfGeneration) {
    auto tok = Tokenizer::Synthetic(512);
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(tok->vocab_type(), "spm");
    EXPECT_EQ(tok->pre_tokenizer(), "");
    EXPECT_TRUE(tok->IsEndOfGeneration(2));    // EOS
    EXPECT_FALSE(tok->IsEndOfGeneration(1));   // BOS
    EXPECT_FALSE(tok->IsEndOfGeneration(300));
    EXPECT_EQ(tok->eot_id(), -1);
    // parse_special off is the default and the old behaviour; on, "</s>" is EOS.
    EXPECT_EQ(*tok->Encode("a</s>", true), *tok->Encode("a</s>", true, false));
    const auto special = *tok->Encode("a</s>", true, true);
    EXPECT_EQ(special.back(), 2);
    EXPECT_EQ(std::vector<int32_t>(special.begin(), special.end() - 1), *tok->Encode("a", true));
}

TEST(Tokenizer, FromPiecesInfersTypes) {
    auto tok = Tokenizer::FromPieces({"<unk>", "<s>", "</s>", "<0x41>", kMarker, "b"}, {}, {}, 1, 2, 0);
    ASSERT_TRUE(tok.ok()) << tok.status();
    EXPECT_TRUE(tok->IsControl(1));
    EXPECT_TRUE(tok->IsControl(2));
    EXPECT_EQ(tok->TokenBytes(0), "");
    EXPECT_EQ(tok->TokenBytes(3), "A");
    EXPECT_EQ(*tok->Encode("bA", true), (std::vector<int32_t>{1, 4, 5, 3}));
    EXPECT_EQ(tok->Decode(*tok->Encode("bA", true)), "bA");
}

// ---- streaming -----------------------------------------------------------------

TEST(StreamDecoder, HoldsBackSplitCodePoints) {
    auto tok = Tokenizer::Synthetic(512);
    ASSERT_TRUE(tok.ok());
    StreamDecoder dec(*tok);
    auto byte = [](unsigned char b) { return 3 + b; };
    EXPECT_EQ(dec.Push(1), "");
    EXPECT_EQ(dec.Push(byte(0xF0)), "");
    EXPECT_EQ(dec.Push(byte(0x9F)), "");
    EXPECT_EQ(dec.Push(byte(0xA6)), "");
    EXPECT_EQ(dec.Push(byte(0x99)), "\xF0\x9F\xA6\x99");
    EXPECT_EQ(dec.Push(byte(0xC3)), "");
    EXPECT_EQ(dec.Flush(), "\xEF\xBF\xBD");   // the é never completed
    EXPECT_EQ(dec.Flush(), "");
}

TEST(StreamDecoder, ReplacesInvalidBytes) {
    auto tok = Tokenizer::Synthetic(512);
    ASSERT_TRUE(tok.ok());
    auto byte = [](unsigned char b) { return 3 + b; };
    StreamDecoder dec(*tok);
    EXPECT_EQ(dec.Push(byte(0x80)), "\xEF\xBF\xBD");            // stray continuation
    EXPECT_EQ(dec.Push(byte(0xE2)), "");
    EXPECT_EQ(dec.Push(byte('a')), "\xEF\xBF\xBD" "a");          // interrupted sequence
    EXPECT_EQ(dec.Push(byte(0xC0)), "\xEF\xBF\xBD");            // never valid
    EXPECT_EQ(dec.Push(byte(0xED)), "");
    EXPECT_EQ(dec.Push(byte(0xA0)), "\xEF\xBF\xBD\xEF\xBF\xBD");   // surrogate
    EXPECT_EQ(dec.Flush(), "");
}

TEST(StreamDecoder, RandomIdsGiveValidUtf8MatchingDecode) {
    auto tok = Tokenizer::Synthetic(512);
    ASSERT_TRUE(tok.ok());
    std::mt19937 rng(11);
    int valid = 0;
    for (int it = 0; it < 3000; ++it) {
        std::vector<int32_t> ids;
        const int n = rng() % 12;
        for (int i = 0; i < n; ++i) {
            // Mostly high bytes (UTF-8 fragments), some text and special ids.
            const int kind = rng() % 4;
            ids.push_back(kind == 0 ? static_cast<int32_t>(rng() % 520) - 4
                                    : 3 + 0x80 + static_cast<int32_t>(rng() % 0x80));
        }
        const std::string streamed = StreamAll(*tok, ids), decoded = tok->Decode(ids);
        ASSERT_TRUE(IsValidUtf8(streamed));
        if (IsValidUtf8(decoded)) {
            ++valid;
            ASSERT_EQ(streamed, decoded);
        }
    }
    EXPECT_GT(valid, 100);
}

// ---- UTF-8 validation ------------------------------------------------------------

TEST(IsValidUtf8, Table) {
    const std::vector<std::string> good = {
        "", "a", "\x7F", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
        "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "h\xC3\xA9llo \xF0\x9F\x98\x80",
        std::string("a\0b", 3),
    };
    const std::vector<std::string> bad = {
        "\x80", "\xBF", "\xC0\x80", "\xC1\xBF",            // stray continuation, overlong 2-byte
        "\xE0\x80\x80", "\xE0\x9F\xBF",                    // overlong 3-byte
        "\xF0\x80\x80\x80", "\xF0\x8F\xBF\xBF",            // overlong 4-byte
        "\xED\xA0\x80", "\xED\xBF\xBF",                    // surrogates
        "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF",    // above U+10FFFF
        "\xC3", "\xE2\x82", "\xF0\x9F\x98", "a\xC3",       // truncated
        "\xC3\x28", "\xE2\x28\xA1", "\xF0\x9F\x98\x28",    // bad continuation
    };
    for (const auto& s : good) EXPECT_TRUE(IsValidUtf8(s)) << ::testing::PrintToString(s);
    for (const auto& s : bad) EXPECT_FALSE(IsValidUtf8(s)) << ::testing::PrintToString(s);
}

// Independent check: decode arithmetically, then reject by value ranges.
bool OracleValidUtf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n;
        uint32_t cp;
        if (c < 0x80) { n = 1; cp = c; }
        else if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
        else return false;
        if (i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = cp << 6 | (d & 0x3F);
        }
        static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

TEST(IsValidUtf8, AgreesWithArithmeticDecoder) {
    std::mt19937 rng(3);
    const std::vector<unsigned char> interesting = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                                    0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF,
                                                    0xF0, 0xF4, 0xF5, 0xFF};
    int valid = 0;
    for (int it = 0; it < 200000; ++it) {
        std::string s;
        const int n = rng() % 6;
        for (int i = 0; i < n; ++i) {
            s += static_cast<char>(rng() % 2 ? interesting[rng() % interesting.size()] : rng() % 256);
        }
        const bool expected = OracleValidUtf8(s);
        valid += expected;
        ASSERT_EQ(IsValidUtf8(s), expected) << ::testing::PrintToString(s);
    }
    EXPECT_GT(valid, 1000);
}

// ---- FromGguf over in-memory files -------------------------------------------------

using test::GgufBuilder;   // tests/gguf_builder.h

const std::vector<std::string> kSmallPieces = {"<unk>", "<s>", "</s>", "<0x41>", kMarker, "h", "i",
                                               "hi", kMarker + "hi"};

absl::StatusOr<Tokenizer> FromGgufBytes(const GgufBuilder& b) {
    auto file = GgufFile::FromBytes(b.Build());
    if (!file.ok()) return file.status();
    return Tokenizer::FromGguf(**file);
}

TEST(TokenizerGguf, MinimalMetadataUsesDefaults) {
    auto tok = FromGgufBytes(GgufBuilder().AddString("tokenizer.ggml.model", "llama")
                                 .AddStringArray("tokenizer.ggml.tokens", kSmallPieces));
    ASSERT_TRUE(tok.ok()) << tok.status();
    EXPECT_EQ(tok->vocab_size(), 9);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->unk_id(), 0);
    EXPECT_TRUE(tok->add_bos());
    EXPECT_TRUE(tok->IsControl(1));
    // All scores zero: the leftmost pair merges first, "▁h" is no piece, so
    // "h"+"i" merges, then "▁"+"hi".
    EXPECT_EQ(*tok->Encode("hi", true), (std::vector<int32_t>{1, 8}));
    EXPECT_EQ(tok->Decode({1, 8}), "hi");
}

TEST(TokenizerGguf, ReadsAllFields) {
    auto tok = FromGgufBytes(GgufBuilder()
                                 .AddString("tokenizer.ggml.model", "llama")
                                 .AddStringArray("tokenizer.ggml.tokens", kSmallPieces)
                                 .AddFloat32Array("tokenizer.ggml.scores", {0, 0, 0, 0, -1, -2, -3, -4, -5})
                                 .AddInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1, 1})
                                 .AddUint32("tokenizer.ggml.bos_token_id", 2)
                                 .AddUint32("tokenizer.ggml.eos_token_id", 1)
                                 .AddUint32("tokenizer.ggml.unknown_token_id", 0)
                                 .AddBool("tokenizer.ggml.add_bos_token", false)
                                 .AddBool("tokenizer.ggml.add_space_prefix", false));
    ASSERT_TRUE(tok.ok()) << tok.status();
    EXPECT_EQ(tok->bos_id(), 2);
    EXPECT_EQ(tok->eos_id(), 1);
    EXPECT_FALSE(tok->add_bos());
    // add_bos_token = false is honoured (llama.cpp): add_special adds no BOS.
    // No dummy prefix: "hi" is just "hi", and a leading "▁" is not dropped.
    EXPECT_EQ(*tok->Encode("hi", true), (std::vector<int32_t>{7}));
    EXPECT_TRUE(tok->Encode("", true)->empty()) << "an empty text has no BOS to start from";
    EXPECT_EQ(tok->Decode({2, 8}), " hi");
    EXPECT_EQ(tok->Decode(*tok->Encode(" hi A", false)), " hi A");
}

TEST(TokenizerGguf, RejectsBadMetadata) {
    auto base = [] {
        return GgufBuilder().AddString("tokenizer.ggml.model", "llama").AddStringArray("tokenizer.ggml.tokens", kSmallPieces);
    };
    ExpectInvalid(FromGgufBytes(GgufBuilder().AddString("tokenizer.ggml.model", "rwkv")
                                    .AddStringArray("tokenizer.ggml.tokens", kSmallPieces)),
                  "unsupported tokenizer model 'rwkv'");
    // gpt2 (byte-level BPE, tokenizer_bpe_test.cc) needs its merges.
    ExpectInvalid(FromGgufBytes(GgufBuilder().AddString("tokenizer.ggml.model", "gpt2")
                                    .AddStringArray("tokenizer.ggml.tokens", kSmallPieces)),
                  "merges");
    ExpectInvalid(FromGgufBytes(base().AddFloat32Array("tokenizer.ggml.scores", {0, 0})), "scores");
    ExpectInvalid(FromGgufBytes(base().AddInt32Array("tokenizer.ggml.token_type", {1})), "types");
    ExpectInvalid(FromGgufBytes(base().AddUint32("tokenizer.ggml.bos_token_id", 9)), "BOS");
    ExpectInvalid(FromGgufBytes(base().AddUint32("tokenizer.ggml.unknown_token_id", 100)), "unknown");
    ExpectInvalid(FromGgufBytes(GgufBuilder().AddString("tokenizer.ggml.model", "llama")
                                    .AddStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "x", "y", "x"})),
                  "ids 3 and 5");
    ExpectInvalid(FromGgufBytes(GgufBuilder().AddString("tokenizer.ggml.model", "llama")
                                    .AddStringArray("tokenizer.ggml.tokens", {})),
                  "empty");
    EXPECT_FALSE(FromGgufBytes(GgufBuilder().AddStringArray("tokenizer.ggml.tokens", kSmallPieces)).ok());
    EXPECT_FALSE(FromGgufBytes(GgufBuilder().AddString("tokenizer.ggml.model", "llama")).ok());
}

}  // namespace
}  // namespace prepack
