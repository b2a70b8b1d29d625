// The grammar matcher (core/grammar/matcher.h) against independent
// references:
//  - the Earley parser (fed byte by byte) against the naive fixpoint
//    recognizer of grammar_test_ir.h, on fixed ambiguous / left-recursive /
//    nullable grammars and on random ones: every text up to a length is
//    accepted exactly when it is a prefix of a sentence, CanEnd exactly when
//    it is a sentence, IsTerminated exactly when no byte may follow;
//  - the token mask against its definition (token t allowed <=> AcceptBytes
//    of t's bytes succeeds; end tokens <=> CanEnd), on random walks over a
//    synthetic vocabulary and at fixed states over Qwen2's 151k tokens;
//  - rollback, end tokens, limits and malformed grammars, and two threads
//    sharing one CompiledGrammar.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "core/grammar/matcher.h"
#include "core/model/gguf.h"
#include "core/model/tokenizer.h"
#include "tests/grammar_test_ir.h"
#include "tests/test_util.h"

namespace prepack::grammar {
namespace {

using testing::IrBuilder;
using testing::NaiveGrammar;

std::shared_ptr<const TokenVocabulary> MakeVocab(std::vector<std::string> tokens, std::vector<int32_t> end_tokens = {}) {
    VocabularyInfo info;
    info.token_bytes = std::move(tokens);
    info.end_tokens = std::move(end_tokens);
    return std::make_shared<TokenVocabulary>(std::move(info));
}

// One token per byte of `alphabet`, and an end token (empty bytes) last.
std::shared_ptr<const TokenVocabulary> ByteVocab(std::string_view alphabet) {
    std::vector<std::string> tokens;
    for (char c : alphabet) tokens.emplace_back(1, c);
    tokens.emplace_back();
    return MakeVocab(tokens, {static_cast<int32_t>(tokens.size()) - 1});
}

std::shared_ptr<const CompiledGrammar> MustCompile(Grammar g, std::shared_ptr<const TokenVocabulary> vocab,
                                                   const CompileLimits& limits = {}) {
    auto compiled = Compile(std::move(g), std::move(vocab), limits);
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    return compiled.ok() ? *compiled : nullptr;
}

// The mask by its definition: try every token on the matcher and undo it.
TokenMask NaiveMask(Matcher& m, const TokenVocabulary& vocab) {
    TokenMask mask(vocab.size());
    const auto& info = vocab.info();
    std::vector<char> is_end(vocab.size(), 0);
    for (int32_t id : info.end_tokens) is_end[id] = 1;
    for (int32_t id = 0; id < vocab.size(); ++id) {
        if (is_end[id]) {
            if (m.CanEnd()) mask.Set(id);
            continue;
        }
        if (info.token_bytes[id].empty()) continue;
        if (m.AcceptBytes(info.token_bytes[id])) {
            mask.Set(id);
            m.Rollback(1);
        }
    }
    return mask;
}

std::string Printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out;
}

// Empty when equal, else the first differing tokens.
std::string MaskDifference(const TokenMask& got, const TokenMask& want, const TokenVocabulary& vocab) {
    std::string out;
    int shown = 0;
    for (int32_t id = 0; id < vocab.size() && shown < 8; ++id) {
        if (got.Test(id) != want.Test(id)) {
            out += (got.Test(id) ? " extra " : " missing ") + std::to_string(id) + " '" +
                   Printable(vocab.info().token_bytes[id]) + "'";
            ++shown;
        }
    }
    return out;
}

// ---- Earley against the naive recognizer ----------------------------------

// Every text over `alphabet` up to `max_len` bytes: the matcher accepts it
// exactly when it is a prefix of a sentence, CanEnd exactly for sentences,
// IsTerminated exactly when no further byte is viable. Returns how many
// texts were sentences (so callers can check the case was not vacuous).
int CheckAgainstNaive(const Grammar& g, std::string_view alphabet, int max_len, const std::string& label) {
    std::vector<std::string> texts{""};
    for (size_t k = 0; k < texts.size(); ++k) {
        if (static_cast<int>(texts[k].size()) > max_len) continue;
        for (char c : alphabet) texts.push_back(texts[k] + c);
    }
    struct Truth {
        bool viable, sentence;
    };
    std::map<std::string, Truth> truth;
    for (const auto& t : texts) {
        NaiveGrammar naive(g, t);
        truth[t] = {naive.Viable(g.start), naive.Derives(g.start)};
    }
    auto compiled = Compile(g, ByteVocab(alphabet));
    if (!truth[""].viable) {
        // The start rule derives nothing: refused with a clear error.
        EXPECT_FALSE(compiled.ok()) << label;
        if (!compiled.ok()) {
            EXPECT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument) << label;
        }
        return 0;
    }
    EXPECT_TRUE(compiled.ok()) << label << ": " << compiled.status();
    if (!compiled.ok()) return 0;
    Matcher m(*compiled);
    int sentences = 0;
    for (const auto& t : texts) {
        if (static_cast<int>(t.size()) > max_len) continue;
        m.Rollback(m.num_accepted());
        bool accepted = true;
        for (char c : t) accepted = accepted && m.AcceptBytes(std::string_view(&c, 1));
        EXPECT_EQ(accepted, truth[t].viable) << label << " text '" << t << "'";
        if (!accepted) continue;
        EXPECT_EQ(m.CanEnd(), truth[t].sentence) << label << " text '" << t << "'";
        sentences += truth[t].sentence;
        bool some_byte = false;
        for (char c : alphabet) some_byte = some_byte || truth[t + c].viable;
        EXPECT_EQ(m.IsTerminated(), truth[t].sentence && !some_byte) << label << " text '" << t << "'";
    }
    return sentences;
}

