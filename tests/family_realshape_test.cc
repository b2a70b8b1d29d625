// The families of issue 48 (Gemma 1/2/3, Granite 3, Phi-3/3.5/4-mini) at
// real shapes with real vocabularies: the random-weight F32 files that
// scripts/make_family_models.py writes, against llama.cpp's outputs on them
// (tests/data/families/reference.json, by scripts/make_family_references.py),
// compared as ../shared/models/realshape/README.md says: prompt ids exactly;
// 32 greedy ids equal to one of llama.cpp's two runs (flash attention off /
// on) up to that run's first step whose top-1 margin is under 0.05; the
// first position's top-5 logprobs within 1e-3 of the flash-attention-off
// run. Five prompts per file, two of 130-340 tokens, past the 32-key
// sliding windows of gemma2/gemma3. Also: the naive reference pass against
// the optimised one on a prompt past the window; the loader reads what each
// file states; and through the engine, on the sliding-window files, a batch
// packed across the window and prompts sharing a prefix longer than the
// window (fcfs, lru, batchllm) each continue exactly as they do alone.
// scripts/make_family_models.sh makes the files (PREPACK_FAMILY_DIR, default
// build/family-models); without them the tests skip and say so.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine/engine.h"
#include "core/engine/generate.h"
#include "core/forward/cpu_pass.h"
#include "core/model/reference.h"
#include "tests/llamacpp_compare.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

constexpr double kNearTie = 0.05;   // the realshape README's near tie
// First-position logprobs against llama.cpp's flash-attention-off run: the
// README's 1e-3 for F32 files, measured within 7e-6 here on the SiLU
// families (granite, phi3). On the GeGLU ones (gemma*) llama.cpp itself is
// off by up to 1.5e-3: its CPU GELU reads a table indexed by the input
// rounded to fp16 (GGML_GELU_FP16). A float64 evaluation of gemma.gguf
// with the exact tanh GELU lands within 1e-6 of prepack and 1.0e-3 from
// llama.cpp on "The capital of France is"; with llama.cpp's fp16 rounding
// it lands within 2e-5 of llama.cpp. So 3e-3 there, still 40 times under
// what any exercised part moves (soft-caps >= 0.13, windows >= 0.4, the
// global RoPE scaling >= 0.12: reference.json's "checks").
constexpr double kSiluTolerance = 1e-3;
constexpr double kGegluTolerance = 3e-3;
const char kReference[] = PREPACK_SOURCE_DIR "/tests/data/families/reference.json";

std::string FamilyDir() {
    const char* env = std::getenv("PREPACK_FAMILY_DIR");
    return env != nullptr && env[0] != '\0' ? env : PREPACK_FAMILY_DIR;
}

std::string ModelPath(const std::string& name) { return FamilyDir() + "/" + name + ".gguf"; }

struct Case {
    std::string          prompt;
    std::vector<int32_t> prompt_tokens;
    std::vector<int32_t> greedy_off, greedy_on;
    std::vector<double>  margins_off, margins_on;
    std::vector<std::pair<int32_t, double>> top5_off;   // (id, logprob)
};

// The reference's cases of `model` ("gemma3.gguf"), one per prompt, in file order.
std::vector<Case> CasesOf(const std::string& model) {
    const nlohmann::json ref = nlohmann::json::parse(testing::ReadFile(kReference));
    std::vector<Case> out;
    std::map<std::string, size_t> index;
    for (const auto& c : ref["cases"]) {
        if (c["model"] != model) continue;
        const std::string prompt = c["prompt"];
        if (!index.count(prompt)) {
            index[prompt] = out.size();
            Case k;
            k.prompt = prompt;
            k.prompt_tokens = c["prompt_tokens"].get<std::vector<int32_t>>();
            out.push_back(std::move(k));
        }
        Case& k = out[index[prompt]];
        const bool off = c["flash_attn"] == "off";
        (off ? k.greedy_off : k.greedy_on) = c["greedy_ids"].get<std::vector<int32_t>>();
        (off ? k.margins_off : k.margins_on) = c["top1_margins"].get<std::vector<double>>();
        if (off) {
            for (const auto& t : c["first_top5"]) k.top5_off.emplace_back(t["id"], t["logprob"]);
        }
    }
    return out;
}

