// The CUDA forward pass and engine against the CPU ones (the reference
// backend): the same StepPlans (packed prompts, padding rows, rows in no
// span, decode steps, GQA shapes, KV block sizes, the families past
// llama/qwen: Gemma 2/3's windows and soft-caps, Granite's multipliers,
// Phi's LongRoPE) give the same logits, and the engine on the GPU generates
// the CPU's tokens, shared prefixes and copy-on-write included. Skips cleanly where no GPU is usable; the one test
// that runs everywhere checks what a GPU-less machine gets instead.
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/forward/backend.h"
#include "core/engine/engine.h"
#include "core/forward/cpu_pass.h"
#include "core/lazyllm/lazy_schedule.h"
#include "core/lazyllm/lazy_state.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_buffer.h"
#include "tests/solo_oracle.h"
#include "tests/family_configs.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

#define REQUIRE_GPU()                   \
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no usable CUDA device (no GPU or no driver); skipping"

struct SpanSpec {
    int                  seq;
    std::vector<int32_t> ids;
    int32_t              pad = 0;
    LogitsWanted         logits = LogitsWanted::kAll;
};

// Runs `steps` on `runner` for `n_seqs` sequences, with `gap` rows in no
// span before every span (padding only the GEMMs see); every step's logits, concatenated.
std::vector<float> RunSteps(StepRunner& runner, int n_seqs, const std::vector<std::vector<SpanSpec>>& steps,
                            int gap = 0) {
    std::vector<BlockTable> tables(n_seqs);
    std::vector<float> all;
    const int32_t vocab = runner.model().config().vocab_size;
    for (const auto& step : steps) {
        StepPlan plan;
        for (const SpanSpec& sp : step) {
            for (int g = 0; g < gap; ++g) {
                plan.tokens.push_back(1);
                plan.positions.push_back(0);
            }
            BlockTable& t = tables[sp.seq];
            const int32_t n = static_cast<int32_t>(sp.ids.size());
            EXPECT_TRUE(t.Reserve(runner.pool(), t.num_tokens() + n + sp.pad).ok());
            plan.Add(&t, sp.ids.data(), n, t.num_tokens(), sp.logits);
            plan.seqs.back().n_pad = sp.pad;
            for (int32_t p = 0; p < sp.pad; ++p) {
                plan.tokens.push_back(0);
                plan.positions.push_back(t.num_tokens() + n + p);
            }
        }
        StepOutput out;
        const absl::Status s = runner.Run(plan, &out);
        EXPECT_TRUE(s.ok()) << s;
        if (!s.ok()) return all;
        all.insert(all.end(), out.logits.data(), out.logits.data() + int64_t{out.rows} * vocab);
    }
    return all;
}

// Largest |a - b| relative to the largest |a| (at least 1).
double RelMaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double diff = 0.0, scale = 1.0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(double(a[i])));
    }
    return diff / scale;
}

std::vector<int32_t> Ids(int n, int seed, int vocab) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; ++i) v.push_back(3 + (seed * 131 + i * 17) % (vocab - 3));
    return v;
}

// Packed prefill of three prompts (one padded), rows in no span, then decode steps.
std::vector<std::vector<SpanSpec>> MixedSteps(int vocab) {
    return {
        {{0, Ids(5, 1, vocab)}, {1, Ids(37, 2, vocab), 3}, {2, Ids(70, 3, vocab)}},
        {{0, Ids(1, 4, vocab)}, {1, Ids(1, 5, vocab)}, {2, Ids(1, 6, vocab)}},
        {{2, Ids(1, 7, vocab)}, {0, Ids(9, 8, vocab)}, {1, Ids(1, 9, vocab)}},   // a chunk beside decodes
        {{0, Ids(1, 10, vocab)}, {1, Ids(1, 11, vocab)}, {2, Ids(1, 12, vocab), 0, LogitsWanted::kLast}},
    };
}

struct Pair {
    std::unique_ptr<Model> model;
    Backend                cpu, gpu;
};