TEST(GrammarMatcherTest, LeftRecursiveExpressions) {
    // E ::= E "+" T | T ;  T ::= "a" | "(" E ")"
    IrBuilder b;
    const Symbol e = b.NewRule("E"), t = b.NewRule("T");
    b.Define(e, {{e, b.LitLex("+"), t}, {t}});
    b.Define(t, {{b.LitLex("a")}, {b.LitLex("("), e, b.LitLex(")")}});
    EXPECT_GT(CheckAgainstNaive(b.g, "a+()", 5, "expr"), 5);
}

TEST(GrammarMatcherTest, AmbiguousNullable) {
    // S ::= S S | "a" | ""  (infinitely ambiguous)
    IrBuilder b;
    const Symbol s = b.NewRule("S");
    b.Define(s, {{s, s}, {b.LitLex("a")}, {}});
    EXPECT_GT(CheckAgainstNaive(b.g, "ab", 7, "SS"), 5);
}

TEST(GrammarMatcherTest, HiddenLeftRecursionAndNullableLexemes) {
    // S ::= N S "b" | x ;  N ::= "" | "c" ;  x ::= lexeme a*  (nullable)
    IrBuilder b;
    const Symbol s = b.NewRule("S"), n = b.NewRule("N");
    const Symbol x = b.Lex(b.Star(b.Chars("a")), "a*");
    b.Define(s, {{n, s, b.LitLex("b")}, {x}});
    b.Define(n, {{}, {b.LitLex("c")}});
    EXPECT_GT(CheckAgainstNaive(b.g, "abc", 6, "hidden-left"), 10);
}

TEST(GrammarMatcherTest, LexemesEndAnywhereNotLongestMatch) {
    // S ::= A B with A = a+ and B = a b: "aaab" needs A to stop before the
    // last 'a' although it could take it.
    IrBuilder b;
    const Symbol s = b.NewRule("S");
    b.Define(s, {{b.Lex(b.Plus(b.Chars("a")), "a+"), b.LitLex("ab")}});
    EXPECT_GT(CheckAgainstNaive(b.g, "ab", 7, "no-longest-match"), 3);
}

TEST(GrammarMatcherTest, NonProductiveAlternativesArePruned) {
    // S ::= "a" D | "a" "b" ;  D ::= "c" D  (D derives nothing): after "a",
    // only "b" may follow, although D's prediction would scan "c" if kept.
    IrBuilder b;
    const Symbol s = b.NewRule("S"), d = b.NewRule("D");
    b.Define(s, {{b.LitLex("a"), d}, {b.LitLex("a"), b.LitLex("b")}});
    b.Define(d, {{b.LitLex("c"), d}});
    EXPECT_EQ(CheckAgainstNaive(b.g, "abc", 4, "unproductive"), 1);
    // A lexeme with an empty byte set matches nothing either.
    IrBuilder e;
    const Symbol r = e.NewRule("R");
    e.Define(r, {{e.LitLex("a"), e.Lex(e.Chars(""), "nothing")}});
    CheckAgainstNaive(e.g, "a", 3, "empty-set");
}

