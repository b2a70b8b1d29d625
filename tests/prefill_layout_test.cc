// Prepacking: bin packing against hand-worked cases and properties, layout
// shapes, and numerical equivalence of padded, sorted, packed and ragged
// prefill (logits, KV contents, greedy continuations) with one-at-a-time runs.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine/generate.h"
#include "core/prepacking/prefill_layout.h"
#include "core/model/reference.h"
#include "core/request/sampler.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using Bins = std::vector<std::vector<int32_t>>;

const std::vector<PrefillLayout> kLayouts = {PrefillLayout::kPadded, PrefillLayout::kSorted, PrefillLayout::kPacked,
                                             PrefillLayout::kRagged};

TEST(BinPacking, HandWorkedBestFitAndFirstFit) {
    // cap 6, lengths 5 4 3 2 1: 5 and 4 and 3 open bins; 2 goes to the fullest
    // bin it fits (4 -> 6); 1 goes to 5 -> 6.
    auto bfd = PackBins({5, 4, 3, 2, 1}, 6, BinPacking::kBestFitDecreasing);
    ASSERT_TRUE(bfd.ok());
    EXPECT_EQ(*bfd, (Bins{{0, 4}, {1, 3}, {2}}));
    // cap 10, lengths 8 6 3 1: after {8} {6,3}, the 1 fits both; best fit
    // takes the fuller {6,3}, first fit the first bin {8}.
    auto b = PackBins({8, 6, 3, 1}, 10, BinPacking::kBestFitDecreasing);
    auto f = PackBins({8, 6, 3, 1}, 10, BinPacking::kFirstFitDecreasing);
    ASSERT_TRUE(b.ok() && f.ok());
    EXPECT_EQ(*b, (Bins{{0}, {1, 2, 3}}));
    EXPECT_EQ(*f, (Bins{{0, 3}, {1, 2}}));
    // Input order does not matter beyond ties: longest first.
    auto u = PackBins({1, 3, 8, 6}, 10, BinPacking::kBestFitDecreasing);
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(*u, (Bins{{2}, {3, 1, 0}}));
}

