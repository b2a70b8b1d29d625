// core/request/continuation: the one implementation of sampling and stopping
// that the engine and single-request generation share. Logits are one-hot,
// so each step's token is known and the expected texts are written out by hand.
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/model/gguf.h"
#include "core/request/continuation.h"
#include "core/request/grammar_compiler.h"
#include "core/request/vocabulary.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

enum : int32_t { kUnk, kBos, kEos, kHello, kWorld, kThe, kEnd, kDot, kVocab };

Tokenizer Vocab() {
    auto tok = Tokenizer::FromPieces({"<unk>", "<s>", "</s>", "\xE2\x96\x81Hello", "\xE2\x96\x81world",
                                      "\xE2\x96\x81The", "\xE2\x96\x81""end", "."},
                                     {}, {}, kBos, kEos, kUnk);
    EXPECT_TRUE(tok.ok()) << tok.status();
    return *std::move(tok);
}

std::vector<float> OneHot(int32_t id) {
    std::vector<float> l(kVocab, 0.0f);
    l[id] = 10.0f;
    return l;
}

struct Outcome {
    std::vector<NextToken> steps;
    std::string            text;
};

// Feeds `ids` as the model's greedy choices after the prompt <s> Hello.
Outcome Generate(const std::vector<int32_t>& ids, std::vector<std::string> stop, ContinuationLimits limits) {
    static const Tokenizer tok = Vocab();
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    Continuation c(tok, greedy, std::move(stop), limits);
    std::vector<int32_t> tokens = {kBos, kHello};
    c.PrimeWithPrompt(tokens);
    Outcome r;
    for (int32_t id : ids) {
        r.steps.push_back(c.Next(OneHot(id), &tokens));
        r.text += r.steps.back().text;
        EXPECT_EQ(r.steps.back().token, id);
        EXPECT_EQ(tokens.back(), id);
        if (r.steps.back().finished) break;
    }
    EXPECT_EQ(c.generated(), static_cast<int32_t>(r.steps.size()));
    return r;
}

TEST(Continuation, TextStreamsWithTheFirstSpaceKept) {
    const Outcome r = Generate({kWorld, kDot}, {}, {8, 64, false});
    ASSERT_EQ(r.steps.size(), 2u);
    EXPECT_EQ(r.steps[0].text, " world");
    EXPECT_FALSE(r.steps[0].finished);
    EXPECT_EQ(r.text, " world.");
}

TEST(Continuation, AStopStringEndsTheGenerationAndIsNeverEmitted) {
    const Outcome r = Generate({kWorld, kThe, kEnd, kDot}, {" The end"}, {8, 64, false});
    ASSERT_EQ(r.steps.size(), 3u) << "nothing is sampled after the stop";
    EXPECT_EQ(r.steps[1].text, "") << "' The' might begin the stop string: held back";
    EXPECT_TRUE(r.steps[2].finished);
    EXPECT_EQ(r.steps[2].reason, FinishReason::kStop);
    EXPECT_EQ(r.text, " world");
}

TEST(Continuation, EosReleasesTextHeldBackForAStopString) {
    const Outcome r = Generate({kThe, kEos}, {" The end"}, {8, 64, false});
    ASSERT_EQ(r.steps.size(), 2u);
    EXPECT_EQ(r.steps[0].text, "");
    EXPECT_TRUE(r.steps[1].finished);
    EXPECT_EQ(r.steps[1].reason, FinishReason::kEos);
    EXPECT_EQ(r.steps[1].text, " The") << "EOS has no text, but what was held back is output";
}

TEST(Continuation, MaxTokensEndsWithLengthAndFlushes) {
    const Outcome r = Generate({kWorld, kThe, kDot}, {" The end"}, {2, 64, false});
    ASSERT_EQ(r.steps.size(), 2u);
    EXPECT_EQ(r.steps[1].reason, FinishReason::kLength);
    EXPECT_EQ(r.text, " world The");
}

TEST(Continuation, TheEndOfTheContextEndsWithLength) {
    // Prompt of 2 + 2 generated = a context of 4.
    const Outcome r = Generate({kWorld, kWorld, kWorld}, {}, {100, 4, false});
    ASSERT_EQ(r.steps.size(), 2u);
    EXPECT_TRUE(r.steps[1].finished);
    EXPECT_EQ(r.steps[1].reason, FinishReason::kLength);
}

