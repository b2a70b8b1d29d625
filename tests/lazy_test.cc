// LazyLLM: schedules, the masked attention kernel against a naive one, and
// the pruning forward pass against the reference and against itself: keep
// 1.0 is bit-identical to no pruning, revived tokens resume from the aux
// cache with the K/V a full recompute gives, no token is computed twice at
// a layer, and sequences pruned in one batch do not affect each other.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/forward/cpu_pass.h"
#include "core/lazyllm/lazy_prune.h"
#include "core/lazyllm/lazy_state.h"
#include "core/model/reference.h"
#include "kernels/cpu/bf16.h"
#include "kernels/cpu/held_keys.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using testing::MaxRelDiff;

constexpr double kTol = 2e-4;

ModelConfig LazyConfig() {
    ModelConfig c;
    c.name = "lazy-test";
    c.dim = 64;
    c.n_heads = 4;
    c.n_kv_heads = 2;   // GQA: scores average over query heads
    c.head_dim = 16;
    c.rope_dim = 16;
    c.n_layers = 6;
    c.hidden_dim = 128;
    c.vocab_size = 300;
    c.max_context = 512;
    return c;
}

std::vector<int32_t> RandomTokens(int n, int vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % vocab);
    return t;
}

// One sequence: its KV blocks and (optionally) its LazyLLM state.
struct Seq {
    BlockTable                 kv;
    std::unique_ptr<LazyState> lazy;
    std::vector<int32_t>       tokens;
};

class LazyForward : public ::testing::Test {
protected:
    void SetUp() override {
        auto m = Model::FromConfig(LazyConfig(), 7);
        ASSERT_TRUE(m.ok()) << m.status();
        model_ = std::move(*m);
        auto p = KvBlockPool::Create(model_->config(), 16, 64ull << 20);
        ASSERT_TRUE(p.ok()) << p.status();
        pool_ = std::move(*p);
        fwd_ = std::make_unique<ForwardPass>(*model_, *pool_);
    }

    std::unique_ptr<Seq> NewSeq(std::vector<int32_t> prompt, const LazySchedule* schedule) {
        auto s = std::make_unique<Seq>();
        s->tokens = std::move(prompt);
        const ModelConfig& c = model_->config();
        if (schedule) {
            s->lazy = std::make_unique<LazyState>(*pool_, c.n_layers, c.dim, *schedule, 0);
            s->lazy->set_n_prompt(static_cast<int32_t>(s->tokens.size()));
        }
        return s;
    }

    // Feeds every token of `seqs` not yet computed, as one step; returns each
    // sequence's last-row logits.
    std::vector<std::vector<float>> Step(const std::vector<Seq*>& seqs) {
        StepPlan plan;
        for (Seq* s : seqs) {
            const int32_t done = s->kv.num_tokens();
            const int32_t n = static_cast<int32_t>(s->tokens.size()) - done;
            EXPECT_TRUE(s->kv.Reserve(*pool_, done + n).ok());
            plan.Add(&s->kv, s->tokens.data() + done, n, done);
            plan.seqs.back().lazy = s->lazy.get();
        }
        StepOutput out;
        const absl::Status st = fwd_->Run(plan, &out);
        EXPECT_TRUE(st.ok()) << st;
        std::vector<std::vector<float>> logits;
        const int vocab = model_->config().vocab_size;
        for (size_t i = 0; i < seqs.size() && st.ok(); ++i) {
            const float* row = out.logits.data() + static_cast<size_t>(out.first_row[i]) * vocab;
            logits.emplace_back(row, row + vocab);
        }
        return logits;
    }

    // Revived tokens' K/V equal the reference's, with revival bound `limit`.
    void CheckRevivedKv(int32_t limit);

    static int32_t Argmax(const std::vector<float>& v) {
        return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
    }

    std::unique_ptr<Model>       model_;
    std::unique_ptr<KvBlockPool> pool_;
    std::unique_ptr<ForwardPass> fwd_;
};

