// Structured output through the engine: constrained requests batched with
// unconstrained ones under every policy (with preemption) get exactly the
// tokens they get alone through Generate(), their text is a sentence of
// their grammar, a batch compiles each spec once, and the request errors
// (a spec its front end refuses, a grammar with ignore_eos) come back at
// submission. On the real chat model SmolLM2-135M-Instruct (skipped when
// absent), JSON mode and a JSON Schema give answers that parse and satisfy
// the schema.
#include <regex>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine/engine.h"
#include "core/grammar/grammar_spec.h"
#include "tests/solo_oracle.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using Kind = grammar::GrammarSpec::Kind;

struct Collected {
    std::vector<int32_t> tokens;
    std::string          text;
    Event                finish;
};

Collected Collect(Stream& s) {
    Collected c;
    Event e;
    while (s.Next(&e, -1)) {
        if (e.kind == Event::Kind::kToken) {
            c.tokens.push_back(e.token);
            c.text += e.text;
        } else {
            c.finish = e;
        }
    }
    return c;
}

std::unique_ptr<Engine> MakeEngine(const std::string& model, SchedulePolicy policy, uint64_t kv_budget = 0,
                                   int32_t max_batch_tokens = 64) {
    EngineOptions o;
    o.model = model;
    o.policy = policy;
    o.threads = 2;
    o.kv_budget_bytes = kv_budget;
    o.max_batch_tokens = max_batch_tokens;
    auto e = Engine::Create(o);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
}

// Words and a full stop: the synthetic model's vocabulary spells them (it
// has every byte), its random weights would not write them unasked.
const char kSentence[] = "[a-z]{2,8}( [a-z]{2,8}){1,3}\\.";
// Up to three brackets around a number, as GBNF rules (the context-free
// case is continuation_test's; bounded here so every run can finish).
const char kNested[] = "root ::= \"[\" l1 \"]\" | num\nl1 ::= \"[\" l2 \"]\" | num\n"
                       "l2 ::= \"[\" num \"]\" | num\nnum ::= [0-9]{1,4}";

bool IsNested(const std::string& s) {
    const size_t open = s.find_first_not_of('[');
    if (open == std::string::npos) return false;
    const size_t close = s.find_first_not_of("0123456789", open);
    const size_t digits = (close == std::string::npos ? s.size() : close) - open;
    return digits > 0 && s.substr(open + digits) == std::string(open, ']');
}

// A prompt token of the synthetic vocabulary that is a whole piece of text
// (ids below 259 are <unk>, <s>, </s> and bytes; a prompt ending in part of
// a UTF-8 sequence would join the output's first bytes in its text).
int32_t PieceId(int i) { return 259 + i % 250; }

// Three groups of four requests sharing a 48-token prefix (so BatchLLM
// groups them and LRU shares), every other one constrained, and two loners.
std::vector<Request> MixedBatch() {
    std::vector<Request> reqs;
    for (int g = 0; g < 3; ++g) {
        for (int m = 0; m < 4; ++m) {
            Request r;
            for (int t = 0; t < 48; ++t) r.prompt_tokens.push_back(PieceId(g * 97 + t * 13));
            for (int t = 0; t < 5 + 3 * m; ++t) r.prompt_tokens.push_back(PieceId(g * 31 + m * 7 + t * 11));
            r.sampling.temperature = m % 2 ? 0.8f : 0.0f;
            r.sampling.seed = g * 10 + m;
            if (m % 2 == 0) {
                r.grammar = {g == 2 ? Kind::kGbnf : Kind::kRegex, g == 2 ? kNested : kSentence};
                r.max_tokens = 48;   // every byte is a token: room for the longest sentence
            } else {
                r.max_tokens = 24 + 2 * m + g;
                r.ignore_eos = true;
            }
            reqs.push_back(r);
        }
    }
    for (int l = 0; l < 2; ++l) {
        Request r;
        for (int t = 0; t < 17 + l; ++t) r.prompt_tokens.push_back(PieceId(l * 50 + t));
        r.max_tokens = 48;
        r.sampling.temperature = l ? 1.0f : 0.0f;
        r.sampling.seed = 99;
        r.grammar = {Kind::kRegex, kSentence};
        reqs.push_back(r);
    }
    return reqs;
}

void ExpectFollowsItsGrammar(const Request& r, const Collected& c) {
    ASSERT_TRUE(c.finish.status.ok()) << c.finish.status;
    // Every constrained request here ends by its grammar, not by length.
    ASSERT_TRUE(c.finish.finish_reason == FinishReason::kStop || c.finish.finish_reason == FinishReason::kEos)
        << FinishReasonName(c.finish.finish_reason) << ": " << c.text;
    if (r.grammar.kind == Kind::kRegex) {
        EXPECT_TRUE(std::regex_match(c.text, std::regex(r.grammar.text))) << c.text;
        // A full stop ends the sentence: nothing may follow, so no end token.
        EXPECT_EQ(c.finish.finish_reason, FinishReason::kStop);
    } else {
        EXPECT_TRUE(IsNested(c.text)) << c.text;
    }
}

