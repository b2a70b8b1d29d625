// The engine: many client threads, one scheduler thread batching them all.
// Every request must get exactly the tokens it gets alone, whatever else runs
// beside it, whatever is preempted or cancelled, and KV must return to zero.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine/engine.h"
#include "core/model/reference.h"
#include "core/request/sampler.h"
#include "tests/solo_oracle.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

struct Collected {
    std::vector<int32_t> tokens;
    std::string          text;
    Event                finish;
    std::shared_ptr<const std::vector<Event::PromptLogprob>> prompt_logprobs;   // the first token's
};

Collected Collect(Stream& s) {
    Collected c;
    Event e;
    while (s.Next(&e, -1)) {
        if (e.kind == Event::Kind::kToken) {
            if (e.prompt_logprobs) {
                EXPECT_TRUE(c.tokens.empty()) << "prompt log-probs come with the first token only";
                c.prompt_logprobs = e.prompt_logprobs;
            }
            c.tokens.push_back(e.token);
            c.text += e.text;
            EXPECT_LE(e.logprob, 0.0f);
        } else {
            c.finish = e;
        }
    }
    return c;
}

// The tokens `r` gets alone: the oracle.
std::vector<int32_t> Alone(const Model& m, const Request& r) { return testing::SoloGenerate(m, r).tokens; }

// Each request submitted from its own thread, all at once; what each got.
std::vector<Collected> SubmitFromThreads(Engine& engine, const std::vector<Request>& reqs) {
    std::vector<Collected> got(reqs.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < reqs.size(); ++i) {
        threads.emplace_back([&, i] {
            auto s = engine.Submit(reqs[i]);
            ASSERT_TRUE(s.ok()) << s.status();
            got[i] = Collect(**s);
        });
    }
    for (auto& t : threads) t.join();
    return got;
}


// The scheduler publishes KV usage after each step: wait for it to settle.
uint64_t SettledKvBytes(const Engine& e) {
    for (int i = 0; i < 200 && e.Stats().kv_bytes_used != 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return e.Stats().kv_bytes_used;
}

std::unique_ptr<Engine> MakeEngine(const std::string& model, uint64_t kv_budget = 0, int max_batch_tokens = 256,
                                   SchedulePolicy policy = SchedulePolicy::kFcfs) {
    EngineOptions o;
    o.policy = policy;
    o.model = model;
    o.threads = 2;
    o.kv_budget_bytes = kv_budget;
    o.max_batch_tokens = max_batch_tokens;
    auto e = Engine::Create(o);
    EXPECT_TRUE(e.ok()) << e.status();
    return std::move(*e);
}

TEST(Engine, StoriesReferenceFromConcurrentThreads) {
    PREPACK_REQUIRE_STORIES();
    const auto ref = nlohmann::json::parse(testing::ReadFile(testing::StoriesDir() + "/reference.json"));
    auto engine = MakeEngine(testing::StoriesDir() + "/stories260K.gguf");
    std::vector<Request> reqs;
    for (const auto& c : ref["cases"]) {
        Request r;
        r.prompt = c["prompt"];
        r.max_tokens = 48;
        r.sampling.temperature = 0.0f;
        reqs.push_back(r);
    }
    const std::vector<Collected> got = SubmitFromThreads(*engine, reqs);
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].tokens, ref["cases"][i]["greedy_ids"].get<std::vector<int32_t>>());
        EXPECT_EQ(got[i].text, ref["cases"][i]["greedy_text"].get<std::string>());
        EXPECT_EQ(got[i].finish.finish_reason, FinishReason::kLength);
        EXPECT_TRUE(got[i].finish.status.ok());
        EXPECT_EQ(got[i].finish.usage.completion_tokens, 48);
    }
}

TEST(Engine, EightThreadsGetWhatTheyGetAlone) {
    auto engine = MakeEngine("synthetic:tiny");
    std::vector<Request> reqs;
    for (int i = 0; i < 8; ++i) {
        Request r;
        r.prompt = std::string("prompt number ") + std::to_string(i) + std::string(size_t(i * 7), 'x');
        r.max_tokens = 12 + 3 * i;
        r.sampling.temperature = i % 2 ? 0.9f : 0.0f;
        r.sampling.top_k = 20;
        r.sampling.seed = 100 + i;
        reqs.push_back(r);
    }
    const std::vector<Collected> got = SubmitFromThreads(*engine, reqs);
    for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].tokens, Alone(engine->model(), reqs[i])) << i;
    EXPECT_EQ(SettledKvBytes(*engine), 0u);
    EXPECT_EQ(engine->Stats().requests_finished, 8u);
}