TEST(LazySchedule, ParsesAndRejectsWithTheItemNamed) {
    auto s = ParseLazySchedule("2:0.5,5:0.3,8:0.15", 12);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(s->size(), 3u);
    EXPECT_EQ((*s)[1].layer, 5);
    EXPECT_FLOAT_EQ((*s)[1].keep, 0.3f);
    EXPECT_EQ(FormatLazySchedule(*s), "2:0.5,5:0.3,8:0.15");
    for (const char* bad : {"2", "2:", ":0.5", "x:0.5", "2:abc", "11:0.5", "-1:0.5", "2:0", "2:1.5", "5:0.5,2:0.3",
                            "2:0.3,5:0.5", "2:0.5,,5:0.3", "2:0.5 "}) {
        auto r = ParseLazySchedule(bad, 12);
        EXPECT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
        EXPECT_NE(r.status().message().find("lazy schedule item"), std::string::npos) << r.status();
    }
    // Empty = the default: the whole first quarter, then 50%, 30%, 15%.
    auto d = ParseLazySchedule("", 12);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(FormatLazySchedule(*d), "2:0.5,5:0.3,8:0.15");
    EXPECT_EQ(FormatLazySchedule(DefaultLazySchedule(32)), "7:0.5,15:0.3,23:0.15");
    for (int layers = 1; layers <= 40; ++layers) {
        const LazySchedule sch = DefaultLazySchedule(layers);
        EXPECT_TRUE(ParseLazySchedule(FormatLazySchedule(sch), layers).ok() || sch.empty()) << layers;
    }
}

// Naive attention for one query: softmax over the held keys up to its slot.
void NaiveQuery(const float* q, const std::vector<float>& keys, const std::vector<float>& values,
                const std::vector<int16_t>& depth, int layer, int slot, int n_heads, int n_kv, int hd, float* out) {
    const int kvd = n_kv * hd;
    for (int h = 0; h < n_heads; ++h) {
        const int kh = h / (n_heads / n_kv);
        std::vector<double> p(slot + 1, 0.0);
        double max = -1e300, sum = 0;
        for (int j = 0; j <= slot; ++j) {
            if (depth[j] < layer) continue;
            double dot = 0;
            for (int i = 0; i < hd; ++i) dot += double(q[h * hd + i]) * keys[size_t(j) * kvd + kh * hd + i];
            p[j] = dot / std::sqrt(double(hd));
            max = std::max(max, p[j]);
        }
        for (int j = 0; j <= slot; ++j) {
            if (depth[j] < layer) continue;
            p[j] = std::exp(p[j] - max);
            sum += p[j];
        }
        for (int i = 0; i < hd; ++i) {
            double acc = 0;
            for (int j = 0; j <= slot; ++j) {
                if (depth[j] >= layer) acc += p[j] / sum * values[size_t(j) * kvd + kh * hd + i];
            }
            out[h * hd + i] = static_cast<float>(acc);
        }
    }
}

// For an f32 and a bf16 cache (whose values are rounded to bf16 first, so
// the naive f32 computation sees what the kernel reads).
class LazyAttentionDType : public ::testing::TestWithParam<cpu::DType> {};