TEST(BinPacking, RejectsItemsThatCannotFit) {
    EXPECT_EQ(PackBins({3, 11}, 10, BinPacking::kBestFitDecreasing).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(PackBins({3, 0}, 10, BinPacking::kBestFitDecreasing).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(PackBins({3}, 0, BinPacking::kFirstFitDecreasing).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(PackBins({}, 5, BinPacking::kBestFitDecreasing).ok());
    EXPECT_EQ(ParseBinPacking("bfd").value(), BinPacking::kBestFitDecreasing);
    EXPECT_FALSE(ParseBinPacking("best").ok());
}

TEST(BinPacking, PropertiesOnRandomBatches) {
    Rng rng(2024);
    for (int trial = 0; trial < 300; ++trial) {
        const int n = 1 + static_cast<int>(rng.NextU64() % 80);
        std::vector<int32_t> lengths(n);
        for (int32_t& l : lengths) l = 1 + static_cast<int32_t>(rng.NextU64() % 1000);
        const int32_t cap = *std::max_element(lengths.begin(), lengths.end()) + static_cast<int32_t>(rng.NextU64() % 300);
        auto bfd = PackBins(lengths, cap, BinPacking::kBestFitDecreasing);
        auto ffd = PackBins(lengths, cap, BinPacking::kFirstFitDecreasing);
        ASSERT_TRUE(bfd.ok() && ffd.ok());
        for (const Bins* bins : {&*bfd, &*ffd}) {
            std::multiset<int32_t> seen;
            int64_t total = 0;
            for (const auto& bin : *bins) {
                ASSERT_FALSE(bin.empty());
                int64_t fill = 0;
                for (int32_t i : bin) {
                    fill += lengths[i];
                    seen.insert(i);
                }
                EXPECT_LE(fill, cap) << "trial " << trial;
                total += fill;
            }
            EXPECT_EQ(seen.size(), lengths.size());
            EXPECT_EQ(std::set<int32_t>(seen.begin(), seen.end()).size(), lengths.size()) << "an item twice";
            // Never more bins than the trivial lower bound allows plus slack:
            // at most one bin can be at most half full in a first/best-fit packing.
            EXPECT_LE(static_cast<int64_t>(bins->size()), 2 * ((total + cap - 1) / cap) + 1);
        }
        EXPECT_LE(bfd->size(), ffd->size()) << "trial " << trial;
    }
}

std::vector<std::vector<int32_t>> Prompts(const std::vector<int>& lengths, int vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<std::vector<int32_t>> p;
    for (int n : lengths) {
        std::vector<int32_t> ids(n);
        for (int32_t& id : ids) id = 3 + static_cast<int32_t>(rng.NextU64() % (vocab - 3));
        p.push_back(ids);
    }
    return p;
}

TEST(PlanPrefill, ShapesOfEachLayout) {
    const auto prompts = Prompts({5, 3, 2}, 100, 1);
    LayoutOptions o;
    o.sorted_batch = 2;
    auto padded = PlanPrefill(PrefillLayout::kPadded, prompts, o);
    auto sorted = PlanPrefill(PrefillLayout::kSorted, prompts, o);
    auto packed = PlanPrefill(PrefillLayout::kPacked, prompts, o);
    auto ragged = PlanPrefill(PrefillLayout::kRagged, prompts, o);
    ASSERT_TRUE(padded.ok() && sorted.ok() && packed.ok() && ragged.ok());
    EXPECT_EQ(padded->rows, 3);
    EXPECT_EQ(padded->computed_tokens, 15);
    EXPECT_EQ(padded->kv_slots, (std::vector<int32_t>{5, 5, 5}));
    EXPECT_EQ(sorted->steps.size(), 2u);   // [5,3] then [2]
    EXPECT_EQ(sorted->computed_tokens, 12);
    EXPECT_EQ(packed->rows, 2);            // {5} {3,2}
    EXPECT_EQ(packed->computed_tokens, 10);
    EXPECT_DOUBLE_EQ(packed->padding_fraction(), 0.0);
    EXPECT_EQ(ragged->computed_tokens, 10);
    EXPECT_EQ(ragged->prompt_tokens, 10);
    EXPECT_NEAR(padded->padding_fraction(), 1.0 - 10.0 / 15.0, 1e-12);
    // Packed: positions restart at 0 for each prompt in a row.
    const StepPlan& p = packed->steps[0].plan;
    EXPECT_EQ(p.positions, (std::vector<int32_t>{0, 1, 2, 3, 4, 0, 1, 2, 0, 1}));
    EXPECT_EQ(packed->steps[0].prompt, (std::vector<int32_t>{0, 1, 2}));
    // Padded: pad rows continue the prompt's positions and are in its span.
    EXPECT_EQ(padded->steps[0].plan.seqs[2].n_pad, 3);
    // Packed rows are padded to the fullest row; a capacity below the
    // longest prompt is refused.
    o.pack_capacity = 6;
    auto wide = PlanPrefill(PrefillLayout::kPacked, Prompts({5, 3, 2, 1}, 100, 2), o);
    ASSERT_TRUE(wide.ok());
    EXPECT_EQ(wide->rows, 2);              // {5,1} {3,2}
    EXPECT_EQ(wide->steps[0].width, 6);
    EXPECT_EQ(wide->computed_tokens, 12);
    o.pack_capacity = 4;
    EXPECT_EQ(PlanPrefill(PrefillLayout::kPacked, prompts, o).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(PlanPrefill(PrefillLayout::kRagged, {}, o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlanPrefill, EqualLengthsGiveTheSamePlanInEveryLayout) {
    // No padding to remove: packed and ragged must not cost anything extra,
    // so their forward pass is exactly padded's (same rows, same spans).
    const auto prompts = Prompts({24, 24, 24, 24, 24}, 100, 3);
    auto padded = PlanPrefill(PrefillLayout::kPadded, prompts, {});
    ASSERT_TRUE(padded.ok());
    for (PrefillLayout layout : {PrefillLayout::kPacked, PrefillLayout::kRagged}) {
        auto p = PlanPrefill(layout, prompts, {});
        ASSERT_TRUE(p.ok());
        ASSERT_EQ(p->steps.size(), 1u);
        const StepPlan& a = padded->steps[0].plan;
        const StepPlan& b = p->steps[0].plan;
        EXPECT_EQ(a.tokens, b.tokens) << PrefillLayoutName(layout);
        EXPECT_EQ(a.positions, b.positions);
        ASSERT_EQ(a.seqs.size(), b.seqs.size());
        for (size_t i = 0; i < a.seqs.size(); ++i) {
            EXPECT_EQ(a.seqs[i].token_begin, b.seqs[i].token_begin);
            EXPECT_EQ(a.seqs[i].n_tokens, b.seqs[i].n_tokens);
            EXPECT_EQ(a.seqs[i].n_pad, b.seqs[i].n_pad);
        }
        EXPECT_EQ(p->computed_tokens, padded->computed_tokens);
    }
}

// Greedy decode of every sequence together, one ragged step per token.
std::vector<std::vector<int32_t>> GreedyContinue(ForwardPass& fwd, const std::vector<BlockTable*>& kv,
                                                 const std::vector<float>& first_logits, int steps) {
    const int vocab = fwd.model().config().vocab_size;
    std::vector<std::vector<int32_t>> out(kv.size());
    std::vector<int32_t> next(kv.size());
    for (size_t s = 0; s < kv.size(); ++s) {
        next[s] = ArgMax({first_logits.data() + s * vocab, size_t(vocab)});
        out[s].push_back(next[s]);
    }
    StepOutput o;
    for (int t = 1; t < steps; ++t) {
        StepPlan plan;
        for (size_t s = 0; s < kv.size(); ++s) {
            EXPECT_TRUE(kv[s]->Reserve(fwd.pool(), kv[s]->num_tokens() + 1).ok());
            plan.Add(kv[s], &next[s], 1, kv[s]->num_tokens());
        }
        EXPECT_TRUE(fwd.Run(plan, &o).ok());
        for (size_t s = 0; s < kv.size(); ++s) {
            next[s] = ArgMax({o.logits.data() + size_t(o.first_row[s]) * vocab, size_t(vocab)});
            out[s].push_back(next[s]);
        }
    }
    return out;
}

// K and V of every layer and token of one sequence, in token order.
std::vector<float> KvContents(const KvBlockPool& pool, const BlockTable& t, int n_layers, int n_tokens) {
    std::vector<float> out;
    const int bs = pool.block_size(), kv = pool.kv_dim();
    for (int l = 0; l < n_layers; ++l) {
        for (int i = 0; i < n_tokens; ++i) {
            const float* k = pool.K(l, t.blocks()[i / bs]) + (i % bs) * kv;
            const float* v = pool.V(l, t.blocks()[i / bs]) + (i % bs) * kv;
            out.insert(out.end(), k, k + kv);
            out.insert(out.end(), v, v + kv);
        }
    }
    return out;
}

class LayoutEquivalence : public ::testing::Test {
protected:
    void SetUp() override {
        ModelConfig c;
        c.name = "layout";
        c.dim = 64;
        c.n_heads = 8;
        c.n_kv_heads = 2;
        c.head_dim = 8;
        c.rope_dim = 8;
        c.n_layers = 2;
        c.hidden_dim = 128;
        c.vocab_size = 300;
        c.max_context = 256;
        auto m = Model::FromConfig(c, 3);
        ASSERT_TRUE(m.ok());
        model_ = std::move(*m);
    }
    std::unique_ptr<Model> model_;
};

TEST_F(LayoutEquivalence, LogitsKvAndContinuationsMatchOneAtATime) {
    const ModelConfig& c = model_->config();
    const auto prompts = Prompts({1, 17, 40, 5, 33, 64, 2, 9}, c.vocab_size, 77);
    const int steps = 6;
    // One prompt at a time: reference logits and greedy continuations.
    std::vector<std::vector<float>> want_logits;
    std::vector<std::vector<int32_t>> want_tokens;
    auto solo_pool = KvBlockPool::Create(c, 16, 32ull << 20);
    ASSERT_TRUE(solo_pool.ok());
    ForwardPass solo(*model_, **solo_pool);
    for (const auto& p : prompts) {
        ReferenceForward ref(*model_);
        for (int32_t id : p) want_logits.push_back(ref.Step(id));
        want_logits.erase(want_logits.end() - int(p.size()), want_logits.end() - 1);
        GenerateRequest r;
        r.prompt_tokens = p;
        r.max_tokens = steps;
        r.sampling.temperature = 0.0f;
        auto g = Generate(solo, r);
        ASSERT_TRUE(g.ok()) << g.status();
        want_tokens.push_back(g->tokens);
    }

    std::vector<std::vector<float>> ragged_kv;
    for (PrefillLayout layout : kLayouts) {
        for (BinPacking packing : {BinPacking::kBestFitDecreasing, BinPacking::kFirstFitDecreasing}) {
            if (packing == BinPacking::kFirstFitDecreasing && layout != PrefillLayout::kPacked) continue;
            SCOPED_TRACE(std::string(PrefillLayoutName(layout)) + (packing == BinPacking::kFirstFitDecreasing ? " ffd" : ""));
            auto pool = KvBlockPool::Create(c, 8, 32ull << 20);
            ASSERT_TRUE(pool.ok());
            ForwardPass fwd(*model_, **pool);
            LayoutOptions o;
            o.sorted_batch = 3;
            o.packing = packing;
            auto plan = PlanPrefill(layout, prompts, o);
            ASSERT_TRUE(plan.ok());
            std::vector<BlockTable> tables(prompts.size());
            std::vector<BlockTable*> kv;
            for (auto& t : tables) kv.push_back(&t);
            auto r = RunPrefill(fwd, *plan, kv);
            ASSERT_TRUE(r.ok()) << r.status();
            // Memory estimate equals what the run used.
            EXPECT_EQ(EstimatePeakBytes(c, *plan, 8), r->peak_kv_bytes + r->activation_bytes);
            for (size_t p = 0; p < prompts.size(); ++p) {
                EXPECT_EQ(tables[p].num_tokens(), int(prompts[p].size()));
                EXPECT_LT(testing::MaxRelDiff(r->logits.data() + p * c.vocab_size, want_logits[p].data(), c.vocab_size),
                          2e-4)
                    << "prompt " << p;
                const auto kvc = KvContents(**pool, tables[p], c.n_layers, int(prompts[p].size()));
                if (layout == PrefillLayout::kPadded) {
                    ragged_kv.push_back(kvc);
                } else {
                    EXPECT_LT(testing::MaxRelDiff(kvc.data(), ragged_kv[p].data(), kvc.size()), 1e-4) << "prompt " << p;
                }
                // No blocks beyond what the tokens need are kept after prefill.
                EXPECT_EQ(tables[p].capacity(), (int(prompts[p].size()) + 7) / 8 * 8);
            }
            EXPECT_EQ(GreedyContinue(fwd, kv, r->logits, steps), want_tokens);
            for (auto& t : tables) t.Release();
            EXPECT_EQ((*pool)->num_free(), (*pool)->num_blocks());
        }
    }
}

// Prefills `prompts` in `layout` on a fresh pool (mini-batches of 2 when
// sorted), then continues each greedily for `steps` tokens: the logits after
// each prompt, and the continuations.
struct LayoutRun {
    std::vector<float>                logits;   // [prompts, vocab]
    std::vector<std::vector<int32_t>> tokens;
};
LayoutRun RunLayout(const Model& m, PrefillLayout layout, const std::vector<std::vector<int32_t>>& prompts, int steps) {
    LayoutRun out;
    auto pool = KvBlockPool::Create(m.config(), 16, 16ull << 20);
    EXPECT_TRUE(pool.ok()) << pool.status();
    if (!pool.ok()) return out;
    ForwardPass fwd(m, **pool);
    LayoutOptions o;
    o.sorted_batch = 2;
    auto plan = PlanPrefill(layout, prompts, o);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return out;
    std::vector<BlockTable> tables(prompts.size());
    std::vector<BlockTable*> kv;
    for (auto& t : tables) kv.push_back(&t);
    auto r = RunPrefill(fwd, *plan, kv);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return out;
    out.logits.assign(r->logits.data(), r->logits.data() + prompts.size() * m.config().vocab_size);
    out.tokens = GreedyContinue(fwd, kv, r->logits, steps);
    return out;
}

TEST(LayoutStories, ReferenceContinuationsInEveryLayout) {
    PREPACK_REQUIRE_STORIES();
    const auto ref = nlohmann::json::parse(testing::ReadFile(testing::StoriesDir() + "/reference.json"));
    auto m = Model::Load(testing::StoriesDir() + "/stories260K.gguf");
    ASSERT_TRUE(m.ok()) << m.status();
    const Tokenizer& tok = (*m)->tokenizer();
    std::vector<std::vector<int32_t>> prompts;
    for (const char* extra : {"Lily", "The sun was shining and the birds were singing in the big green park near the house"}) {
        prompts.push_back(tok.Encode(extra, true).value());
    }
    for (const auto& tc : ref["cases"]) prompts.push_back(tc["prompt_ids"].get<std::vector<int32_t>>());
    for (PrefillLayout layout : kLayouts) {
        SCOPED_TRACE(PrefillLayoutName(layout));
        const LayoutRun run = RunLayout(**m, layout, prompts, 48);
        ASSERT_EQ(run.tokens.size(), prompts.size());
        for (size_t i = 0; i < ref["cases"].size(); ++i) {
            EXPECT_EQ(run.tokens[2 + i], ref["cases"][i]["greedy_ids"].get<std::vector<int32_t>>()) << i;
        }
    }
}

// Every layout gives the first one's logits (within 1e-4) and 8 greedy tokens.
void ExpectSameLogitsInEveryLayout(const Model& m, const std::vector<std::vector<int32_t>>& prompts) {
    const int32_t vocab = m.config().vocab_size;
    const LayoutRun first = RunLayout(m, kLayouts[0], prompts, 8);
    ASSERT_EQ(first.tokens.size(), prompts.size());
    for (PrefillLayout layout : kLayouts) {
        SCOPED_TRACE(PrefillLayoutName(layout));
        const LayoutRun run = RunLayout(m, layout, prompts, 8);
        ASSERT_EQ(run.logits.size(), first.logits.size());
        for (size_t p = 0; p < prompts.size(); ++p) {
            EXPECT_LT(testing::MaxRelDiff(run.logits.data() + p * vocab, first.logits.data() + p * vocab, vocab), 1e-4)
                << "prompt " << p;
        }
        EXPECT_EQ(run.tokens, first.tokens);
    }
}

TEST(LayoutRealshape, BpeModelsGiveTheSameLogitsInEveryLayout) {
    const char* env = std::getenv("PREPACK_REALSHAPE_DIR");
    const std::string dir = env != nullptr && env[0] != '\0' ? env : PREPACK_REALSHAPE_DIR;
    if (!testing::FileExists(dir + "/qwen2.gguf")) {
        GTEST_SKIP() << "no " << dir << "/qwen2.gguf (make it with scripts/make_realshape_f32.sh)";
    }
    for (const char* name : {"qwen2.gguf", "llama32-bpe.gguf"}) {
        SCOPED_TRACE(name);
        auto m = Model::Load(dir + "/" + name);
        ASSERT_TRUE(m.ok()) << m.status();
        std::vector<std::vector<int32_t>> prompts;
        for (const char* text : {"Once upon a time", "The capital of France is", "def add(a, b):\n    return a + b",
                                 "Zürich 2024: 東京 and Москва, <|eot_id|> 42"}) {
            prompts.push_back((*m)->tokenizer().Encode(text, true).value());
        }
        ExpectSameLogitsInEveryLayout(**m, prompts);
    }
}

// A Q4_K_M file kept quantized: every layout decodes the same weight
// panels for its prompts' rows. The prompts are over 16 tokens so that every
// layout's batches take the many-row path (decoded panels, f32 GEMM); fewer
// rows take the int8 dot products, whose activation rounding would differ
// from it by more than layout equivalence allows.
TEST(LayoutRealshape, AQuantizedModelGivesTheSameLogitsInEveryLayout) {
    const std::string path = testing::ModelsDir() + "/realshape/llama32-bpe-Q4_K_M.gguf";
    if (!testing::FileExists(path)) GTEST_SKIP() << "no " << path;
    auto m = Model::Load(path);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_TRUE((*m)->weights().AnyQuantized());
    std::vector<std::vector<int32_t>> prompts;
    for (const char* text : {"Once upon a time there was a little girl who lived in a village near the forest.",
                             "The capital of France is Paris, and the capital of Germany is Berlin; the capital of",
                             "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a * b\n",
                             "Zürich 2024: 東京 and Москва, <|eot_id|> 42 is the answer to everything, they say"}) {
        prompts.push_back((*m)->tokenizer().Encode(text, true).value());
        ASSERT_GT(prompts.back().size(), 16u) << text;
    }
    ExpectSameLogitsInEveryLayout(**m, prompts);
}

}  // namespace
}  // namespace prepack
