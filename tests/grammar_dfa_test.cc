// The lexeme DFA (core/grammar/lexeme_dfa.h) against the naive regex
// semantics in grammar_test_ir.h, on random regex trees and random texts:
// after every prefix the DFA state must be dead exactly when no string of
// the language starts with the prefix, accepting exactly when the prefix is
// in the language, and have exits exactly when some byte keeps it viable.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>

#include "core/grammar/lexeme_dfa.h"
#include "tests/grammar_test_ir.h"

namespace prepack::grammar {
namespace {

using testing::IrBuilder;
using testing::NaiveEnds;
using testing::NaiveViable;

// A random regex over the bytes "abc" (texts also use 'd', which no byte
// set holds). Small enough for the naive recursion.
int32_t RandomRegex(IrBuilder& b, std::mt19937& rng, int depth) {
    const int kind = depth <= 0 ? static_cast<int>(rng() % 2) : static_cast<int>(rng() % 7);
    switch (kind) {
        case 0: {
            std::string chars;
            for (char c : std::string("abc")) {
                if (rng() % 2) chars += c;
            }
            return b.Chars(chars);   // may be empty: a set matching nothing
        }
        case 1: return rng() % 4 == 0 ? b.Empty() : b.Chars(std::string(1, "abc"[rng() % 3]));
        case 2:
        case 3: {
            std::vector<int32_t> parts;
            for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i) parts.push_back(RandomRegex(b, rng, depth - 1));
            return kind == 2 ? b.Cat(parts) : b.Alt(parts);
        }
        case 4: return b.Star(RandomRegex(b, rng, depth - 1));
        case 5: {
            const int32_t lo = static_cast<int32_t>(rng() % 3);
            return b.Rep(RandomRegex(b, rng, depth - 1), lo, lo + static_cast<int32_t>(rng() % 3));
        }
        default: return b.Plus(RandomRegex(b, rng, depth - 1));
    }
}

TEST(GrammarDfaTest, MatchesNaiveRegexOnRandomTexts) {
    std::mt19937 rng(12345);
    int checked_prefixes = 0, accepted = 0, dead = 0;
    for (int round = 0; round < 300; ++round) {
        IrBuilder b;
        const int32_t root = RandomRegex(b, rng, 3);
        LexemeDfa dfa(BuildLexemeNfa(b.g.regex, root), 100000);
        ASSERT_EQ(dfa.start() == LexemeDfa::kDead, !NaiveViable(b.g.regex, root, "", 0)) << "round " << round;
        for (int text = 0; text < 20; ++text) {
            std::string s;
            const int len = static_cast<int>(rng() % 8);
            for (int i = 0; i < len; ++i) s += "abcd"[rng() % 4];
            int32_t state = dfa.start();
            for (int i = 0; i <= len; ++i) {
                const std::string prefix = s.substr(0, i);
                if (i > 0) state = dfa.Next(state, static_cast<uint8_t>(s[i - 1]));
                ASSERT_NE(state, LexemeDfa::kOverflow);
                const bool viable = NaiveViable(b.g.regex, root, prefix, 0);
                ASSERT_EQ(state != LexemeDfa::kDead, viable) << "round " << round << " prefix '" << prefix << "'";
                ++checked_prefixes;
                if (!viable) {
                    ++dead;
                    break;
                }
                const bool in_language = NaiveEnds(b.g.regex, root, prefix, 0).count(i) > 0;
                ASSERT_EQ(dfa.accepting(state), in_language) << "round " << round << " prefix '" << prefix << "'";
                accepted += in_language;
                bool some_exit = false;
                for (char c : std::string("abcd")) some_exit = some_exit || NaiveViable(b.g.regex, root, prefix + c, 0);
                ASSERT_EQ(dfa.has_exits(state), some_exit) << "round " << round << " prefix '" << prefix << "'";
            }
        }
    }
    // The generator must exercise every outcome, or the test proves little.
    EXPECT_GT(accepted, 500);
    EXPECT_GT(dead, 500);
    EXPECT_GT(checked_prefixes, 5000);
}

TEST(GrammarDfaTest, ByteSetsOverAllBytes) {
    // High bytes and NUL go through byte classes like any other byte.
    IrBuilder b;
    const int32_t root = b.Cat({b.Range(0x80, 0xff), b.Chars(std::string(1, '\0')), b.Star(b.Range(0, 0x7f))});
    LexemeDfa dfa(BuildLexemeNfa(b.g.regex, root), 1000);
    int32_t s = dfa.Next(dfa.start(), 0xC3);
    ASSERT_GT(s, 0);
    EXPECT_FALSE(dfa.accepting(s));
    EXPECT_EQ(dfa.Next(dfa.start(), 0x41), LexemeDfa::kDead);
    s = dfa.Next(s, 0);
    EXPECT_TRUE(dfa.accepting(s));
    EXPECT_TRUE(dfa.accepting(dfa.Next(s, 0x7f)));
    EXPECT_EQ(dfa.Next(s, 0x80), LexemeDfa::kDead);
}

TEST(GrammarDfaTest, StateLimitReportsOverflowAndStaysUsable) {
    // (a|b)*a(a|b){5}: the DFA must remember the last six bytes, 2^6 states.
    IrBuilder b;
    const int32_t ab = b.Chars("ab");
    const int32_t root = b.Cat({b.Star(ab), b.Chars("a"), b.Rep(ab, 5, 5)});
    LexemeDfa dfa(BuildLexemeNfa(b.g.regex, root), 10);
    std::mt19937 rng(7);
    int32_t state = dfa.start();
    bool overflowed = false;
    for (int i = 0; i < 200 && !overflowed; ++i) {
        const int32_t next = dfa.Next(state, "ab"[rng() % 2]);
        if (next == LexemeDfa::kOverflow) {
            overflowed = true;
        } else {
            ASSERT_NE(next, LexemeDfa::kDead);
            state = next;
        }
    }
    EXPECT_TRUE(overflowed);
    EXPECT_LE(dfa.num_states(), 10);
}

TEST(GrammarDfaTest, ConcurrentBuildersAgree) {
    // Two threads build the same lazy DFA at once; each must see the same
    // states as a DFA built alone.
    IrBuilder b;
    const int32_t ab = b.Chars("ab");
    const int32_t root = b.Cat({b.Star(ab), b.Chars("a"), b.Rep(ab, 7, 7)});
    LexemeDfa shared(BuildLexemeNfa(b.g.regex, root), 100000);
    LexemeDfa alone(BuildLexemeNfa(b.g.regex, root), 100000);
    std::string text;
    std::mt19937 rng(3);
    for (int i = 0; i < 4000; ++i) text += "ab"[rng() % 2];
    auto run = [&](const LexemeDfa& dfa, std::vector<char>* accepting) {
        int32_t s = dfa.start();
        for (char c : text) {
            s = dfa.Next(s, static_cast<uint8_t>(c));
            accepting->push_back(dfa.accepting(s));
        }
    };
    std::vector<char> t1, t2, reference;
    std::thread a([&] { run(shared, &t1); });
    std::thread c([&] { run(shared, &t2); });
    a.join();
    c.join();
    run(alone, &reference);
    EXPECT_EQ(t1, reference);
    EXPECT_EQ(t2, reference);
    EXPECT_EQ(shared.num_states(), alone.num_states());
}

}  // namespace
}  // namespace prepack::grammar