Pair MakePair(std::unique_ptr<Model> model, int32_t block_size, cpu::DType kv_dtype = cpu::DType::kF32) {
    Pair p;
    p.model = std::move(model);
    auto cpu = CreateBackend(*p.model, Device::kCpu, block_size, 64ull << 20, 0, kv_dtype);
    auto gpu = CreateBackend(*p.model, Device::kCuda, block_size, 64ull << 20, 0, kv_dtype);
    EXPECT_TRUE(cpu.ok()) << cpu.status();
    EXPECT_TRUE(gpu.ok()) << gpu.status();
    if (cpu.ok()) p.cpu = std::move(*cpu);
    if (gpu.ok()) p.gpu = std::move(*gpu);
    return p;
}

TEST(CudaForward, StoriesPackedPrefillAndDecodeMatchTheCpu) {
    REQUIRE_GPU();
    PREPACK_REQUIRE_STORIES();
    for (int gap : {0, 2}) {
        SCOPED_TRACE(gap);
        auto m = Model::Load(testing::StoriesDir() + "/stories260K.gguf");
        ASSERT_TRUE(m.ok()) << m.status();
        const int vocab = (*m)->config().vocab_size;
        Pair p = MakePair(std::move(*m), 16);
        ASSERT_TRUE(p.gpu.runner);
        const auto steps = MixedSteps(vocab);
        const std::vector<float> want = RunSteps(*p.cpu.runner, 3, steps, gap);
        const std::vector<float> got = RunSteps(*p.gpu.runner, 3, steps, gap);
        ASSERT_FALSE(want.empty());
        EXPECT_LT(RelMaxDiff(want, got), 1e-4);
    }
}

TEST(CudaForward, GqaShapesAndBlockSizesMatchTheCpu) {
    REQUIRE_GPU();
    // (dim, heads, kv heads): head_dim 8, 24, 16, 64; GQA ratios 4, 1, 3, 2.
    const std::vector<std::tuple<int, int, int>> shapes = {{64, 8, 2}, {96, 4, 4}, {96, 6, 2}, {256, 4, 2}};
    for (const auto& [dim, heads, kv_heads] : shapes) {
        for (int block : {1, 7, 16}) {
            SCOPED_TRACE(::testing::Message() << dim << "/" << heads << "/" << kv_heads << " block " << block);
            auto m = Model::FromConfig(testing::SmallConfig(dim, heads, kv_heads, 2, 2 * dim + 8, 300), 7);
            ASSERT_TRUE(m.ok()) << m.status();
            Pair p = MakePair(std::move(*m), block);
            ASSERT_TRUE(p.gpu.runner);
            const auto steps = MixedSteps(300);
            EXPECT_LT(RelMaxDiff(RunSteps(*p.cpu.runner, 3, steps, 1), RunSteps(*p.gpu.runner, 3, steps, 1)), 1e-4);
        }
    }
}

TEST(CudaForward, ModelFamiliesOptionalPartsMatchTheCpu) {
    REQUIRE_GPU();
    // The parts of llama / qwen2 / qwen3 that the base shape lacks: Q/K/V
    // biases, NEOX RoPE, rope_freqs + linear scaling, per-head Q/K norm with
    // a head size of its own.
    struct Family {
        const char* name;
        void (*edit)(ModelConfig&);
    };
    const Family families[] = {
        {"qwen2", [](ModelConfig& c) { c.qkv_bias = true; c.rope_style = RopeStyle::kNeox; c.tied_output = true; }},
        {"llama3.2", [](ModelConfig& c) { c.rope_freqs = true; c.rope_scale = 2.0f; c.tied_output = true; }},
        {"qwen3", [](ModelConfig& c) {
             c.head_dim = c.rope_dim = 24;
             c.qk_norm = true;
             c.rope_style = RopeStyle::kNeox;
         }},
    };
    for (const Family& f : families) {
        SCOPED_TRACE(f.name);
        ModelConfig c = testing::SmallConfig(64, 4, 2, 2, 136, 300);
        f.edit(c);
        auto m = Model::FromConfig(c, 13);
        ASSERT_TRUE(m.ok()) << m.status();
        Pair p = MakePair(std::move(*m), 7);
        ASSERT_TRUE(p.gpu.runner);
        const auto steps = MixedSteps(300);
        EXPECT_LT(RelMaxDiff(RunSteps(*p.cpu.runner, 3, steps, 1), RunSteps(*p.gpu.runner, 3, steps, 1)), 1e-4);
    }
}