TEST(Engine, PreemptionUnderKvPressureKeepsResultsExact) {
    // Room for ~160 tokens in all: eight requests of 30 + 40 tokens cannot
    // all be resident, so some are preempted and recomputed.
    const auto cfg = SyntheticConfig("tiny").value();
    auto engine = MakeEngine("synthetic:tiny", cfg.KvBytesPerToken() * 160, 64);
    std::vector<Request> reqs;
    for (int i = 0; i < 8; ++i) {
        Request r;
        for (int t = 0; t < 30; ++t) r.prompt_tokens.push_back(3 + (i * 31 + t * 7) % 500);
        r.max_tokens = 40;
        r.sampling.temperature = 0.7f;
        r.sampling.seed = i;
        r.ignore_eos = true;
        reqs.push_back(r);
    }
    std::vector<std::unique_ptr<Stream>> streams;
    for (const Request& r : reqs) streams.push_back(std::move(engine->Submit(r).value()));
    for (size_t i = 0; i < reqs.size(); ++i) {
        const Collected c = Collect(*streams[i]);
        EXPECT_EQ(c.tokens, Alone(engine->model(), reqs[i])) << i;
    }
    EXPECT_GT(engine->Stats().preemptions, 0u);
    EXPECT_EQ(SettledKvBytes(*engine), 0u);
}

TEST(Engine, CancelFromAnotherThreadEndsPromptlyAndFreesKv) {
    auto engine = MakeEngine("synthetic:tiny");
    Request r;
    r.prompt = "a long story";
    r.max_tokens = 1900;
    r.ignore_eos = true;
    auto s = engine->Submit(r);
    ASSERT_TRUE(s.ok());
    Event e;
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE((*s)->Next(&e, 10000));
        ASSERT_EQ(e.kind, Event::Kind::kToken);
    }
    std::thread canceller([&] { (*s)->Cancel(); });
    canceller.join();
    int more = 0;
    while ((*s)->Next(&e, 10000) && e.kind == Event::Kind::kToken) ++more;
    EXPECT_EQ(e.kind, Event::Kind::kFinish);
    EXPECT_EQ(e.finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(e.status.code(), absl::StatusCode::kCancelled);
    EXPECT_LT(more, 50) << "cancellation should take effect within a step or two";
    EXPECT_FALSE((*s)->Next(&e, 0)) << "nothing after the finish event";
    EXPECT_EQ(SettledKvBytes(*engine), 0u);
}