TEST(EngineGrammar, ConstrainedBesideUnconstrainedUnderEveryPolicyGetSoloTokens) {
    const std::vector<Request> reqs = MixedBatch();
    auto solo_model = Model::Load("synthetic:tiny");
    ASSERT_TRUE(solo_model.ok());
    std::vector<std::vector<int32_t>> want;
    for (const Request& r : reqs) want.push_back(testing::SoloGenerate(**solo_model, r).tokens);
    const auto cfg = SyntheticConfig("tiny").value();
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        SCOPED_TRACE(SchedulePolicyName(policy));
        // KV for 160 tokens (the longest request needs 110): the batch
        // cannot be resident at once, so FCFS and LRU preempt and recompute
        // sequences (BatchLLM admits by group and may not need to); a
        // recompute must not feed the grammar the tokens it already has.
        auto engine = MakeEngine("synthetic:tiny", policy, cfg.KvBytesPerToken() * 16 * 10);
        ASSERT_NE(engine, nullptr);
        auto streams = engine->SubmitBatch(reqs);
        ASSERT_EQ(streams.size(), reqs.size());
        for (size_t i = 0; i < reqs.size(); ++i) {
            SCOPED_TRACE(i);
            ASSERT_TRUE(streams[i].ok()) << streams[i].status();
            const Collected c = Collect(**streams[i]);
            EXPECT_EQ(c.tokens, want[i]);
            if (reqs[i].grammar.active()) ExpectFollowsItsGrammar(reqs[i], c);
        }
        const EngineStats st = engine->Stats();
        if (policy != SchedulePolicy::kBatchLlm) {
            EXPECT_GT(st.preemptions, 0u) << "the budget forced no preemption";
        }
        std::printf("%s: %llu preemptions\n", SchedulePolicyName(policy), (unsigned long long)st.preemptions);
        // Two specs in the batch: each compiled once, the other requests reuse it.
        EXPECT_EQ(st.grammar_cache_misses, 2u);
        EXPECT_EQ(st.grammar_cache_hits, 8u - 2u);
        EXPECT_GT(st.grammar_compile_seconds, 0.0);
    }
}

TEST(EngineGrammar, ClientThreadsWithOneSpecShareItsCompile) {
    auto engine = MakeEngine("synthetic:tiny", SchedulePolicy::kFcfs);
    ASSERT_NE(engine, nullptr);
    std::vector<std::thread> threads;
    std::vector<Collected> got(6);
    for (size_t i = 0; i < got.size(); ++i) {
        threads.emplace_back([&, i] {
            Request r;
            r.prompt = "thread " + std::to_string(i);
            r.max_tokens = 48;
            r.sampling.seed = i;
            r.grammar = {Kind::kRegex, kSentence};
            auto s = engine->Submit(r);
            ASSERT_TRUE(s.ok()) << s.status();
            got[i] = Collect(**s);
        });
    }
    for (auto& t : threads) t.join();
    for (const Collected& c : got) {
        EXPECT_TRUE(std::regex_match(c.text, std::regex(kSentence))) << c.text;
    }
    EXPECT_EQ(engine->Stats().grammar_cache_misses, 1u);
    EXPECT_EQ(engine->Stats().grammar_cache_hits, 5u);
}

TEST(EngineGrammar, RequestErrorsComeBackAtSubmission) {
    auto engine = MakeEngine("synthetic:tiny", SchedulePolicy::kFcfs);
    ASSERT_NE(engine, nullptr);
    Request r;
    r.prompt = "hello";
    r.max_tokens = 8;
    r.grammar = {Kind::kRegex, "(ab"};
    const absl::Status front_end = grammar::BuildGrammar(r.grammar).status();
    ASSERT_EQ(front_end.code(), absl::StatusCode::kInvalidArgument) << front_end;
    EXPECT_EQ(engine->Submit(r).status(), front_end) << "the front end's error, unchanged";
    r.grammar = {Kind::kGbnf, "root ::= nowhere"};
    EXPECT_EQ(engine->Submit(r).status(), grammar::BuildGrammar(r.grammar).status());
    r.grammar = {Kind::kRegex, "[a-z]+"};
    r.ignore_eos = true;
    const absl::Status conflict = engine->Submit(r).status();
    EXPECT_EQ(conflict.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(conflict.message().find("ignore_eos"), std::string::npos) << conflict;
    // In a batch, a bad spec fails its own request only.
    Request good = r;
    good.ignore_eos = false;
    auto streams = engine->SubmitBatch({r, good});
    EXPECT_FALSE(streams[0].ok());
    ASSERT_TRUE(streams[1].ok()) << streams[1].status();
    const Collected c = Collect(**streams[1]);
    EXPECT_TRUE(c.finish.status.ok()) << c.finish.status;
    EXPECT_TRUE(std::regex_match(c.text, std::regex("[a-z]*"))) << c.text;
}

// ---------------------------------------------------------------------------
// SmolLM2-135M-Instruct: JSON from a real chat model.

const char kCatSchema[] = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 24},
    "age": {"type": "integer", "minimum": 0, "maximum": 40},
    "indoor": {"type": "boolean"}
  },
  "required": ["name", "age", "indoor"]
})";