TEST(CudaForward, Bf16KvCacheMatchesTheCpuBf16Cache) {
    REQUIRE_GPU();
    auto m = Model::FromConfig(testing::SmallConfig(128, 4, 2, 3, 200, 300), 11);
    ASSERT_TRUE(m.ok()) << m.status();
    Pair p = MakePair(std::move(*m), 16, cpu::DType::kBf16);
    ASSERT_TRUE(p.gpu.runner);
    const auto steps = MixedSteps(300);
    // Both round the same K/V to bf16; only f32 summation order differs.
    EXPECT_LT(RelMaxDiff(RunSteps(*p.cpu.runner, 3, steps), RunSteps(*p.gpu.runner, 3, steps)), 2e-3);
}

TEST(CudaForward, Bf16WeightsAndActivationsAgreeWithTheCpuF32) {
    REQUIRE_GPU();
    PREPACK_REQUIRE_STORIES();
    const std::string path = testing::StoriesDir() + "/stories260K.gguf";
    auto f32 = Model::Load(path);
    auto bf16 = Model::Load(path, cpu::DType::kBf16);
    ASSERT_TRUE(f32.ok() && bf16.ok());
    auto ids = (*f32)->tokenizer().Encode(
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
        "friends. One day, she saw a big red ball under a tree and ran to get it.",
        true);
    ASSERT_TRUE(ids.ok());
    const std::vector<std::vector<SpanSpec>> steps = {{{0, *ids}}};
    auto cpu = CreateBackend(**f32, Device::kCpu, 16, 64ull << 20, 0, cpu::DType::kF32);
    auto gpu = CreateBackend(**bf16, Device::kCuda, 16, 64ull << 20, 0, cpu::DType::kBf16);
    ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status();
    const std::vector<float> want = RunSteps(*cpu->runner, 1, steps), got = RunSteps(*gpu->runner, 1, steps);
    const int vocab = (*f32)->config().vocab_size;
    ASSERT_EQ(want.size(), got.size());
    int agree = 0;
    const int rows = static_cast<int>(want.size() / vocab);
    for (int r = 0; r < rows; ++r) {
        const auto w = want.begin() + int64_t{r} * vocab, g = got.begin() + int64_t{r} * vocab;
        agree += std::max_element(w, w + vocab) - w == std::max_element(g, g + vocab) - g;
    }
    // Teacher-forced next-token top-1 agreement; bf16 activations round
    // every layer's output, so this is looser than the CPU's bf16 weights.
    EXPECT_GE(agree, rows * 9 / 10) << agree << " of " << rows;
}

// One prompt in chunks of 20 (each chunk's queries see the previous
// chunks' keys, most of them outside the window), then decode steps.
std::vector<std::vector<SpanSpec>> ChunkedSteps(int vocab) {
    std::vector<std::vector<SpanSpec>> steps;
    for (int c = 0; c < 4; ++c) steps.push_back({{0, Ids(20, 60 + c, vocab), 0, LogitsWanted::kAll}});
    for (int d = 0; d < 3; ++d) steps.push_back({{0, Ids(1, 70 + d, vocab)}});
    return steps;
}

// Packed prefill across the windows (prompts of 5, 37 and 70 tokens, rows
// in no span, a padded span), decode steps, a chunk beside decodes, and a
// prompt in chunks: the GPU's logits are the CPU's, for each family.
TEST(CudaForward, NewFamiliesMatchTheCpu) {
    REQUIRE_GPU();
    int block = 16;
    for (const testing::NamedConfig& f : testing::FamilyConfigs()) {
        SCOPED_TRACE(f.name);
        block = block == 16 ? 7 : 16;   // blocks that do and do not divide the windows, in turn (the emulator is slow)
        SCOPED_TRACE(block);
        auto m = Model::FromConfig(f.config, 17);
        ASSERT_TRUE(m.ok()) << m.status();
        Pair p = MakePair(std::move(*m), block);
        ASSERT_TRUE(p.gpu.runner);
        const auto mixed = MixedSteps(300);
        const std::vector<float> want = RunSteps(*p.cpu.runner, 3, mixed, 1);
        ASSERT_FALSE(want.empty());
        EXPECT_LT(RelMaxDiff(want, RunSteps(*p.gpu.runner, 3, mixed, 1)), 1e-4) << "packed";
        const auto chunked = ChunkedSteps(300);
        EXPECT_LT(RelMaxDiff(RunSteps(*p.cpu.runner, 1, chunked), RunSteps(*p.gpu.runner, 1, chunked)), 1e-4)
            << "chunked";
    }
}