TEST_P(LazyAttentionDType, SparseQueriesAndAbsentKeysEqualNaive) {
    const cpu::DType dtype = GetParam();
    const int n_heads = 4, n_kv = 2, hd = 8, bs = 4, n_keys = 70, kvd = n_kv * hd, layer = 2;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> keys(size_t(n_keys) * kvd), values(keys.size());
    for (auto& x : keys) x = u(rng);
    for (auto& x : values) x = u(rng);
    if (dtype == cpu::DType::kBf16) {
        for (auto& x : keys) x = cpu::Bf16ToF32(cpu::F32ToBf16(x));
        for (auto& x : values) x = cpu::Bf16ToF32(cpu::F32ToBf16(x));
    }
    // Blocks in a scrambled order, as a paged cache has them.
    const int n_blocks = (n_keys + bs - 1) / bs;
    std::vector<int32_t> table(n_blocks);
    for (int b = 0; b < n_blocks; ++b) table[b] = (b * 7) % n_blocks;
    std::vector<float> k_slab(size_t(n_blocks) * bs * kvd), v_slab(k_slab.size());
    for (int j = 0; j < n_keys; ++j) {
        const size_t dst = (size_t(table[j / bs]) * bs + j % bs) * kvd;
        std::copy_n(keys.begin() + size_t(j) * kvd, kvd, k_slab.begin() + dst);
        std::copy_n(values.begin() + size_t(j) * kvd, kvd, v_slab.begin() + dst);
    }
    std::vector<uint16_t> k16(k_slab.size()), v16(v_slab.size());
    cpu::F32ToBf16Row(k_slab.data(), k16.data(), k_slab.size());
    cpu::F32ToBf16Row(v_slab.data(), v16.data(), v_slab.size());
    const cpu::PagedKv kv = dtype == cpu::DType::kBf16
                                ? cpu::PagedKv{k16.data(), v16.data(), bs, kvd, cpu::DType::kBf16}
                                : cpu::PagedKv{k_slab.data(), v_slab.data(), bs, kvd};
    const cpu::AttentionShape shape{n_heads, n_kv, hd, n_heads * hd, n_heads * hd};
    // Both ways the kernel attends over absent keys: a compact copy of the
    // held ones (many queries, or few keys held) and masking (one query that
    // sees mostly held keys).
    struct Case {
        const char*          name;
        std::vector<int32_t> q_slots;
        int                  absent_percent;   // each key's chance of being absent at `layer`
        bool                 compacted;
    };
    const std::vector<Case> cases = {
        {"many queries, half held", {3, 4, 9, 10, 11, 30, 31, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 69}, 50, true},
        {"one query, few held", {69}, 75, true},
        {"one query, most held", {66}, 20, false},
    };
    for (const Case& tc : cases) {
        SCOPED_TRACE(tc.name);
        std::vector<int16_t> depth(n_keys);
        for (int j = 0; j < n_keys; ++j) {
            depth[j] = static_cast<int16_t>(static_cast<int>(rng() % 100) < tc.absent_percent ? rng() % layer : layer + rng() % 3);
        }
        for (int32_t s : tc.q_slots) depth[s] = 5;   // a query's own key is always held
        const int nq = static_cast<int>(tc.q_slots.size());
        std::vector<float> q(size_t(nq) * n_heads * hd), out(q.size(), 0.0f), want(q.size());
        for (auto& x : q) x = u(rng);

        cpu::AttentionSpan span{0, nq, 0, table.data()};
        span.q_slots = tc.q_slots.data();
        span.key_depth = depth.data();
        span.layer = layer;
        ASSERT_EQ(cpu::WorthCompacting(span), tc.compacted);
        cpu::PagedAttention(q.data(), out.data(), shape, &span, 1, kv);
        for (int i = 0; i < nq; ++i) {
            NaiveQuery(q.data() + size_t(i) * n_heads * hd, keys, values, depth, layer, tc.q_slots[i], n_heads, n_kv,
                       hd, want.data() + size_t(i) * n_heads * hd);
        }
        EXPECT_LT(MaxRelDiff(out.data(), want.data(), out.size()), 1e-5);

        // The last query's head-averaged probabilities: over held keys, summing to 1.
        std::vector<float> scores(tc.q_slots.back() + 1);
        cpu::LastQueryScores(q.data(), shape, span, kv, {}, scores.data());
        double sum = 0;
        for (int j = 0; j <= tc.q_slots.back(); ++j) {
            if (depth[j] < layer) {
                EXPECT_EQ(scores[j], 0.0f) << j;
            }
            sum += scores[j];
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
    }

    // Scores over an observation window (the trailing queries of consecutive
    // tokens: here 63..65 of 60..65 after a gap), heads by mean or maximum.
    const std::vector<int32_t> slots = {20, 40, 41, 58, 60, 61, 62, 63, 64, 65};
    std::vector<int16_t> depth(n_keys);
    for (int j = 0; j < n_keys; ++j) depth[j] = static_cast<int16_t>(rng() % 100 < 30 ? rng() % layer : layer);
    for (int32_t s : slots) depth[s] = layer;
    const int nq = static_cast<int>(slots.size());
    std::vector<float> q(size_t(nq) * n_heads * hd);
    for (auto& x : q) x = u(rng);
    cpu::AttentionSpan span{0, nq, 0, table.data()};
    span.q_slots = slots.data();
    span.key_depth = depth.data();
    span.layer = layer;
    for (int window : {1, 3, 8}) {
        for (bool head_max : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "window " << window << (head_max ? ", heads' max" : ", heads' mean"));
            std::vector<float> got(slots.back() + 1, -1.0f);
            cpu::LastQueryScores(q.data(), shape, span, kv, {window, head_max}, got.data());
            const int rows = std::min(window, 6);   // 60..65 are consecutive, 58 is not
            std::vector<double> want(got.size(), 0.0);
            for (int h = 0; h < n_heads; ++h) {
                const int kh = h / (n_heads / n_kv);
                std::vector<double> head(got.size(), 0.0);
                for (int r = nq - rows; r < nq; ++r) {
                    std::vector<double> p(got.size(), 0.0);
                    double max = -1e300, sum = 0;
                    for (int j = 0; j <= slots[r]; ++j) {
                        if (depth[j] < layer) continue;
                        double dot = 0;
                        for (int i = 0; i < hd; ++i) {
                            dot += double(q[(size_t(r) * n_heads + h) * hd + i]) * keys[size_t(j) * kvd + kh * hd + i];
                        }
                        p[j] = dot / std::sqrt(double(hd));
                        max = std::max(max, p[j]);
                    }
                    for (int j = 0; j <= slots[r]; ++j) sum += depth[j] < layer ? 0.0 : (p[j] = std::exp(p[j] - max));
                    for (int j = 0; j <= slots[r]; ++j) head[j] += depth[j] < layer ? 0.0 : p[j] / sum / rows;
                }
                for (size_t j = 0; j < got.size(); ++j) want[j] = head_max ? std::max(want[j], head[j]) : want[j] + head[j] / n_heads;
            }
            for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-5) << j;
        }
    }
}