// How many leading ids of `got` equal `want`'s, and whether that is enough:
// equal up to (not including) the first step whose llama.cpp top-1 margin is
// below the near tie, past which either token is right.
struct GreedyAgreement {
    size_t same = 0;
    size_t needed = 0;
    bool   ok() const { return same >= needed; }
};

GreedyAgreement Agreement(const std::vector<int32_t>& got, const std::vector<int32_t>& want,
                          const std::vector<double>& margins) {
    GreedyAgreement a;
    while (a.same < got.size() && a.same < want.size() && got[a.same] == want[a.same]) ++a.same;
    a.needed = want.size();
    for (size_t i = 0; i < margins.size() && i < want.size(); ++i) {
        if (margins[i] < kNearTie) {
            a.needed = i;
            break;
        }
    }
    return a;
}

std::vector<double> LogSoftmax(const std::vector<float>& logits) {
    double max = *std::max_element(logits.begin(), logits.end()), sum = 0.0;
    for (float x : logits) sum += std::exp(double(x) - max);
    const double log_z = max + std::log(sum);
    std::vector<double> out;
    out.reserve(logits.size());
    for (float x : logits) out.push_back(double(x) - log_z);
    return out;
}

// The models, each loaded once for the whole run.
Model* Loaded(const std::string& name, absl::Status* status) {
    static std::map<std::string, std::unique_ptr<Model>> models;
    static std::map<std::string, absl::Status> errors;
    if (!models.count(name) && !errors.count(name)) {
        auto m = Model::Load(ModelPath(name));
        if (m.ok()) {
            models[name] = std::move(*m);
        } else {
            errors[name] = m.status();
        }
    }
    *status = errors.count(name) ? errors[name] : absl::OkStatus();
    return models.count(name) ? models[name].get() : nullptr;
}

// prepack's greedy ids and first-position logits, one request alone on a
// fresh pool (the solo oracle the engine checks compare with).
absl::StatusOr<GenerateResult> Alone(Model& m, const std::vector<int32_t>& prompt_tokens, int32_t max_tokens) {
    PP_ASSIGN_OR_RETURN(auto pool, KvBlockPool::Create(m.config(), 16, 64ull << 20));
    ForwardPass fwd(m, *pool);
    GenerateRequest req;
    req.prompt_tokens = prompt_tokens;
    req.max_tokens = max_tokens;
    req.sampling.temperature = 0.0f;
    req.ignore_eos = true;
    return Generate(fwd, req);
}

class FamilyRealshapeTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (!testing::FileExists(kReference)) GTEST_SKIP() << "no " << kReference;
        if (!testing::FileExists(ModelPath(name()))) {
            GTEST_SKIP() << "no " << ModelPath(name())
                         << " (make the family files with scripts/make_family_models.sh; needs PyPI numpy and gguf)";
        }
        absl::Status status;
        model_ = Loaded(name(), &status);
        ASSERT_NE(model_, nullptr) << name() << ": " << status;
        cases_ = CasesOf(name() + ".gguf");
        ASSERT_EQ(cases_.size(), 5u) << "cases of " << name() << " in " << kReference;
    }
    const std::string& name() const { return GetParam(); }
    // The first case whose prompt is longer than `tokens`.
    const Case& LongerThan(size_t tokens) const {
        for (const Case& c : cases_) {
            if (c.prompt_tokens.size() > tokens) return c;
        }
        return cases_.back();
    }
    Model*            model_ = nullptr;
    std::vector<Case> cases_;
};