// Decode rows sharing an 80-token prefix (five whole blocks, ten times the
// windows): the GPU runs global layers through cascade attention and
// windowed layers per row, and its logits are the CPU's.
std::vector<float> SharedPrefixDecodes(StepRunner& runner) {
    const int vocab = runner.model().config().vocab_size;
    KvBlockPool& pool = runner.pool();
    std::vector<float> all;
    auto run = [&](const StepPlan& plan) {
        StepOutput out;
        const absl::Status s = runner.Run(plan, &out);
        EXPECT_TRUE(s.ok()) << s;
        if (s.ok()) all.insert(all.end(), out.logits.data(), out.logits.data() + int64_t{out.rows} * vocab);
        return s.ok();
    };
    constexpr int kPrefix = 80, kMembers = 4;
    BlockTable prefix;
    const std::vector<int32_t> prefix_ids = Ids(kPrefix, 40, vocab);
    EXPECT_TRUE(prefix.Reserve(pool, kPrefix).ok());
    StepPlan first;
    first.Add(&prefix, prefix_ids.data(), kPrefix, 0);
    if (!run(first)) return all;
    std::vector<BlockTable> members(kMembers);
    std::vector<std::vector<int32_t>> own(kMembers);
    StepPlan suffixes;
    for (int i = 0; i < kMembers; ++i) {
        members[i].Share(pool, prefix.blocks(), kPrefix);
        own[i] = Ids(2 + 3 * i, 50 + i, vocab);
        const int32_t n = static_cast<int32_t>(own[i].size());
        EXPECT_TRUE(members[i].Reserve(pool, kPrefix + n).ok());
        suffixes.Add(&members[i], own[i].data(), n, kPrefix);
    }
    if (!run(suffixes)) return all;
    for (int step = 0; step < 3; ++step) {
        StepPlan decode;
        std::vector<std::vector<int32_t>> next(kMembers);
        for (int i = 0; i < kMembers; ++i) {
            next[i] = Ids(1, 90 + 4 * step + i, vocab);
            EXPECT_TRUE(members[i].Reserve(pool, members[i].num_tokens() + 1).ok());
            decode.Add(&members[i], next[i].data(), 1, members[i].num_tokens());
        }
        if (!run(decode)) return all;
    }
    return all;
}

TEST(CudaForward, NewFamiliesCascadeOverAPrefixLongerThanTheWindow) {
    REQUIRE_GPU();
    for (const testing::NamedConfig& f : testing::FamilyConfigs()) {
        SCOPED_TRACE(f.name);
        auto m = Model::FromConfig(f.config, 19);
        ASSERT_TRUE(m.ok()) << m.status();
        Pair p = MakePair(std::move(*m), 16);
        ASSERT_TRUE(p.gpu.runner);
        const std::vector<float> want = SharedPrefixDecodes(*p.cpu.runner);
        ASSERT_FALSE(want.empty());
        EXPECT_LT(RelMaxDiff(want, SharedPrefixDecodes(*p.gpu.runner)), 1e-4);
        EXPECT_GT(p.gpu.runner->cascade_queries(), 0u) << "the members' decode steps formed a cascade group";
    }
}