TEST(LazyScoring, PoolsScoresOverNeighbours) {
    const std::vector<float> score = {0, 5, 0, 0, 0, 0, 3, 0, 1, 0};
    std::vector<float> out;
    EXPECT_EQ(&PooledScores(score, 10, 0, &out), &score);
    EXPECT_EQ(PooledScores(score, 10, 1, &out), (std::vector<float>{5, 5, 5, 0, 0, 3, 3, 3, 1, 1}));
    EXPECT_EQ(PooledScores(score, 10, 2, &out), (std::vector<float>{5, 5, 5, 5, 3, 3, 3, 3, 3, 1}));
    EXPECT_EQ(PooledScores(score, 8, 3, &out), (std::vector<float>{5, 5, 5, 5, 5, 3, 3, 3}));
    // Against the naive maximum, on random scores and radii.
    std::mt19937 rng(5);
    for (int trial = 0; trial < 50; ++trial) {
        std::vector<float> s(1 + rng() % 60);
        for (auto& x : s) x = static_cast<float>(rng() % 7);
        const int n = static_cast<int>(s.size()), radius = static_cast<int>(rng() % 6);
        std::vector<float> want(n);
        for (int j = 0; j < n; ++j) {
            for (int i = std::max(0, j - radius); i <= std::min(n - 1, j + radius); ++i) want[j] = std::max(want[j], s[i]);
        }
        if (radius > 0) EXPECT_EQ(PooledScores(s, n, radius, &out), want);
    }
}

TEST(LazyScoring, ParsesAndRejectsWithTheItemNamed) {
    auto s = ParseLazyScoring("window=16,heads=max,pool=3,sinks=4,recent=32");
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(*s, (LazyScoring{16, true, 3, 4, 32}));
    EXPECT_EQ(FormatLazyScoring(*s), "window=16,heads=max,pool=3,sinks=4,recent=32");
    EXPECT_EQ(*ParseLazyScoring(FormatLazyScoring(*s)), *s);
    EXPECT_EQ(*ParseLazyScoring("paper"), PaperLazyScoring());
    EXPECT_EQ(*ParseLazyScoring(""), DefaultLazyScoring());
    EXPECT_EQ(ParseLazyScoring("pool=2")->pool, 2);
    for (const char* bad : {"window=0", "heads=min", "pool", "pool=-1", "pool=x", "size=3", "window=16,", "pool=99999999"}) {
        auto r = ParseLazyScoring(bad);
        EXPECT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.status().message().find("lazy scoring"), std::string::npos) << r.status();
    }
}