TEST(Engine, DeadlineEndsTheRequest) {
    auto engine = MakeEngine("synthetic:tiny");
    Request r;
    r.prompt = "tick";
    r.max_tokens = 1900;
    r.ignore_eos = true;
    r.deadline_ms = 30;
    auto s = engine->Submit(r);
    ASSERT_TRUE(s.ok());
    const Collected c = Collect(**s);
    EXPECT_EQ(c.finish.finish_reason, FinishReason::kError);
    EXPECT_EQ(c.finish.status.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_LT(c.tokens.size(), 1900u);
}

TEST(Engine, BadRequestsAreRejectedAtSubmit) {
    auto engine = MakeEngine("synthetic:tiny", SyntheticConfig("tiny").value().KvBytesPerToken() * 64);
    Request r;
    r.add_bos = false;
    EXPECT_EQ(engine->Submit(r).status().code(), absl::StatusCode::kInvalidArgument);   // empty, no BOS
    r.add_bos = true;
    r.prompt = "ok";
    r.max_tokens = 0;
    EXPECT_EQ(engine->Submit(r).status().code(), absl::StatusCode::kInvalidArgument);
    r.max_tokens = 5;
    r.sampling.top_p = 0.0f;
    EXPECT_EQ(engine->Submit(r).status().code(), absl::StatusCode::kInvalidArgument);
    r.sampling = SamplingParams{};
    r.prompt_tokens = {1, 99999};
    EXPECT_EQ(engine->Submit(r).status().code(), absl::StatusCode::kInvalidArgument);
    r.prompt_tokens.assign(200, 5);   // more than the 64-token budget
    auto s = engine->Submit(r);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(std::string(s.status().message()).find("KV"), std::string::npos);
}

TEST(Engine, ShutdownCancelsLiveStreams) {
    auto engine = MakeEngine("synthetic:tiny");
    Request r;
    r.prompt = "forever";
    r.max_tokens = 1900;
    r.ignore_eos = true;
    auto s = engine->Submit(r);
    ASSERT_TRUE(s.ok());
    Event e;
    ASSERT_TRUE((*s)->Next(&e, 10000));
    engine.reset();
    const Collected c = Collect(**s);
    EXPECT_EQ(c.finish.finish_reason, FinishReason::kCancelled);
}

// 3 groups x 4 requests sharing an 80-token prefix (long enough for cascade
// decode attention), plus 2 loners.
std::vector<Request> SharedPrefixBatch() {
    std::vector<Request> reqs;
    for (int g = 0; g < 3; ++g) {
        for (int m = 0; m < 4; ++m) {
            Request r;
            for (int t = 0; t < 80; ++t) r.prompt_tokens.push_back(3 + (g * 97 + t * 13) % 500);
            for (int t = 0; t < 5 + 3 * m; ++t) r.prompt_tokens.push_back(3 + (g * 31 + m * 7 + t * 11) % 500);
            r.max_tokens = 6 + 2 * m + g;
            r.sampling.temperature = m % 2 ? 0.8f : 0.0f;
            r.sampling.seed = g * 10 + m;
            r.ignore_eos = true;
            reqs.push_back(r);
        }
    }
    for (int l = 0; l < 2; ++l) {
        Request r;
        for (int t = 0; t < 17 + l; ++t) r.prompt_tokens.push_back(200 + l * 50 + t);
        r.max_tokens = 9;
        r.sampling.temperature = 0.0f;
        r.ignore_eos = true;
        reqs.push_back(r);
    }
    return reqs;
}

TEST(EngineLazy, PrunedRequestsGetWhatTheyGetAloneBesideOthers) {
    // Long prompts (one prefill step each), half of them pruned by LazyLLM
    // with different schedules, all running at once with unpruned ones.
    auto engine = MakeEngine("synthetic:tiny", 0, 512);
    std::vector<Request> reqs;
    for (int i = 0; i < 6; ++i) {
        Request r;
        for (int t = 0; t < 150 + 40 * i; ++t) r.prompt_tokens.push_back(1 + (t * (i + 3) * 37) % 500);
        r.max_tokens = 8;
        r.sampling.temperature = 0.0f;
        r.ignore_eos = true;
        r.lazy = i % 2 == 0;
        if (i == 2) r.lazy_schedule = "1:0.6,3:0.2";
        reqs.push_back(r);
    }
    const std::vector<Collected> got = SubmitFromThreads(*engine, reqs);
    const Model& m = engine->model();
    for (size_t i = 0; i < reqs.size(); ++i) {
        SCOPED_TRACE("request " + std::to_string(i));
        EXPECT_EQ(got[i].tokens, Alone(m, reqs[i]));
        const Usage& u = got[i].finish.usage;
        ASSERT_EQ(u.prompt_layer_fractions.size(), static_cast<size_t>(reqs[i].lazy ? 6 : 0));
        if (reqs[i].lazy) {
            EXPECT_GT(u.pruned_fraction, 0.3);
            EXPECT_DOUBLE_EQ(u.prompt_layer_fractions[0], 1.0);   // every schedule keeps layer 0 whole
            EXPECT_LT(u.prompt_layer_fractions[5], 0.5);
        } else {
            EXPECT_EQ(u.pruned_fraction, 0.0);
        }
    }
    const EngineStats st = engine->Stats();
    EXPECT_LT(st.prompt_fraction_computed, 0.9);
    EXPECT_GT(st.prompt_fraction_computed, 0.3);
    EXPECT_EQ(SettledKvBytes(*engine), 0u) << "aux cache or KV blocks not returned";

    // Bad schedules are refused at submission, naming the item.
    Request bad = reqs[0];
    bad.lazy_schedule = "9:0.5";
    auto s = engine->Submit(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find("9:0.5"), std::string::npos) << s.status();
    bad.lazy = false;
    EXPECT_EQ(engine->Submit(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EngineLazy, PreemptedPrunedRequestsStayExact) {
    // A KV budget too small for all of them: pruned requests are preempted
    // (their aux cache dropped with their blocks) and recomputed.
    const auto cfg = SyntheticConfig("tiny").value();
    auto engine = MakeEngine("synthetic:tiny", cfg.KvBytesPerToken() * 400, 256);
    std::vector<Request> reqs;
    for (int i = 0; i < 6; ++i) {
        Request r;
        for (int t = 0; t < 90; ++t) r.prompt_tokens.push_back(3 + (i * 31 + t * 7) % 500);
        r.max_tokens = 40;
        r.sampling.temperature = 0.0f;
        r.ignore_eos = true;
        r.lazy = true;
        reqs.push_back(r);
    }
    std::vector<std::unique_ptr<Stream>> streams;
    for (const Request& r : reqs) streams.push_back(std::move(engine->Submit(r).value()));
    for (size_t i = 0; i < reqs.size(); ++i) {
        const Collected c = Collect(*streams[i]);
        EXPECT_TRUE(c.finish.status.ok()) << c.finish.status;
        EXPECT_EQ(c.tokens, Alone(engine->model(), reqs[i])) << i;
    }
    EXPECT_GT(engine->Stats().preemptions, 0u);
    EXPECT_EQ(SettledKvBytes(*engine), 0u);
}

TEST(EnginePolicies, EveryPolicyGivesEachRequestItsSoloTokens) {
    const std::vector<Request> reqs = SharedPrefixBatch();
    auto solo_model = Model::Load("synthetic:tiny");
    ASSERT_TRUE(solo_model.ok());
    std::vector<std::vector<int32_t>> want;
    int64_t logical = 0, suffixes = 0;
    for (const Request& r : reqs) {
        want.push_back(Alone(**solo_model, r));
        logical += r.prompt_tokens.size();
    }
    for (size_t i = 0; i < 12; ++i) suffixes += reqs[i].prompt_tokens.size() - 80;
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        SCOPED_TRACE(SchedulePolicyName(policy));
        auto engine = MakeEngine("synthetic:tiny", 0, 64, policy);
        auto streams = engine->SubmitBatch(reqs);
        ASSERT_EQ(streams.size(), reqs.size());
        std::vector<Usage> usage;
        for (size_t i = 0; i < reqs.size(); ++i) {
            ASSERT_TRUE(streams[i].ok()) << streams[i].status();
            const Collected c = Collect(**streams[i]);
            EXPECT_EQ(c.tokens, want[i]) << "request " << i;
            EXPECT_TRUE(c.finish.status.ok());
            usage.push_back(c.finish.usage);
            if (policy == SchedulePolicy::kFcfs) {
                EXPECT_EQ(c.finish.usage.cached_prompt_tokens, 0);
            }
        }
        EXPECT_EQ(SettledKvBytes(*engine), 0u) << "KV returns to zero after the batch";
        const EngineStats st = engine->Stats();
        EXPECT_EQ(st.prompt_tokens, uint64_t(logical));
        if (policy == SchedulePolicy::kFcfs) {
            EXPECT_EQ(st.prompt_tokens_computed, uint64_t(logical));
        } else if (policy == SchedulePolicy::kBatchLlm) {
            // Each group's prefix once, every suffix and loner once: the tree's minimum.
            EXPECT_EQ(st.prompt_tokens_computed, uint64_t(3 * 80 + suffixes + 17 + 18));
            EXPECT_GT(st.cascade_decode_tokens, 0u) << "group members decode with cascade attention";
            for (size_t i = 0; i < 12; ++i) EXPECT_EQ(usage[i].cached_prompt_tokens, 80) << "member " << i;
        } else {
            EXPECT_LT(st.prompt_tokens_computed, uint64_t(logical));
        }
    }
}

// OpenAI's `n`: several choices of one prompt arrive together. Under `lru`
// the prompt is computed once: the later copies wait for its blocks and take
// them from the cache, computing only the tail a block does not cover.
TEST(EnginePolicies, LruComputesAPromptOnceForRequestsArrivingTogether) {
    Request r;
    for (int t = 0; t < 100; ++t) r.prompt_tokens.push_back(3 + (t * 37) % 500);
    r.max_tokens = 8;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    auto solo_model = Model::Load("synthetic:tiny");
    ASSERT_TRUE(solo_model.ok());
    const std::vector<int32_t> want = Alone(**solo_model, r);
    // Budgets of a whole prompt per step and of a chunk of it (the copies
    // then wait over several steps).
    for (int max_batch_tokens : {256, 32}) {
        SCOPED_TRACE(max_batch_tokens);
        auto engine = MakeEngine("synthetic:tiny", 0, max_batch_tokens, SchedulePolicy::kLru);
        // One batch: all four are waiting when the engine next plans (as
        // prepackd submits the choices of `n`).
        auto streams = engine->SubmitBatch(std::vector<Request>(4, r));
        int cached = 0;
        for (auto& s : streams) {
            ASSERT_TRUE(s.ok()) << s.status();
            const Collected c = Collect(**s);
            EXPECT_EQ(c.tokens, want);
            cached += c.finish.usage.cached_prompt_tokens;
        }
        // 16-token blocks: each copy takes 96 of its 100 tokens (never its last) from the first.
        EXPECT_EQ(cached, 3 * 96);
        EXPECT_EQ(engine->Stats().prompt_tokens_computed, uint64_t(100 + 3 * 4));
    }
}

// Prompt log-probs (echo + logprobs): each prompt token after the first
// scored by the naive reference pass fed the tokens before it, with its
// alternatives; whatever the chunking, beside requests that share its
// prefix, and with that prefix already cached (it must not be borrowed).
TEST(EnginePolicies, PromptLogprobsEqualTheReferencePass) {
    auto model = Model::Load("synthetic:tiny");
    ASSERT_TRUE(model.ok());
    Request r;
    for (int t = 0; t < 300; ++t) r.prompt_tokens.push_back(3 + (t * 53) % 500);
    r.max_tokens = 4;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    std::vector<float> want_logprob;
    std::vector<int32_t> want_best;
    ReferenceForward ref(**model);
    for (size_t t = 0; t + 1 < r.prompt_tokens.size(); ++t) {
        const std::vector<float>& logits = ref.Step(r.prompt_tokens[t]);
        want_logprob.push_back(LogSoftmaxAt(logits, r.prompt_tokens[t + 1]));
        want_best.push_back(ArgMax(logits));
    }
    const std::vector<int32_t> want_tokens = Alone(**model, r);
    Request scored = r;
    scored.prompt_logprobs = 3;
    for (int max_batch_tokens : {1024, 100}) {   // one chunk (capped at 256 rows), or chunks of 100
        SCOPED_TRACE(max_batch_tokens);
        auto engine = MakeEngine("synthetic:tiny", 0, max_batch_tokens, SchedulePolicy::kLru);
        // The plain copy first (its blocks are cached), then the scored one and another plain one together.
        (void)SubmitFromThreads(*engine, {r});
        const std::vector<Collected> got = SubmitFromThreads(*engine, {scored, r});
        EXPECT_EQ(got[0].tokens, want_tokens);
        EXPECT_EQ(got[1].tokens, want_tokens);
        EXPECT_EQ(got[1].prompt_logprobs, nullptr) << "not asked for";
        EXPECT_EQ(got[0].finish.usage.cached_prompt_tokens, 0) << "scored requests borrow no KV";
        ASSERT_NE(got[0].prompt_logprobs, nullptr);
        const std::vector<Event::PromptLogprob>& lp = *got[0].prompt_logprobs;
        ASSERT_EQ(lp.size(), r.prompt_tokens.size() - 1);
        for (size_t i = 0; i < lp.size(); ++i) {
            EXPECT_EQ(lp[i].token, r.prompt_tokens[i + 1]) << i;
            EXPECT_NEAR(lp[i].logprob, want_logprob[i], 2e-3) << i;
            ASSERT_EQ(lp[i].top.size(), 3u) << i;
            EXPECT_GE(lp[i].top[0].second, lp[i].top[1].second);
            EXPECT_GE(lp[i].top[0].second, lp[i].logprob - 1e-6f);
        }
        int best_agree = 0;   // near-ties may order differently between the passes
        for (size_t i = 0; i < lp.size(); ++i) best_agree += lp[i].top[0].first == want_best[i];
        EXPECT_GE(best_agree, static_cast<int>(lp.size()) - 3);
    }
    // Checked at submission: the range, and never with LazyLLM.
    auto engine = MakeEngine("synthetic:tiny");
    Request bad = scored;
    bad.prompt_logprobs = 21;
    EXPECT_EQ(engine->Submit(bad).status().code(), absl::StatusCode::kInvalidArgument);
    bad = scored;
    bad.lazy = true;
    EXPECT_EQ(engine->Submit(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

// A system prompt for all, a document per group of three, a question each.
std::vector<Request> TwoLevelBatch(int32_t max_tokens) {
    std::vector<Request> reqs;
    for (int g = 0; g < 3; ++g) {
        for (int m = 0; m < 3; ++m) {
            Request r;
            for (int t = 0; t < 40; ++t) r.prompt_tokens.push_back(3 + (t * 17) % 500);
            for (int t = 0; t < 50; ++t) r.prompt_tokens.push_back(3 + (g * 89 + t * 13) % 500);
            for (int t = 0; t < 4 + 5 * m; ++t) r.prompt_tokens.push_back(3 + (g * 31 + m * 7 + t * 11) % 500);
            r.max_tokens = max_tokens;
            r.sampling.temperature = 0.0f;
            r.ignore_eos = true;
            reqs.push_back(r);
        }
    }
    return reqs;
}

TEST(EnginePolicies, TinyKvBudgetKeepsEveryPolicyExactAndBatchLlmComputesEachPrefixOnce) {
    // 16 blocks of 16 tokens: a member grows to 9 blocks (4 of them its
    // own under batchllm, which pins the system prompt's 3 and 4 per
    // document), so no policy can run all that it admits without preempting.
    const std::vector<Request> reqs = TwoLevelBatch(40);
    auto solo_model = Model::Load("synthetic:tiny");
    ASSERT_TRUE(solo_model.ok());
    std::vector<std::vector<int32_t>> want;
    int64_t own = 0;
    for (const Request& r : reqs) {
        want.push_back(Alone(**solo_model, r));
        own += static_cast<int64_t>(r.prompt_tokens.size()) - 90;
    }
    const auto cfg = SyntheticConfig("tiny").value();
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        SCOPED_TRACE(SchedulePolicyName(policy));
        auto engine = MakeEngine("synthetic:tiny", cfg.KvBytesPerToken() * 16 * 16, 64, policy);
        auto streams = engine->SubmitBatch(reqs);
        for (size_t i = 0; i < reqs.size(); ++i) {
            ASSERT_TRUE(streams[i].ok()) << streams[i].status();
            const Collected c = Collect(**streams[i]);
            EXPECT_TRUE(c.finish.status.ok()) << c.finish.status;
            EXPECT_EQ(c.tokens, want[i]) << "request " << i;
        }
        const EngineStats st = engine->Stats();
        EXPECT_GT(st.preemptions, 0u) << "the budget did not force preemption";
        if (policy == SchedulePolicy::kBatchLlm) {
            EXPECT_EQ(st.prefix_tokens_recomputed, 0u);
            // The system prompt once, each document once; members recompute
            // only their own tokens when preempted.
            EXPECT_GE(st.prompt_tokens_computed, uint64_t(40 + 3 * 50 + own));
        }
        EXPECT_EQ(SettledKvBytes(*engine), 0u);
    }
}

TEST(Engine, ARequestOutgrowingTheWholeKvBudgetEndsWithTheReason) {
    // 64 tokens of KV in all: a 20-token prompt asking for 100 more can never
    // fit; it ends with RESOURCE_EXHAUSTED after the tokens that fit, never hangs.
    const auto cfg = SyntheticConfig("tiny").value();
    auto engine = MakeEngine("synthetic:tiny", cfg.KvBytesPerToken() * 64, 64);
    Request r;
    for (int t = 0; t < 20; ++t) r.prompt_tokens.push_back(3 + t);
    r.max_tokens = 100;
    r.ignore_eos = true;
    auto s = engine->Submit(r);
    ASSERT_TRUE(s.ok()) << s.status();
    const Collected c = Collect(**s);
    EXPECT_EQ(c.finish.status.code(), absl::StatusCode::kResourceExhausted) << c.finish.status;
    EXPECT_NE(std::string(c.finish.status.message()).find("KV budget"), std::string::npos) << c.finish.status;
    EXPECT_GE(c.tokens.size(), 40u);
    EXPECT_LT(c.tokens.size(), 100u);
    EXPECT_EQ(SettledKvBytes(*engine), 0u);
}

TEST(EnginePolicies, CancelledGroupMembersReleaseThePrefix) {
    std::vector<Request> reqs = SharedPrefixBatch();
    for (Request& r : reqs) r.max_tokens = 200;
    auto engine = MakeEngine("synthetic:tiny", 0, 32, SchedulePolicy::kBatchLlm);
    auto streams = engine->SubmitBatch(reqs);
    for (auto& s : streams) {
        ASSERT_TRUE(s.ok());
        (*s)->Cancel();
    }
    for (auto& s : streams) {
        const Collected c = Collect(**s);
        EXPECT_EQ(c.finish.finish_reason, FinishReason::kCancelled);
    }
    EXPECT_EQ(SettledKvBytes(*engine), 0u);
}

}  // namespace
}  // namespace prepack