// A random lexeme over "ab".
int32_t RandomLexemeRegex(IrBuilder& b, std::mt19937& rng) {
    switch (rng() % 8) {
        case 0: return b.Chars("a");
        case 1: return b.Chars("b");
        case 2: return b.Lit("ab");
        case 3: return b.Star(b.Chars("a"));
        case 4: return b.Chars("ab");
        case 5: return b.Empty();
        case 6: return b.Rep(b.Chars("b"), 1, 2);
        default: return rng() % 3 == 0 ? b.Chars("") : b.Lit("ba");
    }
}

TEST(GrammarMatcherTest, RandomGrammarsMatchNaiveRecognizer) {
    std::mt19937 rng(2024);
    int sentences = 0, refused = 0;
    for (int round = 0; round < 60; ++round) {
        IrBuilder b;
        std::vector<Symbol> lexemes;
        for (int i = 0; i < 3; ++i) lexemes.push_back(b.Lex(RandomLexemeRegex(b, rng)));
        const int num_rules = 1 + static_cast<int>(rng() % 4);
        std::vector<Symbol> rules;
        for (int r = 0; r < num_rules; ++r) rules.push_back(b.NewRule("r" + std::to_string(r)));
        for (int r = 0; r < num_rules; ++r) {
            std::vector<std::vector<Symbol>> alts(1 + rng() % 3);
            for (auto& alt : alts) {
                for (int k = 0, n = static_cast<int>(rng() % 4); k < n; ++k) {
                    alt.push_back(rng() % 5 < 2 ? rules[rng() % num_rules] : lexemes[rng() % lexemes.size()]);
                }
            }
            b.Define(rules[r], alts);
        }
        const int found = CheckAgainstNaive(b.g, "ab", 5, "random grammar " + std::to_string(round));
        sentences += found;
        refused += found == 0;
        if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(sentences, 200);
    std::printf("random grammars: %d sentences checked, %d grammars deriving nothing refused\n", sentences, refused);
}

// ---- a JSON-like grammar ---------------------------------------------------

Grammar JsonGrammar() {
    IrBuilder b;
    const Symbol ws = b.Lex(b.Star(b.Chars(" \t\n")), "ws");
    const int32_t hex = b.Alt({b.Range('0', '9'), b.Range('a', 'f'), b.Range('A', 'F')});
    const int32_t escape = b.Cat({b.Chars("\\"), b.Alt({b.Chars("\"\\/bfnrt"), b.Cat({b.Chars("u"), b.Rep(hex, 4, 4)})})});
    const Symbol str = b.Lex(b.Cat({b.Chars("\""), b.Star(b.Alt({b.NotChars("\"\\"), escape})), b.Chars("\"")}), "string");
    const int32_t digits = b.Plus(b.Range('0', '9'));
    const Symbol number = b.Lex(b.Cat({b.Opt(b.Chars("-")), b.Alt({b.Chars("0"), b.Cat({b.Range('1', '9'), b.Star(b.Range('0', '9'))})}),
                                       b.Opt(b.Cat({b.Chars("."), digits})),
                                       b.Opt(b.Cat({b.Chars("eE"), b.Opt(b.Chars("+-")), digits}))}),
                                "number");
    const Symbol root = b.NewRule("root"), value = b.NewRule("value"), object = b.NewRule("object"),
                 members = b.NewRule("members"), member = b.NewRule("member"), array = b.NewRule("array"),
                 elements = b.NewRule("elements");
    b.Define(root, {{ws, value, ws}});
    b.Define(value, {{object}, {array}, {str}, {number}, {b.LitLex("true")}, {b.LitLex("false")}, {b.LitLex("null")}});
    const Symbol lbrace = b.LitLex("{"), rbrace = b.LitLex("}"), comma = b.LitLex(","), colon = b.LitLex(":");
    b.Define(object, {{lbrace, ws, rbrace}, {lbrace, ws, members, ws, rbrace}});
    b.Define(members, {{member}, {members, ws, comma, ws, member}});   // left recursive
    b.Define(member, {{str, ws, colon, ws, value}});
    const Symbol lbracket = b.LitLex("["), rbracket = b.LitLex("]");
    b.Define(array, {{lbracket, ws, rbracket}, {lbracket, ws, elements, ws, rbracket}});
    b.Define(elements, {{value}, {elements, ws, comma, ws, value}});
    b.g.start = root.index;
    return b.g;
}

// All 1-3 byte strings over a JSON-ish alphabet, longer tokens that cross
// lexeme boundaries, bytes outside ASCII, an empty token and an end token.
std::shared_ptr<const TokenVocabulary> SyntheticJsonVocab() {
    const std::string alphabet = "{}[]\":,a1 \\";
    std::vector<std::string> tokens;
    for (char x : alphabet) {
        tokens.emplace_back(1, x);
        for (char y : alphabet) {
            tokens.push_back(std::string{x, y});
            for (char z : alphabet) tokens.push_back(std::string{x, y, z});
        }
    }
    for (const char* t : {"true", "false", "null", "tru", "nul", "t", "r", "u", "e", "f", "l", "s", "n", "0", "5", "-",
                          ".", "E", "+", "\"key\"", "\": ", ", \"", "\"}", "\"]}", "},{", "}]", "\\u00e9", "\\u", "00",
                          "4F", "1.5e-3", "-0.25", "\xc3\xa9", "\xe2\x82\xac\"", "\n", "\t\t", "  \"", "\"a\": [",
                          "[{\"", "true,", "null}", "a\"b", "\"\"", "x", "\x01"}) {
        tokens.emplace_back(t);
    }
    tokens.emplace_back("");                 // a control token: never allowed
    tokens.emplace_back("");                 // the end token
    tokens.emplace_back("\"");               // a duplicate of a token's bytes
    return MakeVocab(tokens, {static_cast<int32_t>(tokens.size()) - 2});
}

TEST(GrammarMatcherTest, MaskEqualsDefinitionOnRandomWalks) {
    auto vocab = SyntheticJsonVocab();
    auto compiled = MustCompile(JsonGrammar(), vocab);
    ASSERT_NE(compiled, nullptr);
    std::mt19937 rng(99);
    int states = 0, ends_seen = 0, rollbacks = 0;
    for (int walk = 0; walk < 12; ++walk) {
        Matcher m(compiled);
        std::vector<TokenMask> masks_by_depth;   // the mask after k accepted tokens
        for (int step = 0; step < 40; ++step) {
            TokenMask mask;
            m.FillNextTokenMask(&mask);
            const TokenMask naive = NaiveMask(m, *vocab);
            ASSERT_EQ(mask.words(), naive.words())
                << "walk " << walk << " step " << step << MaskDifference(mask, naive, *vocab);
            ++states;
            masks_by_depth.resize(m.num_accepted());
            masks_by_depth.push_back(mask);
            if (rng() % 8 == 0 && m.num_accepted() > 0) {
                // Rolling back must restore exactly the earlier mask.
                const int32_t k = 1 + static_cast<int32_t>(rng() % std::min(3, m.num_accepted()));
                m.Rollback(k);
                TokenMask again;
                m.FillNextTokenMask(&again);
                ASSERT_EQ(again.words(), masks_by_depth[m.num_accepted()].words()) << "after rollback of " << k;
                ++rollbacks;
                continue;
            }
            std::vector<int32_t> allowed;
            for (int32_t id = 0; id < vocab->size(); ++id) {
                if (mask.Test(id)) allowed.push_back(id);
            }
            ASSERT_FALSE(allowed.empty());
            const int32_t pick = allowed[rng() % allowed.size()];
            ASSERT_TRUE(m.AcceptToken(pick));
            if (m.ended()) {
                ++ends_seen;
                TokenMask after;
                m.FillNextTokenMask(&after);
                EXPECT_EQ(after.Count(), 0);
                break;
            }
        }
    }
    EXPECT_GE(states, 200);
    EXPECT_GT(rollbacks, 5);
    std::printf("random walks: %d states checked, %d ended, %d rollbacks\n", states, ends_seen, rollbacks);
}

TEST(GrammarMatcherTest, EndTokensAndTermination) {
    IrBuilder b;
    const Symbol s = b.NewRule("S");
    b.Define(s, {{b.LitLex("ab")}});
    auto vocab = MakeVocab({"a", "b", "ab", "abc", "", ""}, {4});
    auto compiled = MustCompile(b.g, vocab);
    Matcher m(compiled);
    EXPECT_FALSE(m.CanEnd());
    EXPECT_FALSE(m.AcceptToken(4)) << "the end token before the grammar may end";
    EXPECT_FALSE(m.AcceptToken(5)) << "an empty control token";
    EXPECT_FALSE(m.AcceptToken(6)) << "out of range";
    EXPECT_FALSE(m.AcceptToken(-1));
    EXPECT_FALSE(m.AcceptToken(3)) << "'abc' runs past the sentence";
    EXPECT_EQ(m.num_accepted(), 0);
    ASSERT_TRUE(m.AcceptToken(0));
    ASSERT_TRUE(m.AcceptToken(1));
    EXPECT_TRUE(m.CanEnd());
    EXPECT_TRUE(m.IsTerminated());
    TokenMask mask;
    m.FillNextTokenMask(&mask);
    EXPECT_EQ(mask.Count(), 1);
    EXPECT_TRUE(mask.Test(4));
    ASSERT_TRUE(m.AcceptToken(4));
    EXPECT_TRUE(m.ended());
    EXPECT_FALSE(m.AcceptToken(4));
    EXPECT_FALSE(m.AcceptBytes(""));
    m.FillNextTokenMask(&mask);
    EXPECT_EQ(mask.Count(), 0);
    m.Rollback(1);
    EXPECT_FALSE(m.ended());
    EXPECT_TRUE(m.IsTerminated());
    m.Rollback(5);   // more than accepted: back to the start
    EXPECT_EQ(m.num_accepted(), 0);
    m.FillNextTokenMask(&mask);
    EXPECT_TRUE(mask.Test(0) && mask.Test(2) && !mask.Test(1) && !mask.Test(3) && !mask.Test(4));

    // a+ may end after one 'a' but is not terminated: more may follow.
    IrBuilder p;
    const Symbol r = p.NewRule("R");
    p.Define(r, {{p.Lex(p.Plus(p.Chars("a")))}});
    Matcher plus(MustCompile(p.g, vocab));
    ASSERT_TRUE(plus.AcceptToken(0));
    EXPECT_TRUE(plus.CanEnd());
    EXPECT_FALSE(plus.IsTerminated());
    plus.FillNextTokenMask(&mask);
    EXPECT_TRUE(mask.Test(0) && mask.Test(4) && !mask.Test(1) && !mask.Test(2));
}

TEST(GrammarMatcherTest, DfaLimitFailsTheRequestNotTheProcess) {
    IrBuilder b;
    const int32_t ab = b.Chars("ab");
    const Symbol s = b.NewRule("S");
    b.Define(s, {{b.Lex(b.Cat({b.Star(ab), b.Chars("a"), b.Rep(ab, 6, 6)}), "tail")}});
    CompileLimits limits;
    limits.max_dfa_states_per_lexeme = 12;
    auto vocab = MakeVocab({"a", "b", "ab", "ba", ""}, {4});
    auto compiled = MustCompile(b.g, vocab, limits);
    // By accepting bytes.
    Matcher m(compiled);
    std::mt19937 rng(5);
    bool failed = false;
    for (int i = 0; i < 300 && !failed; ++i) failed = !m.AcceptBytes(std::string(1, "ab"[rng() % 2]));
    ASSERT_TRUE(failed);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(m.status().message().find("max_dfa_states_per_lexeme"), std::string::npos) << m.status();
    TokenMask mask;
    m.FillNextTokenMask(&mask);
    EXPECT_EQ(mask.Count(), 0);
    EXPECT_FALSE(m.AcceptToken(0));
    // By computing masks (the trie walk needs new states too).
    Matcher other(compiled);
    bool mask_failed = false;
    for (int i = 0; i < 300 && !mask_failed; ++i) {
        other.FillNextTokenMask(&mask);
        mask_failed = !other.status().ok();
        if (!mask_failed && !other.AcceptToken("ab"[rng() % 2] == 'a' ? 0 : 1)) mask_failed = !other.status().ok();
    }
    EXPECT_TRUE(mask_failed);
    EXPECT_EQ(other.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(GrammarMatcherTest, MalformedAndOversizedGrammarsAreRefused) {
    auto vocab = ByteVocab("ab");
    auto expect_code = [&](Grammar g, absl::StatusCode code, const std::string& needle, CompileLimits limits = {}) {
        auto compiled = Compile(std::move(g), vocab, limits);
        ASSERT_FALSE(compiled.ok()) << needle;
        EXPECT_EQ(compiled.status().code(), code) << compiled.status();
        EXPECT_NE(compiled.status().message().find(needle), std::string::npos) << compiled.status();
    };
    {
        IrBuilder b;
        const Symbol s = b.NewRule("S");
        b.Define(s, {{Symbol{false, 7}}});
        expect_code(b.g, absl::StatusCode::kInvalidArgument, "rule 7");
    }
    {
        IrBuilder b;
        b.NewRule("S");
        expect_code(b.g, absl::StatusCode::kInvalidArgument, "no alternatives");
    }
    {
        IrBuilder b;
        const Symbol s = b.NewRule("S");
        const int32_t cat = b.Cat({});
        b.g.regex[cat].children = {cat};   // a cycle
        b.Define(s, {{b.Lex(cat)}});
        expect_code(b.g, absl::StatusCode::kInvalidArgument, "cycle");
    }
    {
        IrBuilder b;
        const Symbol s = b.NewRule("S");
        b.Define(s, {{b.Lex(b.Rep(b.Chars("a"), 3, 2))}});
        expect_code(b.g, absl::StatusCode::kInvalidArgument, "bounds");
    }
    {
        IrBuilder b;   // nesting deeper than the recursion bound
        int32_t node = b.Chars("a");
        for (int i = 0; i < 5000; ++i) node = b.Cat({node});
        const Symbol s = b.NewRule("S");
        b.Define(s, {{b.Lex(node)}});
        expect_code(b.g, absl::StatusCode::kInvalidArgument, "deeper");
    }
    {
        IrBuilder b;   // (((a){1000}){1000}){1000}: a billion NFA states
        const int32_t a = b.Rep(b.Rep(b.Rep(b.Chars("a"), 1000, 1000), 1000, 1000), 1000, 1000);
        const Symbol s = b.NewRule("S");
        b.Define(s, {{b.Lex(a)}});
        expect_code(b.g, absl::StatusCode::kResourceExhausted, "max_nfa_states");
    }
    {
        IrBuilder b;   // a diamond DAG 60 levels deep: 2^60 paths, counted once each node
        int32_t node = b.Chars("a");
        for (int i = 0; i < 60; ++i) node = b.Cat({node, node});
        const Symbol s = b.NewRule("S");
        b.Define(s, {{b.Lex(node)}});
        expect_code(b.g, absl::StatusCode::kResourceExhausted, "max_nfa_states");
    }
    {
        IrBuilder b;
        const Symbol s = b.NewRule("S"), t = b.NewRule("T");
        b.Define(s, {{t}});
        b.Define(t, {{b.LitLex("a")}});
        CompileLimits limits;
        limits.max_rules = 1;
        expect_code(b.g, absl::StatusCode::kResourceExhausted, "max_rules", limits);
    }
    {
        IrBuilder b;
        const Symbol s = b.NewRule("S");
        b.Define(s, {{b.LitLex("a")}});
        b.g.start = 3;
        expect_code(b.g, absl::StatusCode::kInvalidArgument, "start rule");
    }
    EXPECT_FALSE(Compile(Grammar{}, vocab).ok());
    EXPECT_FALSE(Compile(JsonGrammar(), nullptr).ok());
    Matcher orphan(nullptr);
    EXPECT_FALSE(orphan.status().ok());
    EXPECT_FALSE(orphan.AcceptBytes("a"));
}

TEST(GrammarMatcherTest, ThreadsShareOneCompiledGrammar) {
    auto vocab = SyntheticJsonVocab();
    // A deterministic walk (same seed, same choices) recording every mask.
    auto walk = [&](std::shared_ptr<const CompiledGrammar> compiled, uint32_t seed) {
        std::vector<std::vector<uint64_t>> masks;
        std::mt19937 rng(seed);
        for (int w = 0; w < 6; ++w) {
            Matcher m(compiled);
            for (int step = 0; step < 40 && !m.ended(); ++step) {
                TokenMask mask;
                m.FillNextTokenMask(&mask);
                masks.push_back(mask.words());
                std::vector<int32_t> allowed;
                for (int32_t id = 0; id < vocab->size(); ++id) {
                    if (mask.Test(id)) allowed.push_back(id);
                }
                if (allowed.empty() || !m.AcceptToken(allowed[rng() % allowed.size()])) break;
            }
        }
        return masks;
    };
    auto shared = MustCompile(JsonGrammar(), vocab);
    std::vector<std::vector<uint64_t>> a, b;
    std::thread ta([&] { a = walk(shared, 11); });
    std::thread tb([&] { b = walk(shared, 22); });
    ta.join();
    tb.join();
    EXPECT_EQ(a, walk(MustCompile(JsonGrammar(), vocab), 11));
    EXPECT_EQ(b, walk(MustCompile(JsonGrammar(), vocab), 22));
}

// ---- the Qwen2 vocabulary ---------------------------------------------------

std::shared_ptr<const TokenVocabulary> QwenVocab() {
    const std::string path = ::prepack::testing::ModelsDir() + "/vocab/ggml-vocab-qwen2.gguf";
    if (!::prepack::testing::FileExists(path)) return nullptr;
    auto file = GgufFile::Open(path);
    EXPECT_TRUE(file.ok()) << file.status();
    if (!file.ok()) return nullptr;
    auto tok = Tokenizer::FromGguf(**file);
    EXPECT_TRUE(tok.ok()) << tok.status();
    if (!tok.ok()) return nullptr;
    VocabularyInfo info;
    for (int32_t id = 0; id < tok->vocab_size(); ++id) {
        info.token_bytes.push_back(tok->IsControl(id) ? std::string() : tok->TokenBytes(id));
        if (tok->IsEndOfGeneration(id)) info.end_tokens.push_back(id);
    }
    return std::make_shared<TokenVocabulary>(std::move(info));
}

#define REQUIRE_QWEN(vocab)                                                                      \
    if ((vocab) == nullptr) {                                                                    \
        GTEST_SKIP() << "ggml-vocab-qwen2.gguf not found under " << ::prepack::testing::ModelsDir() \
                     << "/vocab; skipping";                                                      \
    }

TEST(GrammarMatcherTest, QwenMaskEqualsDefinition) {
    auto vocab = QwenVocab();
    REQUIRE_QWEN(vocab);
    auto compiled = MustCompile(JsonGrammar(), vocab);
    for (const char* prefix : {"", "{", "{\"ke", "{\"key\": [1, 2", "{\"a\": {\"b\": null}}"}) {
        Matcher m(compiled);
        ASSERT_TRUE(m.AcceptBytes(prefix)) << prefix;
        TokenMask mask;
        m.FillNextTokenMask(&mask);
        const TokenMask naive = NaiveMask(m, *vocab);
        EXPECT_EQ(mask.words(), naive.words()) << "after '" << prefix << "'" << MaskDifference(mask, naive, *vocab);
        EXPECT_GT(mask.Count(), 0);
        std::printf("qwen2 after '%s': %d tokens allowed\n", prefix, mask.Count());
    }
}

TEST(GrammarMatcherTest, QwenMaskTiming) {
    auto vocab = QwenVocab();
    REQUIRE_QWEN(vocab);
    // Measured, not asserted (the machine is shared).
    auto compiled = MustCompile(JsonGrammar(), vocab);
    for (const char* prefix : {"{", "{\"ke", "{\"key\": 12", "[true, "}) {
        Matcher m(compiled);
        ASSERT_TRUE(m.AcceptBytes(prefix));
        TokenMask mask;
        auto t0 = std::chrono::steady_clock::now();
        m.FillNextTokenMask(&mask);
        const double first_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        std::vector<double> us;
        for (int i = 0; i < 30; ++i) {
            t0 = std::chrono::steady_clock::now();
            m.FillNextTokenMask(&mask);
            us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(us.begin(), us.end());
        std::printf("qwen2 mask after '%s': first %.0f us, cached p50 %.0f us, max %.0f us (%d allowed)\n", prefix,
                    first_us, us[us.size() / 2], us.back(), mask.Count());
    }
}

}  // namespace
}  // namespace prepack::grammar
