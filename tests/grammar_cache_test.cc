// core/grammar/grammar_cache: a spec compiles once per vocabulary (also
// when many threads ask at once), least recently used entries go first,
// failures reach every caller of that compile and are never kept.
#include "core/grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include <latch>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace prepack::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> Vocab(std::vector<std::string> pieces) {
    VocabularyInfo info;
    info.token_bytes = std::move(pieces);
    info.token_bytes.push_back("");   // the end token
    info.end_tokens = {static_cast<int32_t>(info.token_bytes.size()) - 1};
    return std::make_shared<const TokenVocabulary>(std::move(info));
}

GrammarSpec Gbnf(std::string text) { return {GrammarSpec::Kind::kGbnf, std::move(text)}; }

TEST(GrammarCache, ASpecCompilesOncePerVocabulary) {
    GrammarCache cache;
    auto v1 = Vocab({"a", "b", "ab"});
    auto v2 = Vocab({"a", "b"});
    const GrammarSpec spec = Gbnf("root ::= \"a\"+ \"b\"");
    auto first = cache.Get(spec, v1);
    ASSERT_TRUE(first.ok()) << first.status();
    auto again = cache.Get(spec, v1);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(first->get(), again->get()) << "the same compiled grammar, not a copy";
    EXPECT_EQ(&(*first)->vocabulary(), v1.get());
    auto other = cache.Get(spec, v2);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_NE(other->get(), first->get()) << "another vocabulary is another grammar";
    EXPECT_EQ(&(*other)->vocabulary(), v2.get());
    // Same text, another kind: another key (a regex "a" is not GBNF "a").
    auto regex = cache.Get({GrammarSpec::Kind::kRegex, spec.text}, v1);
    EXPECT_TRUE(regex.ok() || regex.status().code() == absl::StatusCode::kInvalidArgument);
    const GrammarCacheStats st = cache.stats();
    EXPECT_EQ(st.hits, 1u);
    EXPECT_EQ(st.misses, 3u);
    EXPECT_GT(st.compile_seconds, 0.0);
}

TEST(GrammarCache, TheLeastRecentlyUsedEntryGoesFirst) {
    GrammarCacheOptions o;
    o.capacity = 2;
    GrammarCache cache(o);
    auto v = Vocab({"a", "b", "c"});
    const GrammarSpec a = Gbnf("root ::= \"a\""), b = Gbnf("root ::= \"b\""), c = Gbnf("root ::= \"c\"");
    ASSERT_TRUE(cache.Get(a, v).ok());
    ASSERT_TRUE(cache.Get(b, v).ok());
    ASSERT_TRUE(cache.Get(a, v).ok());   // a is now more recent than b
    ASSERT_TRUE(cache.Get(c, v).ok());   // evicts b
    GrammarCacheStats st = cache.stats();
    EXPECT_EQ(st.entries, 2);
    EXPECT_EQ(st.evictions, 1u);
    EXPECT_EQ(st.misses, 3u);
    EXPECT_EQ(st.hits, 1u);
    ASSERT_TRUE(cache.Get(a, v).ok());
    EXPECT_EQ(cache.stats().misses, 3u) << "a stayed";
    ASSERT_TRUE(cache.Get(b, v).ok());
    EXPECT_EQ(cache.stats().misses, 4u) << "b was evicted";
    EXPECT_EQ(cache.stats().entries, 2);
}

TEST(GrammarCache, ACapacityBelowOneKeepsOne) {
    GrammarCacheOptions o;
    o.capacity = 0;
    GrammarCache cache(o);
    auto v = Vocab({"a"});
    ASSERT_TRUE(cache.Get(Gbnf("root ::= \"a\""), v).ok());
    ASSERT_TRUE(cache.Get(Gbnf("root ::= \"a\""), v).ok());
    EXPECT_EQ(cache.stats().hits, 1u);
    EXPECT_EQ(cache.stats().entries, 1);
}

TEST(GrammarCache, FailuresAreReturnedUnchangedAndNotKept) {
    GrammarCache cache;
    auto v = Vocab({"a"});
    const GrammarSpec bad = Gbnf("root ::= undefined-rule");
    const absl::Status direct = BuildGrammar(bad).status();
    ASSERT_EQ(direct.code(), absl::StatusCode::kInvalidArgument) << direct;
    for (int i = 0; i < 2; ++i) {
        auto got = cache.Get(bad, v);
        ASSERT_FALSE(got.ok());
        EXPECT_EQ(got.status(), direct) << "the front end's error, unchanged";
    }
    const GrammarCacheStats st = cache.stats();
    EXPECT_EQ(st.misses, 2u) << "a failure is compiled again, not served from the cache";
    EXPECT_EQ(st.failures, 2u);
    EXPECT_EQ(st.entries, 0);
    EXPECT_EQ(cache.Get(bad, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

// A grammar big enough that its compile takes a while, so that threads
// started together overlap with it.
std::string SlowGrammar(int salt) {
    std::string text = "root ::= r0\n";
    for (int i = 0; i < 300; ++i) {
        absl::StrAppend(&text, "r", i, " ::= \"", salt, "x", i, "\" ( \"(\" r", i + 1, " \")\" )?\n");
    }
    absl::StrAppend(&text, "r300 ::= [a-z]+\n");
    return text;
}

TEST(GrammarCache, ThreadsAskingTogetherShareOneCompile) {
    GrammarCache cache;
    auto v = Vocab({"a", "b", "(", ")", "x", "0", "1"});
    constexpr int kThreads = 8;
    for (int round = 0; round < 3; ++round) {
        const GrammarSpec spec = Gbnf(SlowGrammar(round));
        std::vector<const CompiledGrammar*> got(kThreads, nullptr);
        std::latch start(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                start.arrive_and_wait();
                auto g = cache.Get(spec, v);
                ASSERT_TRUE(g.ok()) << g.status();
                got[t] = g->get();
            });
        }
        for (auto& t : threads) t.join();
        EXPECT_EQ(std::set<const CompiledGrammar*>(got.begin(), got.end()).size(), 1u) << "round " << round;
    }
    const GrammarCacheStats st = cache.stats();
    EXPECT_EQ(st.misses, 3u) << "one compile per spec";
    EXPECT_EQ(st.hits, 3u * (kThreads - 1));
}

TEST(GrammarCache, ThreadsWaitingOnAFailingCompileAllGetItsError) {
    GrammarCache cache;
    auto v = Vocab({"a"});
    // A valid start, then a reference nobody defines, after a long prefix.
    const GrammarSpec spec = Gbnf(SlowGrammar(7) + "extra ::= missing\n");
    const absl::Status direct = BuildGrammar(spec).status();
    ASSERT_FALSE(direct.ok());
    constexpr int kThreads = 6;
    std::vector<absl::Status> got(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            start.arrive_and_wait();
            got[t] = cache.Get(spec, v).status();
        });
    }
    for (auto& t : threads) t.join();
    for (const absl::Status& s : got) EXPECT_EQ(s, direct);
    EXPECT_EQ(cache.stats().entries, 0);
    EXPECT_EQ(cache.stats().failures, cache.stats().misses);
}

}  // namespace
}  // namespace prepack::grammar