// LazyLLM on the GPU makes the CPU's decisions: a pruned prefill and decode
// steps (which revive tokens from the aux cache) give the same logits and
// leave every token at the same depth, the aux cache holding the same tokens.
void ExpectLazyPruningMatchesTheCpu(std::unique_ptr<Model> m, const std::string& schedule_text, int n_prompt) {
    const ModelConfig& c = m->config();
    auto schedule = ParseLazySchedule(schedule_text, c.n_layers);
    ASSERT_TRUE(schedule.ok()) << schedule.status();
    Pair p = MakePair(std::move(m), 16);
    ASSERT_TRUE(p.gpu.runner);
    struct Side {
        StepRunner* runner;
        BlockTable kv;
        std::unique_ptr<LazyState> lazy;
    };
    Side sides[2] = {{p.cpu.runner.get(), {}, nullptr}, {p.gpu.runner.get(), {}, nullptr}};
    for (Side& s : sides) s.lazy = std::make_unique<LazyState>(s.runner->pool(), c.n_layers, c.dim, *schedule, 0);
    std::vector<int32_t> tokens = Ids(n_prompt, 4, c.vocab_size);
    int32_t done = 0;
    for (int step = 0; step < 6; ++step) {
        SCOPED_TRACE(step);
        const int32_t n = static_cast<int32_t>(tokens.size()) - done;
        std::vector<float> logits[2];
        for (int i = 0; i < 2; ++i) {
            Side& s = sides[i];
            ASSERT_TRUE(s.kv.Reserve(s.runner->pool(), done + n).ok());
            if (step == 0) {
                ASSERT_TRUE(s.lazy->aux().Reserve(done + n).ok());
            }
            StepPlan plan;
            plan.Add(&s.kv, tokens.data() + done, n, done);
            plan.seqs.back().lazy = s.lazy.get();
            StepOutput out;
            const absl::Status st = s.runner->Run(plan, &out);
            ASSERT_TRUE(st.ok()) << st;
            logits[i].assign(out.logits.data(), out.logits.data() + c.vocab_size);
        }
        EXPECT_LT(RelMaxDiff(logits[0], logits[1]), 1e-4);
        for (int32_t j = 0; j < done + n; ++j) {
            ASSERT_EQ(sides[0].lazy->depth(j), sides[1].lazy->depth(j)) << "token " << j;
        }
        EXPECT_EQ(sides[0].lazy->aux().size(), sides[1].lazy->aux().size());
        done += n;
        tokens.push_back(static_cast<int32_t>(std::max_element(logits[0].begin(), logits[0].end()) - logits[0].begin()));
    }
    EXPECT_GT(sides[0].lazy->aux().size(), 0) << "the schedule pruned something";
}

TEST(CudaForward, LazyPruningMatchesTheCpu) {
    REQUIRE_GPU();
    PREPACK_REQUIRE_STORIES();
    auto m = Model::Load(testing::StoriesDir() + "/stories260K.gguf");
    ASSERT_TRUE(m.ok()) << m.status();
    ExpectLazyPruningMatchesTheCpu(std::move(*m), "0:0.5,2:0.3,3:0.15", 300);
}

// The same on the windowed, soft-capped families: LazyLLM's scores are
// formed as their attention is (scale, soft-cap, the window's keys only).
TEST(CudaForward, LazyPruningOnWindowedFamiliesMatchesTheCpu) {
    REQUIRE_GPU();
    for (const testing::NamedConfig& f : testing::FamilyConfigs()) {
        if (f.config.sliding_window == 0) continue;
        SCOPED_TRACE(f.name);
        auto m = Model::FromConfig(f.config, 23);
        ASSERT_TRUE(m.ok()) << m.status();
        // A pruning layer must have layers after it.
        ExpectLazyPruningMatchesTheCpu(std::move(*m), f.config.n_layers >= 3 ? "0:0.5,1:0.3" : "0:0.4", 120);
    }
}

TEST(CudaBackend, WithoutAGpuTheDeviceIsUnavailableNotACrash) {
    if (cuda::DeviceCount() > 0) GTEST_SKIP() << "a GPU is present: this checks the GPU-less answer";
    auto m = Model::Load("synthetic:tiny");
    ASSERT_TRUE(m.ok());
    auto b = CreateBackend(**m, Device::kCuda, 16, 0, 64, cpu::DType::kF32);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kUnavailable) << b.status();
    EngineOptions o;
    o.model = "synthetic:tiny";
    o.device = Device::kCuda;
    auto e = Engine::Create(o);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kUnavailable) << e.status();
}