TEST(Continuation, IgnoreEosKeepsGoingAndEosHasNoText) {
    const Outcome r = Generate({kEos, kWorld, kDot}, {}, {3, 64, true});
    ASSERT_EQ(r.steps.size(), 3u);
    EXPECT_FALSE(r.steps[0].finished);
    EXPECT_EQ(r.steps[0].text, "");
    EXPECT_EQ(r.steps[2].reason, FinishReason::kLength);
    EXPECT_EQ(r.text, " world.");
}

// Generation stops at each token of a real vocabulary's end-of-generation
// set, found here by its text (llama.cpp's list), and at no ordinary token.
TEST(Continuation, EveryEndOfGenerationTokenOfRealVocabulariesStops) {
    struct Vocab {
        const char*              file;
        std::vector<std::string> ends;
    };
    const Vocab vocabs[] = {
        {"llama-bpe", {"<|end_of_text|>", "<|eot_id|>"}},   // Llama 3.0: no <|eom_id|> yet
        {"qwen2", {"<|endoftext|>", "<|im_end|>"}},
    };
    for (const Vocab& v : vocabs) {
        const std::string path = testing::ModelsDir() + "/vocab/ggml-vocab-" + v.file + ".gguf";
        if (!testing::FileExists(path)) GTEST_SKIP() << "no " << path;
        SCOPED_TRACE(v.file);
        auto file = GgufFile::Open(path);
        ASSERT_TRUE(file.ok()) << file.status();
        auto tok = Tokenizer::FromGguf(**file);
        ASSERT_TRUE(tok.ok()) << tok.status();
        std::vector<int32_t> ends;
        for (int32_t id = 0; id < tok->vocab_size(); ++id) {
            for (const std::string& text : v.ends) {
                if (tok->Piece(id) == text) ends.push_back(id);
            }
        }
        ASSERT_EQ(ends.size(), v.ends.size()) << "each end token is in the vocabulary once";
        const int32_t ordinary = tok->Encode("Hello", false).value()[0];
        SamplingParams greedy;
        greedy.temperature = 0.0f;
        for (int32_t end : ends) {
            SCOPED_TRACE(tok->Piece(end));
            Continuation c(*tok, greedy, {}, {16, 1 << 16, false});
            std::vector<int32_t> tokens = {ordinary};
            std::vector<float> logits(tok->vocab_size(), 0.0f);
            logits[ordinary] = 10.0f;
            EXPECT_FALSE(c.Next(logits, &tokens).finished);
            logits[ordinary] = 0.0f;
            logits[end] = 10.0f;
            const NextToken last = c.Next(logits, &tokens);
            EXPECT_TRUE(last.finished);
            EXPECT_EQ(last.reason, FinishReason::kEos);
            EXPECT_EQ(last.text, "") << "the end token's text is not output";
        }
    }
}

// ---------------------------------------------------------------------------
// Structured output: a grammar's matcher under the sampler. The vocabulary
// is small and its pieces plain, so each run's text is the tokens' pieces
// joined, and what the grammar allows is checked against std::regex (or, for
// the context-free case, by counting).

enum : int32_t { gUnk, gBos, gEos, gA, gB, gAB, gBA, gC, gBC, gX, gSpace, gVocab };