INSTANTIATE_TEST_SUITE_P(KvDType, LazyAttentionDType, ::testing::Values(cpu::DType::kF32, cpu::DType::kBf16),
                         [](const auto& info) { return std::string(cpu::DTypeName(info.param)); });

// The aux cache keeps f32 hidden states in KV pool blocks whatever the
// pool's element type: a bf16 block holds half as many.
TEST(AuxCache, KeepsF32StatesExactlyInF32AndBf16Pools) {
    const ModelConfig c = LazyConfig();   // kv_dim 32, dim 64
    for (cpu::DType dtype : {cpu::DType::kF32, cpu::DType::kBf16}) {
        SCOPED_TRACE(cpu::DTypeName(dtype));
        auto pool = KvBlockPool::Create(c, 16, 8u << 20, dtype);
        ASSERT_TRUE(pool.ok()) << pool.status();
        AuxCache aux(**pool, c.dim);
        ASSERT_TRUE(aux.usable());
        // Each (layer, K|V) piece holds 16 x 32 elements: 8 f32 states, or 4 in bf16.
        const int64_t per_block = (dtype == cpu::DType::kF32 ? 8 : 4) * 2 * c.n_layers;
        EXPECT_EQ(aux.BlocksFor(per_block), 1);
        EXPECT_EQ(aux.BlocksFor(per_block + 1), 2);
        std::mt19937 rng(9);
        std::uniform_real_distribution<float> u(-3, 3);
        const int n = static_cast<int>(per_block) + 5;
        std::vector<float> states(size_t(n) * c.dim);
        for (auto& x : states) x = u(rng);
        const int32_t free_before = (*pool)->num_free();
        for (int i = 0; i < n; ++i) ASSERT_TRUE(aux.Put(i * 3, states.data() + size_t(i) * c.dim));
        EXPECT_EQ((*pool)->num_free(), free_before - 2);
        for (int i = 0; i < n; ++i) {
            ASSERT_NE(aux.Get(i * 3), nullptr);
            ASSERT_EQ(std::memcmp(aux.Get(i * 3), states.data() + size_t(i) * c.dim, sizeof(float) * c.dim), 0) << i;
        }
        aux.Clear();
        EXPECT_EQ((*pool)->num_free(), free_before);
    }
}

TEST_F(LazyForward, KeepOneIsBitIdenticalToNoPruning) {
    const LazySchedule keep_all = {{1, 1.0f}, {3, 1.0f}};
    auto plain = NewSeq(RandomTokens(150, 300, 1), nullptr);
    auto lazy = NewSeq(plain->tokens, &keep_all);
    // The prefill and 64 decode steps.
    for (int step = 0; step < 65; ++step) {
        const auto a = Step({plain.get()});
        const auto b = Step({lazy.get()});
        ASSERT_EQ(a.size(), 1u);
        ASSERT_EQ(b.size(), 1u);
        ASSERT_EQ(std::memcmp(a[0].data(), b[0].data(), a[0].size() * sizeof(float)), 0) << "step " << step;
        plain->tokens.push_back(Argmax(a[0]));
        lazy->tokens.push_back(Argmax(b[0]));
    }
    EXPECT_DOUBLE_EQ(lazy->lazy->PromptWorkFraction(), 1.0);
    EXPECT_EQ(lazy->lazy->aux().size(), 0);
}

TEST_F(LazyForward, WorkFollowsTheScheduleInClosedForm) {
    const LazySchedule sch = {{1, 0.5f}, {3, 0.25f}};
    auto s = NewSeq(RandomTokens(200, 300, 2), &sch);
    Step({s.get()});
    // Layers 0-1 hold all 200 tokens, 2-3 ceil(0.5 * 200), 4-5 ceil(0.25 * 200).
    const std::vector<double> want = {1.0, 1.0, 0.5, 0.5, 0.25, 0.25};
    const std::vector<double> got = s->lazy->PromptLayerFractions();
    for (int l = 0; l < 6; ++l) EXPECT_DOUBLE_EQ(got[l], want[l]) << "layer " << l;
    EXPECT_NEAR(s->lazy->PromptWorkFraction(), 3.5 / 6.0, 1e-12);
    // Every token that stopped early has its state in the aux cache; the last went all the way.
    int partial = 0;
    for (int j = 0; j < 200; ++j) {
        if (s->lazy->depth(j) < 5) {
            ++partial;
            EXPECT_NE(s->lazy->aux().Get(j), nullptr) << j;
        }
    }
    EXPECT_EQ(partial, 150);
    EXPECT_EQ(s->lazy->aux().size(), 150);
    EXPECT_EQ(s->lazy->depth(199), 5);
    EXPECT_GT(s->lazy->aux().bytes(), 0u);
}

