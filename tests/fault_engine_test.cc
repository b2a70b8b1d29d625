// Fault injection against the engine: KV exhaustion under many concurrent
// requests, cancellation storms, 1 ms deadlines, hostile sampling values,
// huge max_tokens and stop strings that straddle token boundaries. The
// oracle is always independent of the engine under test: Generate() on a
// private KV pool (what a request gets alone), and KV usage back at zero.
// Already covered elsewhere (not repeated): invalid UTF-8, ids outside the
// vocabulary, max_tokens 0 and negative (generate_test, engine_test);
// a single cancel and a single deadline (engine_test); preemption exactness
// for 8 requests (engine_test).
#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "tests/solo_oracle.h"

namespace prepack {
namespace {

struct Result {
    std::vector<int32_t> tokens;
    std::string          text;
    Event                finish;
    bool                 finished = false;
};

Result Drain(Stream& s) {
    Result r;
    Event e;
    while (s.Next(&e, -1)) {   // no timeout: sanitizer builds are slow; ctest bounds a hang
        if (e.kind == Event::Kind::kToken) {
            r.tokens.push_back(e.token);
            r.text += e.text;
        } else {
            r.finish = e;
            r.finished = true;
        }
    }
    return r;
}


uint64_t SettledKv(const Engine& e) {
    for (int i = 0; i < 400 && e.Stats().kv_bytes_used != 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return e.Stats().kv_bytes_used;
}

std::unique_ptr<Engine> Tiny(uint64_t kv_tokens, int max_batch_tokens = 64) {
    EngineOptions o;
    o.model = "synthetic:tiny";
    o.threads = 2;
    o.kv_budget_bytes = SyntheticConfig("tiny").value().KvBytesPerToken() * kv_tokens;
    o.max_batch_tokens = max_batch_tokens;
    auto e = Engine::Create(o);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
}

Request Numbered(int i, int prompt_len, int max_tokens) {
    Request r;
    for (int t = 0; t < prompt_len; ++t) r.prompt_tokens.push_back(3 + (i * 37 + t * 11) % 500);
    r.max_tokens = max_tokens;
    r.sampling.temperature = i % 3 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 1000 + i;
    r.ignore_eos = true;
    return r;
}

// 32 clients at once into room for 160 tokens: requests wait for memory or
// are preempted and recomputed; prompts that can never fit are refused at
// once. Every accepted request still gets exactly its solo tokens and all
// KV memory comes back.
TEST(FaultEngine, KvExhaustionUnderManyConcurrentRequests) {
    auto engine = Tiny(160);
    ASSERT_NE(engine, nullptr);
    constexpr int kClients = 32;
    std::vector<Request> reqs;
    for (int i = 0; i < kClients; ++i) reqs.push_back(Numbered(i, i % 8 == 7 ? 400 : 10 + i % 23, 6 + i % 17));
    std::vector<absl::StatusCode> submit(kClients);
    std::vector<Result> got(kClients);
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
        threads.emplace_back([&, i] {
            auto s = engine->Submit(reqs[i]);
            submit[i] = s.status().code();
            if (s.ok()) got[i] = Drain(**s);
        });
    }
    for (auto& t : threads) t.join();
    int refused = 0;
    for (int i = 0; i < kClients; ++i) {
        if (reqs[i].prompt_tokens.size() >= 160) {
            EXPECT_EQ(submit[i], absl::StatusCode::kResourceExhausted) << i;
            ++refused;
            continue;
        }
        ASSERT_EQ(submit[i], absl::StatusCode::kOk) << i;
        ASSERT_TRUE(got[i].finished) << i;
        EXPECT_TRUE(got[i].finish.status.ok()) << i << ": " << got[i].finish.status;
        EXPECT_EQ(got[i].tokens, testing::SoloGenerate(engine->model(), reqs[i]).tokens) << "request " << i << " was corrupted";
    }
    EXPECT_EQ(refused, kClients / 8);
    EXPECT_GT(engine->Stats().preemptions, 0u) << "the budget should have forced preemption";
    EXPECT_EQ(SettledKv(*engine), 0u);
}

// 300 requests from 4 threads, each cancelled at a random point: before its
// first step, during a chunked prefill (prompts up to 120 tokens, 32 tokens
// per step), after a few tokens, or by destroying the stream unread. Every
// read stream ends with one finish event; afterwards KV is back to zero and
// the engine still gives fresh requests their solo tokens.
TEST(FaultEngine, CancellationStormLeavesTheEngineHealthy) {
    auto engine = Tiny(2048, 32);
    ASSERT_NE(engine, nullptr);
    constexpr int kThreads = 4, kPerThread = 75;
    std::atomic<int> finished{0}, cancelled{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(77 + t);
            for (int k = 0; k < kPerThread; ++k) {
                const int i = t * kPerThread + k;
                Request r = Numbered(i, 1 + static_cast<int>(rng() % 120), 1 + static_cast<int>(rng() % 40));
                auto s = engine->Submit(r);
                ASSERT_TRUE(s.ok()) << s.status();
                Stream& stream = **s;
                Event e;
                switch (rng() % 4) {
                    case 0: stream.Cancel(); break;                       // likely before or in prefill
                    case 1:                                               // after some prefill time
                        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
                        stream.Cancel();
                        break;
                    case 2: {                                             // after 0..3 tokens
                        const int n = static_cast<int>(rng() % 4);
                        for (int j = 0; j < n && stream.Next(&e, -1) && e.kind == Event::Kind::kToken; ++j) {
                        }
                        stream.Cancel();
                        break;
                    }
                    default: s->reset(); continue;                        // dropped unread: the destructor cancels
                }
                const Result res = Drain(stream);
                if (e.kind == Event::Kind::kFinish) {
                    ++finished;   // it ended (length) before the cancel landed
                    continue;
                }
                ASSERT_TRUE(res.finished) << "a stream ended without its finish event";
                if (res.finish.finish_reason == FinishReason::kCancelled) {
                    EXPECT_EQ(res.finish.status.code(), absl::StatusCode::kCancelled);
                    ++cancelled;
                } else {
                    EXPECT_EQ(res.finish.finish_reason, FinishReason::kLength);   // finished first
                    ++finished;
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_GT(cancelled.load(), 100) << "most cancels should land";
    EXPECT_EQ(SettledKv(*engine), 0u);
    const EngineStats st = engine->Stats();
    EXPECT_EQ(st.requests_submitted, static_cast<uint64_t>(kThreads * kPerThread));
    for (int i = 0; i < 200 && engine->Stats().requests_finished != st.requests_submitted; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(engine->Stats().requests_finished, st.requests_submitted);
    EXPECT_EQ(engine->Stats().requests_running + engine->Stats().requests_waiting, 0u);
    // Still correct afterwards.
    for (int i = 0; i < 4; ++i) {
        const Request r = Numbered(900 + i, 20 + 9 * i, 12);
        auto s = engine->Submit(r);
        ASSERT_TRUE(s.ok());
        EXPECT_EQ(Drain(**s).tokens, testing::SoloGenerate(engine->model(), r).tokens) << i;
    }
    std::printf("cancellation storm: %d cancelled, %d finished first\n", cancelled.load(), finished.load());
}

// Fifty requests with a 1 ms budget, submitted together: each ends with
// DEADLINE_EXCEEDED (none can prefill and decode 50 tokens in 1 ms), its
// KV is freed, and a request without a deadline beside them is unaffected.
TEST(FaultEngine, OneMillisecondDeadlines) {
    auto engine = Tiny(2048);
    ASSERT_NE(engine, nullptr);
    const Request normal = Numbered(1, 30, 20);
    auto ns = engine->Submit(normal);
    ASSERT_TRUE(ns.ok());
    std::vector<std::unique_ptr<Stream>> streams;
    for (int i = 0; i < 50; ++i) {
        Request r = Numbered(100 + i, 5 + i % 40, 50);
        r.deadline_ms = 1;
        auto s = engine->Submit(r);
        ASSERT_TRUE(s.ok()) << s.status();
        streams.push_back(std::move(*s));
    }
    for (auto& s : streams) {
        const Result r = Drain(*s);
        ASSERT_TRUE(r.finished);
        EXPECT_EQ(r.finish.finish_reason, FinishReason::kError);
        EXPECT_EQ(r.finish.status.code(), absl::StatusCode::kDeadlineExceeded);
        EXPECT_LT(r.tokens.size(), 50u);
    }
    EXPECT_EQ(Drain(**ns).tokens, testing::SoloGenerate(engine->model(), normal).tokens);
    EXPECT_EQ(SettledKv(*engine), 0u);
}

// NaN, infinite and negative sampling values are refused at submission with
// the field named; nothing is queued.
TEST(FaultEngine, NonFiniteAndNegativeSamplingValuesAreRefused) {
    auto engine = Tiny(256);
    ASSERT_NE(engine, nullptr);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    struct Case {
        const char* field;
        void (*set)(SamplingParams&, float);
        float value;
    };
    const Case cases[] = {
        {"temperature", [](SamplingParams& p, float v) { p.temperature = v; }, nan},
        {"temperature", [](SamplingParams& p, float v) { p.temperature = v; }, -0.5f},
        {"temperature", [](SamplingParams& p, float v) { p.temperature = v; }, inf},
        {"top_p", [](SamplingParams& p, float v) { p.top_p = v; }, nan},
        {"min_p", [](SamplingParams& p, float v) { p.min_p = v; }, nan},
        {"min_p", [](SamplingParams& p, float v) { p.min_p = v; }, -0.1f},
        {"repetition_penalty", [](SamplingParams& p, float v) { p.repetition_penalty = v; }, nan},
        {"repetition_penalty", [](SamplingParams& p, float v) { p.repetition_penalty = v; }, -1.0f},
    };
    for (const Case& c : cases) {
        Request r = Numbered(0, 4, 4);
        c.set(r.sampling, c.value);
        auto s = engine->Submit(r);
        EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.field << " = " << c.value;
        EXPECT_NE(std::string(s.status().message()).find(c.field), std::string::npos) << s.status();
    }
    EXPECT_EQ(engine->Stats().requests_submitted, 0u);
}

// max_tokens = INT32_MAX is not an error: generation stops at the end of the
// context (finish reason length) with exactly context - prompt tokens.
TEST(FaultEngine, HugeMaxTokensStopsAtTheContext) {
    auto engine = Tiny(2048 + 16);
    ASSERT_NE(engine, nullptr);
    const int32_t ctx = engine->model().config().max_context;
    Request r = Numbered(5, ctx - 6, std::numeric_limits<int32_t>::max());
    auto s = engine->Submit(r);
    ASSERT_TRUE(s.ok()) << s.status();
    const Result res = Drain(**s);
    EXPECT_EQ(res.finish.finish_reason, FinishReason::kLength);
    EXPECT_EQ(static_cast<int32_t>(res.tokens.size()), 6);
    EXPECT_EQ(SettledKv(*engine), 0u);
}

// A stop string made of the end of one generated token and the start of the
// next (so no single token contains it) ends the request exactly there: the
// text is the solo text up to the stop, the tokens a prefix of the solo ones.
TEST(FaultEngine, StopStringsStraddlingTokenBoundaries) {
    auto engine = Tiny(2048);
    ASSERT_NE(engine, nullptr);
    const Tokenizer& tok = engine->model().tokenizer();
    int checked = 0;
    for (int i = 0; i < 16 && checked < 4; ++i) {
        Request r = Numbered(40 + i, 8, 24);
        r.sampling.temperature = 0.0f;
        const GenerateResult solo = testing::SoloGenerate(engine->model(), r);
        // Where each token's text ends in the solo text, by the streaming
        // decoder (split code points are held back, invalid bytes become
        // U+FFFD, exactly as the engine streams text), prompt pushed first.
        StreamDecoder dec(tok);
        for (int32_t id : r.prompt_tokens) dec.Push(id);
        std::vector<size_t> ends;
        std::string spelled;
        for (int32_t id : solo.tokens) ends.push_back((spelled += dec.Push(id)).size());
        if (spelled != solo.text.substr(0, spelled.size())) continue;
        for (size_t k = 1; k + 1 < ends.size(); ++k) {
            const size_t at = ends[k];   // boundary between token k and token k + 1
            if (ends[k] == ends[k - 1] || ends[k + 1] == ends[k]) continue;   // both print something
            const std::string stop = solo.text.substr(at - 1, 2);
            if (static_cast<unsigned char>(stop[0]) >= 0x80 || static_cast<unsigned char>(stop[1]) >= 0x80) continue;
            if (solo.text.find(stop) != at - 1) continue;   // it must first occur across this boundary
            Request with_stop = r;
            with_stop.stop = {stop};
            auto s = engine->Submit(with_stop);
            ASSERT_TRUE(s.ok());
            const Result res = Drain(**s);
            EXPECT_EQ(res.finish.finish_reason, FinishReason::kStop) << "stop '" << stop << "'";
            EXPECT_EQ(res.text, solo.text.substr(0, at - 1)) << "stop '" << stop << "'";
            ASSERT_LE(res.tokens.size(), solo.tokens.size());
            EXPECT_TRUE(std::equal(res.tokens.begin(), res.tokens.end(), solo.tokens.begin()));
            ++checked;
            break;
        }
    }
    EXPECT_GE(checked, 2) << "too few token boundaries to test";
    EXPECT_EQ(SettledKv(*engine), 0u);
}

}  // namespace
}  // namespace prepack