TEST(CudaBackend, AKvBudgetBeyondTheDeviceIsResourceExhausted) {
    REQUIRE_GPU();
    auto m = Model::Load("synthetic:tiny");
    ASSERT_TRUE(m.ok());
    const uint64_t too_much = cuda::FreeDeviceBytes() + (8ull << 30);
    auto b = CreateBackend(**m, Device::kCuda, 16, too_much, 0, cpu::DType::kF32);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted) << b.status();
    // And the device is still usable afterwards.
    EXPECT_TRUE(CreateBackend(**m, Device::kCuda, 16, 64ull << 20, 0, cpu::DType::kF32).ok());
}

std::vector<int32_t> Collect(Stream& s, Event* finish) {
    std::vector<int32_t> tokens;
    Event e;
    while (s.Next(&e, 60000)) {
        if (e.kind == Event::Kind::kToken) {
            tokens.push_back(e.token);
        } else {
            *finish = e;
        }
    }
    return tokens;
}

TEST(CudaEngine, GreedyTokensEqualTheCpuOracleUnderEveryPolicy) {
    REQUIRE_GPU();
    PREPACK_REQUIRE_STORIES();
    const std::string path = testing::StoriesDir() + "/stories260K.gguf";
    auto model = Model::Load(path);
    ASSERT_TRUE(model.ok());
    // Two groups sharing an 88-token prefix (BatchLLM computes it once, the
    // members' first private write copies the shared partial block on the
    // device, and their decode steps read the 80 tokens of shared whole
    // blocks through cascade attention), and a loner.
    std::vector<Request> reqs;
    for (int g = 0; g < 2; ++g) {
        for (int k = 0; k < 3; ++k) {
            Request r;
            r.prompt_tokens = Ids(88, 20 + g, 512);
            const std::vector<int32_t> tail = Ids(3 + 5 * k, 30 + 3 * g + k, 512);
            r.prompt_tokens.insert(r.prompt_tokens.end(), tail.begin(), tail.end());
            r.max_tokens = 12;
            r.sampling.temperature = 0.0f;
            r.ignore_eos = true;
            reqs.push_back(r);
        }
    }
    Request story;
    story.prompt = "Once upon a time";
    story.max_tokens = 40;
    story.sampling.temperature = 0.0f;
    reqs.push_back(story);
    // LazyLLM beside the others: its pruned prefill runs alone in its step,
    // its decode steps revive tokens from the aux cache in device memory.
    Request lazy;
    lazy.prompt_tokens = Ids(200, 50, 512);
    lazy.max_tokens = 10;
    lazy.sampling.temperature = 0.0f;
    lazy.ignore_eos = true;
    lazy.lazy = true;
    reqs.push_back(lazy);
    std::vector<std::vector<int32_t>> want;
    for (const Request& r : reqs) want.push_back(testing::SoloGenerate(**model, r).tokens);

    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        SCOPED_TRACE(SchedulePolicyName(policy));
        EngineOptions o;
        o.model = path;
        o.device = Device::kCuda;
        o.policy = policy;
        o.kv_budget_bytes = 64ull << 20;
        o.max_batch_tokens = 64;
        auto engine = Engine::Create(o);
        ASSERT_TRUE(engine.ok()) << engine.status();
        auto streams = (*engine)->SubmitBatch(reqs);
        for (size_t i = 0; i < reqs.size(); ++i) {
            ASSERT_TRUE(streams[i].ok()) << streams[i].status();
            Event finish;
            EXPECT_EQ(Collect(**streams[i], &finish), want[i]) << "request " << i;
            EXPECT_TRUE(finish.status.ok()) << finish.status;
        }
        if (policy == SchedulePolicy::kBatchLlm) {
            EXPECT_GT((*engine)->Stats().cascade_decode_tokens, 0u) << "members decode through cascade attention";
        }
    }
}

}  // namespace
}  // namespace prepack