TEST_F(LazyForward, ProtectedTokensGoAllTheWayAndThePoolKeepsNeighboursTogether) {
    const LazySchedule sch = {{1, 0.1f}, {3, 0.05f}};
    // Sinks and recent tokens are kept whatever their score, even past the
    // keep fraction (8 + 16 of 200 > ceil(0.05 * 200)).
    auto s = NewSeq(RandomTokens(200, 300, 2), &sch);
    s->lazy->set_scoring({.window = 4, .head_max = true, .sinks = 8, .recent = 16});
    Step({s.get()});
    for (int j = 0; j < 200; ++j) {
        if (j < 8 || j >= 184) EXPECT_EQ(s->lazy->depth(j), 5) << j;
    }
    const std::vector<double> got = s->lazy->PromptLayerFractions();
    EXPECT_DOUBLE_EQ(got[2], 24.0 / 200);   // ceil(0.1 * 200) = 20 < 24 protected
    EXPECT_DOUBLE_EQ(got[4], 24.0 / 200);
    // With a pool of radius 2 and nothing protected, what survives the
    // first pruning comes in runs: a token kept for its own score brings
    // its neighbours' scores up to its own.
    auto t = NewSeq(RandomTokens(200, 300, 2), &sch);
    t->lazy->set_scoring({.pool = 2});
    Step({t.get()});
    int kept = 0, alone = 0;
    for (int j = 0; j < 199; ++j) {
        if (t->lazy->depth(j) < 2) continue;
        ++kept;
        const bool left = j > 0 && t->lazy->depth(j - 1) >= 2, right = t->lazy->depth(j + 1) >= 2;
        alone += !left && !right;
    }
    EXPECT_EQ(kept, 19);   // ceil(0.1 * 200) - the last token
    EXPECT_LE(alone, 1);
}

TEST_F(LazyForward, RevivedTokensResumeFromTheAuxCacheWithFullRecomputeKv) {
    // Without a revival bound and with one.
    for (const int32_t limit : {-1, 3}) {
        SCOPED_TRACE(limit < 0 ? "no revival bound" : "at most 3 revived per step");
        CheckRevivedKv(limit);
    }
}

TEST_F(LazyForward, ReviveLimitBoundsTheTokensEachStepBringsBack) {
    const int n = 300, limit = 3;
    const LazySchedule sch = DefaultLazySchedule(6);
    const std::vector<int32_t> prompt = RandomTokens(n, 300, 11);
    auto bounded = NewSeq(prompt, &sch);
    auto free = NewSeq(prompt, &sch);
    bounded->lazy->set_revive_limit(limit);
    int binding_steps = 0, free_steps_over = 0;
    for (int step = 0; step < 24; ++step) {
        for (Seq* s : {bounded.get(), free.get()}) {
            // Counted from the depths, independently of the state's own count.
            const int32_t before_n = static_cast<int32_t>(s->tokens.size()) - (step == 0 ? n : 1);
            std::vector<int16_t> before(before_n);
            for (int32_t j = 0; j < before_n; ++j) before[j] = s->lazy->depth(j);
            const int64_t revived_before = s->lazy->revived();
            const auto logits = Step({s});
            ASSERT_EQ(logits.size(), 1u);
            int deeper = 0;
            for (int32_t j = 0; j < before_n; ++j) deeper += s->lazy->depth(j) > before[j] ? 1 : 0;
            EXPECT_EQ(s->lazy->revived() - revived_before, deeper) << "step " << step;
            if (s == bounded.get()) {
                EXPECT_LE(deeper, limit) << "step " << step;
                binding_steps += deeper == limit ? 1 : 0;
            } else {
                free_steps_over += deeper > limit ? 1 : 0;
            }
            s->tokens.push_back(Argmax(logits[0]));
        }
    }
    EXPECT_GT(binding_steps, 0) << "the bound never came into play";
    EXPECT_GT(free_steps_over, 0) << "without the bound no step brought back more than it allows";
    EXPECT_LE(bounded->lazy->max_revived_in_step(), limit);
    EXPECT_EQ(bounded->lazy->recomputed(), 0);
    // Fewer tokens came back, so less of the prompt was computed.
    EXPECT_LT(bounded->lazy->PromptWorkFraction(), free->lazy->PromptWorkFraction());
}

