// core/request/continuation: the one implementation of sampling and stopping
// that the engine and single-request generation share. Logits are one-hot,
// so each step's token is known and the expected texts are written out by hand.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/model/gguf.h"
#include "core/request/continuation.h"
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

}  // namespace
}  // namespace prepack