TEST_P(FamilyRealshapeTest, PromptIdsGreedyIdsAndFirstLogprobsAgreeWithLlamaCpp) {
    for (const Case& c : cases_) {
        SCOPED_TRACE(name() + " / " + std::to_string(c.prompt_tokens.size()) + "-token prompt \"" +
                     c.prompt.substr(0, 30) + "\"");
        GenerateRequest req;
        req.prompt = c.prompt;
        req.max_tokens = static_cast<int32_t>(c.greedy_off.size());
        req.sampling.temperature = 0.0f;
        req.ignore_eos = true;
        auto pool = KvBlockPool::Create(model_->config(), 16, 64ull << 20);
        ASSERT_TRUE(pool.ok()) << pool.status();
        ForwardPass fwd(*model_, **pool);
        auto r = Generate(fwd, req);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->prompt_tokens, c.prompt_tokens) << "prompt ids";
        const GreedyAgreement off = Agreement(r->tokens, c.greedy_off, c.margins_off);
        const GreedyAgreement on = Agreement(r->tokens, c.greedy_on, c.margins_on);
        EXPECT_TRUE(off.ok() || on.ok()) << "greedy ids differ from both llama.cpp runs before a near tie: "
                                         << off.same << " of " << off.needed << " (off), " << on.same << " of "
                                         << on.needed << " (on)";
        const std::vector<double> lp = LogSoftmax(r->first_logits);
        const double tolerance =
            model_->config().ffn_act == FfnActivation::kGeluTanh ? kGegluTolerance : kSiluTolerance;
        double worst = 0.0;
        for (const auto& [id, want] : c.top5_off) {
            worst = std::max(worst, std::fabs(lp[id] - want));
            EXPECT_NEAR(lp[id], want, tolerance) << "first-position logprob of " << id;
        }
        std::printf("%-11s %3zu prompt ids: greedy as llama.cpp for %2zu ids (off) / %2zu (on), needed %2zu / %2zu; "
                    "first top-5 logprobs within %.1e\n",
                    name().c_str(), c.prompt_tokens.size(), off.same, on.same, off.needed, on.needed, worst);
    }
}

// The naive single-sequence pass (core/model/reference) and the optimised
// one agree on the shortest prompt past the 32-key window (37 to 45 tokens:
// the reference pass is slow).
TEST_P(FamilyRealshapeTest, TheReferencePassAgreesWithTheOptimisedOne) {
    const Case& c = LongerThan(32);
    ASSERT_GT(c.prompt_tokens.size(), 32u);
    auto r = Alone(*model_, c.prompt_tokens, 1);
    ASSERT_TRUE(r.ok()) << r.status();
    ReferenceForward ref(*model_);
    std::vector<float> want;
    for (int32_t t : c.prompt_tokens) want = ref.Step(t);
    EXPECT_LT(testing::MaxRelDiff(r->first_logits.data(), want.data(), want.size()), 1e-3)
        << c.prompt_tokens.size() << "-token prompt";
}