const Tokenizer& GrammarVocab() {
    static const Tokenizer tok = [] {
        auto t = Tokenizer::FromPieces({"<unk>", "<s>", "</s>", "a", "b", "ab", "ba", "c", "bc", "x", " "}, {},
                                       {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, gBos, gEos, gUnk);
        EXPECT_TRUE(t.ok()) << t.status();
        return *std::move(t);
    }();
    return tok;
}

GrammarCompiler& Grammars() {
    static GrammarCompiler compiler(GrammarVocab());
    return compiler;
}

grammar::GrammarSpec Regex(std::string re) { return {grammar::GrammarSpec::Kind::kRegex, std::move(re)}; }

struct ConstrainedRun {
    std::vector<int32_t> ids;   // generated
    std::string          text;
    NextToken            last;
};

// Generates under `spec` with the logits `logits_at(step)` until the end.
template <typename Logits>
ConstrainedRun Constrained(const grammar::GrammarSpec& spec, const SamplingParams& sampling, int32_t max_tokens,
                Logits logits_at) {
    Continuation c(GrammarVocab(), sampling, {}, {max_tokens, 1 << 16, false});
    auto matcher = Grammars().NewMatcher(spec);
    EXPECT_TRUE(matcher.ok()) << matcher.status();
    c.Constrain(*std::move(matcher));
    EXPECT_TRUE(c.constrained());
    std::vector<int32_t> tokens = {gBos};
    c.PrimeWithPrompt(tokens);
    ConstrainedRun r;
    for (int step = 0; step < max_tokens + 1; ++step) {
        r.last = c.Next(logits_at(step), &tokens);
        r.text += r.last.text;
        if (r.last.token >= 0) r.ids.push_back(r.last.token);
        if (r.last.finished) break;
    }
    EXPECT_TRUE(r.last.finished) << "a generation always ends by max_tokens";
    return r;
}

// Logits of a seeded random model: every token, the forbidden ones too,
// gets a real chance, so the mask is what keeps the output valid.
auto RandomLogits(uint64_t seed, float eos_bonus = 0.0f) {
    return [rng = std::make_shared<Rng>(seed), eos_bonus](int) {
        std::vector<float> l(gVocab);
        for (float& x : l) x = rng->NextFloat() * 6.0f;
        l[gX] += 3.0f;   // the most likely token is never allowed
        l[gEos] += eos_bonus;
        return l;
    };
}

SamplingParams Seeded(uint64_t seed) {
    SamplingParams p;
    p.seed = seed;
    return p;
}

TEST(ConstrainedContinuation, OutputAlwaysMatchesAndATerminatedGrammarEndsWithStop) {
    const std::regex want("[ab]{2,5}c");
    for (uint64_t seed = 0; seed < 300; ++seed) {
        SCOPED_TRACE(seed);
        const ConstrainedRun r = Constrained(Regex("[ab]{2,5}c"), Seeded(seed), 32, RandomLogits(seed));
        EXPECT_TRUE(std::regex_match(r.text, want)) << r.text;
        // After "c" nothing may follow: done without sampling an end token.
        EXPECT_EQ(r.last.reason, FinishReason::kStop);
        EXPECT_TRUE(r.last.status.ok());
        EXPECT_NE(r.ids.back(), gEos);
        EXPECT_EQ(r.text, testing::DecodeAsText(GrammarVocab(), r.ids));
    }
}

TEST(ConstrainedContinuation, EndTokensOnlyWhereTheTextIsComplete) {
    // [ab]{2,5}: complete from 2 letters on; at 5 nothing may follow. An end
    // token the model likes best is still refused before 2 letters.
    int eos = 0, stop = 0;
    for (uint64_t seed = 0; seed < 300; ++seed) {
        SCOPED_TRACE(seed);
        const ConstrainedRun r = Constrained(Regex("[ab]{2,5}"), Seeded(seed), 32, RandomLogits(seed, 4.0f));
        ASSERT_TRUE(std::regex_match(r.text, std::regex("[ab]{2,5}"))) << r.text;
        if (r.last.reason == FinishReason::kEos) {
            ++eos;
            EXPECT_EQ(r.ids.back(), gEos);
            EXPECT_LE(r.text.size(), 5u);
        } else {
            ASSERT_EQ(r.last.reason, FinishReason::kStop) << FinishReasonName(r.last.reason);
            ++stop;
            EXPECT_EQ(r.text.size(), 5u) << "only a text that cannot go on ends without an end token";
        }
        for (size_t i = 0; i + 1 < r.ids.size(); ++i) EXPECT_NE(r.ids[i], gEos);
    }
    EXPECT_GT(eos, 0) << "the end token was never drawn: the test shows nothing";
    EXPECT_GT(stop, 0);
}

TEST(ConstrainedContinuation, GreedyTakesTheBestAllowedTokenEveryStep) {
    // x and ba are the model's favourites but never allowed; at the start c
    // is not allowed either, so greedy takes ab, then c (6 > ab's 5).
    std::vector<float> l(gVocab, 0.0f);
    l[gX] = 9.0f;
    l[gBA] = 8.0f;
    l[gEos] = 7.0f;
    l[gC] = 6.0f;
    l[gAB] = 5.0f;
    l[gA] = 3.0f;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    for (int i = 0; i < 2; ++i) {   // deterministic
        const ConstrainedRun r = Constrained(Regex("(ab)+c"), greedy, 16, [&](int) { return l; });
        EXPECT_EQ(r.ids, (std::vector<int32_t>{gAB, gC}));
        EXPECT_EQ(r.text, "abc");
        EXPECT_EQ(r.last.reason, FinishReason::kStop);
    }
}

TEST(ConstrainedContinuation, MaxTokensMidGrammarEndsWithLength) {
    std::vector<float> l(gVocab, 0.0f);
    l[gAB] = 5.0f;
    l[gC] = 1.0f;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    const ConstrainedRun r = Constrained(Regex("(ab)+c"), greedy, 3, [&](int) { return l; });
    EXPECT_EQ(r.text, "ababab");
    EXPECT_EQ(r.last.reason, FinishReason::kLength);
    EXPECT_TRUE(r.last.status.ok());
}

TEST(ConstrainedContinuation, AGrammarNoTokenCanContinueFailsTheRequest) {
    // No token spells "z": nothing may be sampled.
    Continuation c(GrammarVocab(), Seeded(1), {}, {8, 1 << 16, false});
    auto matcher = Grammars().NewMatcher(Regex("a z"));
    ASSERT_TRUE(matcher.ok()) << matcher.status();
    c.Constrain(*std::move(matcher));
    std::vector<int32_t> tokens = {gBos};
    std::vector<float> l(gVocab, 1.0f);
    const NextToken first = c.Next(l, &tokens);
    ASSERT_FALSE(first.finished) << FinishReasonName(first.reason);
    EXPECT_EQ(first.token, gA);
    const NextToken second = c.Next(l, &tokens);   // " " is allowed: then only "z" could follow
    EXPECT_EQ(second.token, gSpace);
    const NextToken third = c.Next(l, &tokens);
    EXPECT_TRUE(third.finished);
    EXPECT_EQ(third.reason, FinishReason::kError);
    EXPECT_EQ(third.status.code(), absl::StatusCode::kInvalidArgument) << third.status;
    EXPECT_NE(third.status.message().find("allows no token"), std::string::npos) << third.status;
    EXPECT_EQ(third.token, -1);
    EXPECT_EQ(tokens, (std::vector<int32_t>{gBos, gA, gSpace})) << "nothing sampled";
    EXPECT_EQ(c.generated(), 2);
}

TEST(ConstrainedContinuation, AContextFreeGrammarBalancesEveryRun) {
    // a^n c b^n: no regular expression says this; count instead.
    const grammar::GrammarSpec spec{grammar::GrammarSpec::Kind::kGbnf, "root ::= \"a\" root \"b\" | \"c\""};
    int complete = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        SCOPED_TRACE(seed);
        const ConstrainedRun r = Constrained(spec, Seeded(seed), 12, RandomLogits(seed));
        const size_t c = r.text.find('c');
        const size_t n = r.text.find_first_not_of('a');
        if (r.last.reason == FinishReason::kStop) {
            ++complete;
            ASSERT_NE(c, std::string::npos) << r.text;
            EXPECT_EQ(n, c) << r.text;
            EXPECT_EQ(r.text.substr(c + 1), std::string(c, 'b')) << r.text;
        } else {
            ASSERT_EQ(r.last.reason, FinishReason::kLength) << FinishReasonName(r.last.reason);
            // A prefix of one: a^n, or a^n c b^m with m < n.
            if (c == std::string::npos) {
                EXPECT_EQ(n, std::string::npos) << r.text;
            } else {
                EXPECT_EQ(n, c) << r.text;
                EXPECT_EQ(r.text.substr(c + 1), std::string(r.text.size() - c - 1, 'b')) << r.text;
                EXPECT_LT(r.text.size() - c - 1, c) << r.text;
            }
        }
    }
    EXPECT_GT(complete, 0);
}

TEST(ConstrainedContinuation, TheVocabularyTheGrammarSees) {
    const grammar::VocabularyInfo info = GrammarVocabularyInfo(GrammarVocab());
    ASSERT_EQ(info.token_bytes.size(), static_cast<size_t>(gVocab));
    EXPECT_EQ(info.end_tokens, (std::vector<int32_t>{gEos}));
    EXPECT_EQ(info.token_bytes[gUnk], "") << "unknown and control tokens spell nothing";
    EXPECT_EQ(info.token_bytes[gBos], "");
    EXPECT_EQ(info.token_bytes[gEos], "");
    EXPECT_EQ(info.token_bytes[gAB], "ab");
    EXPECT_EQ(info.token_bytes[gSpace], " ");
    // The trie is built once and shared.
    EXPECT_EQ(Grammars().vocabulary().get(), Grammars().vocabulary().get());
    EXPECT_EQ(Grammars().vocabulary()->size(), gVocab);
}

}  // namespace
}  // namespace prepack