TEST_F(LazyForward, BoundedRevivalSpendsAtMostItsShareOfWhatPruningSkipped) {
    // Counted from the depths: the prefill skips S0 token-layers (a token
    // stopped after layer l skips L - 1 - l); every layer a decode step adds
    // to a prompt token is revival work. Under a bound, revival over the whole
    // generation stays within kLazyReviveShare of S0 (a revived token that
    // stops again only tightens this); without one it takes back more.
    const int n = 200, L = 6, steps = 60;
    const LazySchedule sch = DefaultLazySchedule(L);
    const std::vector<int32_t> prompt = RandomTokens(n, 300, 13);
    auto bounded = NewSeq(prompt, &sch);
    auto free = NewSeq(prompt, &sch);
    bounded->lazy->set_revive_limit(50);   // per step loose: the share is what binds
    auto depth_sum = [&](const Seq& s) {
        int64_t d = 0;
        for (int32_t j = 0; j < n; ++j) d += s.lazy->depth(j);
        return d;
    };
    for (Seq* s : {bounded.get(), free.get()}) {
        s->tokens.push_back(Argmax(Step({s})[0]));
        const int64_t skipped = int64_t(n) * (L - 1) - depth_sum(*s);
        ASSERT_GT(skipped, 0);
        const int64_t after_prefill = depth_sum(*s);
        for (int step = 0; step < steps; ++step) s->tokens.push_back(Argmax(Step({s})[0]));
        const int64_t revived = depth_sum(*s) - after_prefill;
        if (s == bounded.get()) {
            EXPECT_LE(revived, static_cast<int64_t>(kLazyReviveShare * skipped)) << "of " << skipped << " skipped";
            EXPECT_GT(revived, 0) << "nothing came back: the share did not come into play";
            EXPECT_LE(s->lazy->revived_work(), kLazyReviveShare * s->lazy->skipped_work());
        } else {
            EXPECT_GT(revived, static_cast<int64_t>(kLazyReviveShare * skipped))
                << "without a bound revival stayed within the share: the test shows nothing";
        }
        EXPECT_EQ(s->lazy->recomputed(), 0);
    }
    EXPECT_LT(bounded->lazy->PromptWorkFraction(), free->lazy->PromptWorkFraction());
}

TEST(ReviveLimit, ResolvesTheApiSpelling) {
    EXPECT_EQ(*ResolveReviveLimit(0), kDefaultLazyReviveLimit);
    EXPECT_EQ(*ResolveReviveLimit(-1), -1);
    EXPECT_EQ(*ResolveReviveLimit(5), 5);
    const absl::StatusOr<int32_t> bad = ResolveReviveLimit(-2);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("-2"), std::string::npos) << bad.status();
}