// What the generator wrote is what the loader read (the keys of each family).
TEST_P(FamilyRealshapeTest, TheLoaderReadsWhatTheFileStates) {
    const ModelConfig& c = model_->config();
    EXPECT_EQ(c.arch, name().substr(0, name().find('-')));
    EXPECT_EQ(c.dim, 256);
    EXPECT_EQ(c.hidden_dim, 768);
    if (name() == "gemma") {
        EXPECT_EQ(c.head_dim, 64);
        EXPECT_EQ(c.n_kv_heads, 1);
        EXPECT_FLOAT_EQ(c.embed_scale, 16.0f);
        EXPECT_EQ(c.ffn_act, FfnActivation::kGeluTanh);
        EXPECT_TRUE(c.tied_output);
        EXPECT_EQ(c.sliding_window, 0);
    } else if (name() == "gemma2") {
        EXPECT_EQ(c.sliding_window, 32);
        for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(c.Windowed(l), l % 2 == 0) << "layer " << l;
        EXPECT_FLOAT_EQ(c.attn_softcap, 3.0f);
        EXPECT_FLOAT_EQ(c.final_softcap, 8.0f);
        EXPECT_TRUE(c.post_norms);
        EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
    } else if (name() == "gemma3") {
        EXPECT_EQ(c.n_layers, 6);
        EXPECT_EQ(c.sliding_window, 32);
        for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(c.Windowed(l), l != 5) << "layer " << l;
        EXPECT_EQ(c.head_dim, 64);
        EXPECT_EQ(c.q_dim(), 512);
        EXPECT_TRUE(c.qk_norm);
        EXPECT_TRUE(c.post_norms);
        EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
        EXPECT_FLOAT_EQ(c.rope_theta_swa, 1e4f);
        EXPECT_FLOAT_EQ(c.rope_scale, 8.0f);
    } else if (name() == "granite") {
        EXPECT_FLOAT_EQ(c.embed_scale, 12.0f);
        EXPECT_FLOAT_EQ(c.residual_scale, 0.22f);
        EXPECT_FLOAT_EQ(c.attn_scale, 0.0078125f);
        EXPECT_FLOAT_EQ(c.logit_scale, 8.0f);
        EXPECT_FALSE(c.tied_output);
    } else if (name() == "phi3") {
        EXPECT_EQ(c.sliding_window, 0) << "llama.cpp ignores phi3.attention.sliding_window";
        EXPECT_EQ(c.rope_dim, 64);
        EXPECT_TRUE(c.rope_freqs) << "LongRoPE factors";
        EXPECT_NEAR(c.rope_attn_factor, std::sqrt(1.0 + std::log(32.0) / std::log(4096.0)), 1e-6);
        EXPECT_FALSE(c.tied_output);
    } else if (name() == "phi3-short") {
        EXPECT_EQ(c.rope_dim, 48);
        EXPECT_EQ(c.n_kv_heads, 2);
        EXPECT_TRUE(c.rope_freqs) << "LongRoPE factors";
        EXPECT_FLOAT_EQ(c.rope_attn_factor, 1.0f);
        EXPECT_TRUE(c.tied_output);
    }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyRealshapeTest,
                         ::testing::Values("gemma", "gemma2", "gemma3", "granite", "phi3", "phi3-short"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                             std::string n = i.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

// ---- through the engine, on the sliding-window files -------------------------

Request GreedyRequest(const std::vector<int32_t>& prompt_tokens, int32_t max_tokens) {
    Request r;
    r.prompt_tokens = prompt_tokens;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    r.logprobs = 1;
    return r;
}

// Each prompt's greedy run alone (the solo oracle).
std::vector<GenerateResult> EachAlone(Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                      int32_t max_tokens) {
    std::vector<GenerateResult> out;
    for (const auto& p : prompts) {
        auto r = Alone(model, p, max_tokens);
        EXPECT_TRUE(r.ok()) << r.status();
        out.push_back(r.ok() ? *r : GenerateResult{});
    }
    return out;
}

// Runs `prompts` together as one offline batch under `policy` and checks
// each continues as it did `alone`: the same greedy ids and, F32 weights and
// KV throughout, the same log-probabilities up to summation order (1e-4).
// Returns the engine's counters.
EngineStats RunTogetherAndCompareAlone(const std::string& path, const std::vector<std::vector<int32_t>>& prompts,
                                       const std::vector<GenerateResult>& alone, SchedulePolicy policy,
                                       int32_t max_tokens) {
    EngineOptions o;
    o.model = path;
    o.threads = 2;
    o.kv_budget_bytes = 64ull << 20;
    o.policy = policy;
    auto engine = Engine::Create(o);
    EXPECT_TRUE(engine.ok()) << engine.status();
    if (!engine.ok()) return {};
    std::vector<Request> reqs;
    for (const auto& p : prompts) reqs.push_back(GreedyRequest(p, max_tokens));
    auto streams = (*engine)->SubmitBatch(reqs);
    for (size_t i = 0; i < prompts.size(); ++i) {
        SCOPED_TRACE(std::string(SchedulePolicyName(policy)) + ", " + std::to_string(prompts[i].size()) +
                     "-token prompt " + std::to_string(i));
        EXPECT_TRUE(streams[i].ok()) << streams[i].status();
        if (!streams[i].ok()) continue;
        const testing::StreamAnswer got = testing::CollectStream(*streams[i].value());
        EXPECT_EQ(got.tokens, alone[i].tokens) << "greedy ids together vs alone";
        // The alone run's log p of its own first token, from its first logits.
        if (!got.logprobs.empty() && !alone[i].tokens.empty()) {
            const std::vector<double> lp = LogSoftmax(alone[i].first_logits);
            EXPECT_NEAR(got.logprobs[0], lp[alone[i].tokens[0]], 1e-4) << "first token's log p together vs alone";
        }
    }
    return (*engine)->Stats();
}

class FamilyEngineTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (!testing::FileExists(kReference)) GTEST_SKIP() << "no " << kReference;
        if (!testing::FileExists(ModelPath(GetParam()))) {
            GTEST_SKIP() << "no " << ModelPath(GetParam()) << " (scripts/make_family_models.sh makes it)";
        }
        absl::Status status;
        model_ = Loaded(GetParam(), &status);
        ASSERT_NE(model_, nullptr) << status;
        ASSERT_EQ(model_->config().sliding_window, 32);
        // The ~340-token story's ids: prompts are cut from it, and from the
        // ~150-token one for different endings.
        const std::vector<Case> cases = CasesOf(GetParam() + ".gguf");
        ASSERT_EQ(cases.size(), 5u);
        story_ = cases[4].prompt_tokens;
        other_ = cases[3].prompt_tokens;
        ASSERT_GT(story_.size(), 200u);
    }
    std::vector<int32_t> Prefix(size_t n) const { return {story_.begin(), story_.begin() + n}; }
    Model*               model_ = nullptr;
    std::vector<int32_t> story_, other_;
};