Request ChatRequest(const std::string& question, grammar::GrammarSpec spec, int32_t max_tokens = 64) {
    Request r;
    auto conv = std::make_shared<Conversation>();
    conv->messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", question}}});
    r.chat = conv;
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0.0f;
    r.grammar = std::move(spec);
    return r;
}

std::vector<Request> ChatBatch() {
    return {
        // (Asked for "a JSON object describing a cat", this small model nests
        // objects until max_tokens; JSON mode lets it, as it should.)
        ChatRequest("Give me a JSON object with a cat's name and color.", {Kind::kJsonObject, ""}),
        ChatRequest("Describe a cat as JSON with its name, age and whether it lives indoors.",
                    {Kind::kJsonSchema, kCatSchema}),
        ChatRequest("Tell me one fact about cats.", {}, 16),
        ChatRequest("Is the sky blue? Answer yes or no.", {Kind::kRegex, "(yes|no)"}),
    };
}

void ExpectValidChatAnswer(const Request& r, const Collected& c) {
    ASSERT_TRUE(c.finish.status.ok()) << c.finish.status;
    if (!r.grammar.active()) return;
    EXPECT_NE(c.finish.finish_reason, FinishReason::kLength) << "an unfinished answer: " << c.text;
    if (r.grammar.kind == Kind::kRegex) {
        EXPECT_TRUE(c.text == "yes" || c.text == "no") << c.text;
        return;
    }
    const nlohmann::json j = nlohmann::json::parse(c.text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << c.text;
    ASSERT_TRUE(j.is_object()) << c.text;
    if (r.grammar.kind == Kind::kJsonSchema) {
        ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << c.text;
        EXPECT_LE(j["name"].get<std::string>().size(), 24u) << c.text;
        ASSERT_TRUE(j.contains("age") && j["age"].is_number_integer()) << c.text;
        EXPECT_GE(j["age"].get<int64_t>(), 0);
        EXPECT_LE(j["age"].get<int64_t>(), 40);
        ASSERT_TRUE(j.contains("indoor") && j["indoor"].is_boolean()) << c.text;
        EXPECT_EQ(j.size(), 3u) << "closed object: no other keys: " << c.text;
    }
}

TEST(EngineGrammarChatModel, JsonAnswersParseUnderEveryPolicyAndMatchTheirSoloRuns) {
    PREPACK_REQUIRE_CHAT_MODEL();
    const std::vector<Request> reqs = ChatBatch();
    std::vector<std::vector<int32_t>> solo;
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        SCOPED_TRACE(SchedulePolicyName(policy));
        auto engine = MakeEngine(testing::ChatModelPath(), policy, 0, 512);
        ASSERT_NE(engine, nullptr);
        if (policy == SchedulePolicy::kFcfs) {
            // Alone first (FCFS shares nothing, so alone and batched compute alike).
            for (const Request& r : reqs) solo.push_back(Collect(*engine->Submit(r).value()).tokens);
        }
        auto streams = engine->SubmitBatch(reqs);
        for (size_t i = 0; i < reqs.size(); ++i) {
            SCOPED_TRACE(i);
            ASSERT_TRUE(streams[i].ok()) << streams[i].status();
            const Collected c = Collect(**streams[i]);
            ExpectValidChatAnswer(reqs[i], c);
            if (policy == SchedulePolicy::kFcfs) {
                EXPECT_EQ(c.tokens, solo[i]) << "greedy: the same alone and batched";
            }
            std::printf("[%s] %s -> %s (%s)\n", SchedulePolicyName(policy), reqs[i].chat->messages[0]["content"]
                        .get<std::string>().c_str(), c.text.c_str(), FinishReasonName(c.finish.finish_reason));
        }
    }
}

}  // namespace
}  // namespace prepack