void LazyForward::CheckRevivedKv(int32_t limit) {
    // One pruning point after layer 1: until then every token is computed in
    // full, so a pruned token's aux state is exactly the reference's hidden
    // state after layer 1, and when a decode step revives it, its K/V at
    // layers 2.. must be what the reference computes from layer 0.
    const int n = 120, L = 6;
    const LazySchedule sch = {{1, 0.3f}};
    auto s = NewSeq(RandomTokens(n, 300, 5), &sch);
    s->lazy->set_revive_limit(limit);
    std::vector<int16_t> before;
    int revived = 0;
    ReferenceForward ref(*model_);
    for (int32_t t : s->tokens) ref.Step(t);
    const ModelConfig& c = model_->config();
    const int bs = pool_->block_size();
    auto expect_kv = [&](int32_t slot, int32_t layer) {
        const int32_t block = s->kv.blocks()[slot / bs];
        const float* k = pool_->K(layer, block) + size_t(slot % bs) * c.kv_dim();
        const float* v = pool_->V(layer, block) + size_t(slot % bs) * c.kv_dim();
        EXPECT_LT(MaxRelDiff(k, ref.Key(layer, slot), c.kv_dim()), kTol) << "K of token " << slot << " layer " << layer;
        EXPECT_LT(MaxRelDiff(v, ref.Value(layer, slot), c.kv_dim()), kTol) << "V of token " << slot << " layer " << layer;
    };
    for (int step = 0; step < 8; ++step) {
        before.clear();
        for (int32_t j = 0; j < n; ++j) before.push_back(s->lazy->depth(j));
        const auto logits = Step({s.get()});
        ASSERT_EQ(logits.size(), 1u);
        for (int32_t j = 0; j < n; ++j) {
            const int16_t now = s->lazy->depth(j);
            if (step == 0) {
                // After the prefill: every token through layers 0-1 as the reference.
                for (int l = 0; l <= std::min<int>(now, 1); ++l) expect_kv(j, l);
                continue;
            }
            ASSERT_GE(now, before[j]) << "a token lost depth";
            if (now > before[j]) {
                ASSERT_EQ(before[j], 1);
                ++revived;
                expect_kv(j, 2);   // resumed at layer 2 from the aux state after layer 1
            }
        }
        s->tokens.push_back(Argmax(logits[0]));
    }
    EXPECT_GT(revived, 0) << "no decode step brought back a pruned token";
    EXPECT_EQ(s->lazy->recomputed(), 0);
    // The invariant holds after all of it: stopped tokens are in the aux cache.
    for (int32_t j = 0; j < n; ++j) {
        EXPECT_EQ(s->lazy->aux().Get(j) != nullptr, s->lazy->depth(j) < L - 1) << j;
    }
}

TEST_F(LazyForward, NoTokenIsComputedTwiceAtALayer) {
    const LazySchedule sch = DefaultLazySchedule(6);
    auto s = NewSeq(RandomTokens(300, 300, 9), &sch);
    for (int step = 0; step < 10; ++step) {
        const auto logits = Step({s.get()});
        ASSERT_EQ(logits.size(), 1u);
        s->tokens.push_back(Argmax(logits[0]));
    }
    EXPECT_EQ(s->lazy->recomputed(), 0);
    EXPECT_LT(s->lazy->PromptWorkFraction(), 1.0);
}

TEST_F(LazyForward, PrunedSequencesInOneBatchDoNotAffectEachOther) {
    const LazySchedule a_sch = {{1, 0.4f}, {3, 0.2f}};
    const LazySchedule b_sch = DefaultLazySchedule(6);
    const std::vector<int> lengths = {60, 130, 90};
    const std::vector<const LazySchedule*> schedules = {&a_sch, nullptr, &b_sch};
    std::vector<std::unique_ptr<Seq>> alone, together;
    for (size_t i = 0; i < lengths.size(); ++i) {
        auto prompt = RandomTokens(lengths[i], 300, 20 + static_cast<uint32_t>(i));
        alone.push_back(NewSeq(prompt, schedules[i]));
        together.push_back(NewSeq(prompt, schedules[i]));
    }
    for (int step = 0; step < 4; ++step) {
        std::vector<std::vector<float>> want;
        for (auto& s : alone) want.push_back(Step({s.get()})[0]);
        const auto got = Step({together[0].get(), together[1].get(), together[2].get()});
        ASSERT_EQ(got.size(), 3u);
        for (size_t i = 0; i < lengths.size(); ++i) {
            EXPECT_LT(MaxRelDiff(got[i].data(), want[i].data(), want[i].size()), kTol) << "seq " << i << " step " << step;
            if (schedules[i]) {
                EXPECT_TRUE(std::equal(alone[i]->lazy->depth(), alone[i]->lazy->depth() + lengths[i],
                                       together[i]->lazy->depth()))
                    << "seq " << i << " pruned differently in the batch, step " << step;
            }
            alone[i]->tokens.push_back(Argmax(want[i]));
            together[i]->tokens.push_back(Argmax(want[i]));
        }
    }
}

}  // namespace
}  // namespace prepack