// Prompts of 20 to 97 tokens, on both sides of the 32-key window (and of
// the 16-token KV blocks), prefilled together in packed steps: each row's
// window is its own sequence's.
TEST_P(FamilyEngineTest, ABatchPackedAcrossTheWindowContinuesAsEachAlone) {
    std::vector<std::vector<int32_t>> prompts;
    for (size_t n : {20, 31, 32, 33, 47, 64, 97}) prompts.push_back(Prefix(n));
    const EngineStats s = RunTogetherAndCompareAlone(ModelPath(GetParam()), prompts, EachAlone(*model_, prompts, 16),
                                                     SchedulePolicy::kFcfs, 16);
    std::printf("%s: %zu prompts prefilled in %llu steps\n", GetParam().c_str(), prompts.size(),
                static_cast<unsigned long long>(s.prefill_steps));
    EXPECT_LT(s.prefill_steps, prompts.size()) << "the prompts were not packed together";
}

// Prompts sharing the story's first 100 tokens (over three windows, six KV
// blocks) with different endings, under every policy: fcfs computes each
// whole; lru and batchllm share the prefix's KV (a windowed layer's blocks
// included) and must give the same result.
TEST_P(FamilyEngineTest, PromptsSharingAPrefixLongerThanTheWindowContinueAsEachAlone) {
    std::vector<std::vector<int32_t>> prompts;
    for (size_t ending : {0, 1, 5, 40}) {
        std::vector<int32_t> p = Prefix(100);
        p.insert(p.end(), other_.begin() + 1, other_.begin() + 1 + ending);   // other_[0] is BOS
        prompts.push_back(p);
    }
    prompts.push_back(Prefix(200));   // the shared prefix continued past further windows
    const std::vector<GenerateResult> alone = EachAlone(*model_, prompts, 16);
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        const EngineStats s = RunTogetherAndCompareAlone(ModelPath(GetParam()), prompts, alone, policy, 16);
        std::printf("%s %-8s: prefix hit tokens %llu of %llu\n", GetParam().c_str(), SchedulePolicyName(policy),
                    static_cast<unsigned long long>(s.prefix_hit_tokens),
                    static_cast<unsigned long long>(s.prefix_query_tokens));
        if (policy != SchedulePolicy::kFcfs) {
            EXPECT_GE(s.prefix_hit_tokens, 96u) << SchedulePolicyName(policy) << " shared no prefix longer than the window";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(SlidingWindow, FamilyEngineTest, ::testing::Values("gemma2", "gemma3"));

}  // namespace
}  // namespace prepack
