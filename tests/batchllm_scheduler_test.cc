// The BatchLLM scheduler driven without a forward pass (each step "computes"
// what it planned; a request "decodes" one token per step): nested groups
// share their enclosing prefix's blocks (block ids compared), each prefix is
// computed once for the batch however tight the KV budget, members
// preempted under pressure re-attach to their pinned prefix, and every
// request finishes. Token-exactness under preemption is engine_test's.
#include <algorithm>
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "core/engine/policies.h"
#include "core/kv/kv_cache.h"
#include "core/model/model.h"

namespace prepack {
namespace {

constexpr int32_t kBlock = 16;

std::vector<int32_t> Random(std::mt19937_64& rng, int32_t n) {
    std::vector<int32_t> t(n);
    for (int32_t& x : t) x = 3 + static_cast<int32_t>(rng() % 400);
    return t;
}

// A system prompt shared by all, a document per group, a question each.
struct TwoLevel {
    int32_t sys_len, doc_len, groups, members, max_tokens;
};

class SchedulerDriver {
public:
    SchedulerDriver(SchedulePolicy policy, int32_t kv_blocks) {
        ModelConfig c = SyntheticConfig("tiny").value();
        model_ = std::move(Model::FromConfig(c, 1).value());
        pool_ = std::move(KvBlockPool::Create(c, kBlock, uint64_t(kv_blocks) * kBlock * c.KvBytesPerToken()).value());
        sched_ = MakeScheduler(policy, *model_, *pool_, waiting_, {256, 64});
    }

    std::vector<std::shared_ptr<Sequence>> Submit(const TwoLevel& w, uint64_t seed) {
        std::mt19937_64 rng(seed);
        const std::vector<int32_t> sys = Random(rng, w.sys_len);
        std::vector<std::shared_ptr<Sequence>> batch;
        for (int g = 0; g < w.groups; ++g) {
            std::vector<int32_t> doc = sys;
            const std::vector<int32_t> own = Random(rng, w.doc_len);
            doc.insert(doc.end(), own.begin(), own.end());
            for (int m = 0; m < w.members; ++m) {
                Request r;
                r.prompt_tokens = doc;
                const std::vector<int32_t> q = Random(rng, 5 + 3 * m);
                r.prompt_tokens.insert(r.prompt_tokens.end(), q.begin(), q.end());
                r.max_tokens = w.max_tokens;
                auto s = std::make_shared<Sequence>(r, model_->tokenizer(), 4096);
                s->tokens = r.prompt_tokens;
                s->n_prompt = static_cast<int32_t>(s->tokens.size());
                batch.push_back(std::move(s));
            }
        }
        std::shuffle(batch.begin(), batch.end(), rng);
        requests_ = batch;
        order_ = sched_->OrderBatch(batch);
        waiting_.PushBack(order_);
        return order_;
    }

    // Runs to the end; `each_step` sees the scheduler after every step.
    // False if a step could plan nothing while work remained.
    template <typename F>
    bool Run(F each_step) {
        for (int step = 0; step < 100000; ++step) {
            for (auto& s : waiting_.TakeIf([](const Sequence& q) { return q.abandoned; })) End(*s);
            if (waiting_.empty() && sched_->running().empty()) return true;
            ScheduledStep st;
            if (!sched_->Plan(&st)) return false;
            for (Sequence* s : st.seqs) {
                if (s->internal) prefix_computed_ += s->planned;
            }
            sched_->Computed(st);
            for (Sequence* s : st.seqs) {
                if (s->internal || s->num_computed != static_cast<int32_t>(s->tokens.size())) continue;
                // Logits for its last token: one more token, or the end.
                if (static_cast<int32_t>(s->tokens.size()) - s->n_prompt == s->request.max_tokens) {
                    End(*s);
                } else {
                    s->tokens.push_back(3 + static_cast<int32_t>(s->tokens.size() % 400));
                }
            }
            std::erase_if(sched_->running(), [](const auto& s) { return s->done; });
            each_step(*sched_);
        }
        return false;
    }

    const Scheduler& scheduler() const { return *sched_; }
    const KvBlockPool& pool() const { return *pool_; }
    int64_t prefix_computed() const { return prefix_computed_; }
    const std::vector<std::shared_ptr<Sequence>>& requests() const { return requests_; }

private:
    void End(Sequence& s) {   // as Engine::Finish does
        s.done = true;
        s.kv.Release();
        sched_->Ended(s);
    }

    std::unique_ptr<Model>                 model_;
    std::unique_ptr<KvBlockPool>           pool_;
    SequenceQueue                          waiting_;
    std::unique_ptr<Scheduler>             sched_;
    std::vector<std::shared_ptr<Sequence>> requests_, order_;
    int64_t                                prefix_computed_ = 0;
};

bool StartsWith(const std::vector<int32_t>& blocks, const std::vector<int32_t>& prefix, size_t n) {
    return blocks.size() >= n && prefix.size() >= n && std::equal(prefix.begin(), prefix.begin() + n, blocks.begin());
}

TEST(BatchLlmScheduler, NestedGroupsShareTheOuterPrefixBlocks) {
    const TwoLevel w{48, 64, 2, 3, 4};
    SchedulerDriver d(SchedulePolicy::kBatchLlm, 400);
    const auto order = d.Submit(w, 1);
    // The queue: the system prompt's prefix first, then each document's.
    std::vector<Sequence*> prefixes;
    for (const auto& s : order) {
        if (s->internal) prefixes.push_back(s.get());
    }
    ASSERT_EQ(prefixes.size(), 3u);
    ASSERT_TRUE(order[0]->internal);
    EXPECT_EQ(order[0]->n_prompt, w.sys_len);
    Sequence* sys = order[0].get();
    const size_t sys_blocks = w.sys_len / kBlock, doc_blocks = (w.sys_len + w.doc_len) / kBlock;
    int inner_checked = 0, member_checked = 0;
    ASSERT_TRUE(d.Run([&](Scheduler& s) {
        for (Sequence* p : prefixes) {
            if (p == sys || !p->done || p->kv.blocks().empty()) continue;
            EXPECT_TRUE(StartsWith(p->kv.blocks(), sys->kv.blocks(), sys_blocks)) << "a document's prefix";
            ++inner_checked;
        }
        for (const auto& r : s.running()) {
            if (r->internal || r->num_computed < w.sys_len + w.doc_len) continue;
            EXPECT_EQ(r->cached_tokens, w.sys_len + w.doc_len);
            EXPECT_TRUE(StartsWith(r->kv.blocks(), sys->kv.blocks(), sys_blocks)) << "a member's system prompt";
            const bool under_a_document = std::any_of(prefixes.begin(), prefixes.end(), [&](Sequence* p) {
                return p != sys && StartsWith(r->kv.blocks(), p->kv.blocks(), doc_blocks);
            });
            EXPECT_TRUE(under_a_document) << "a member's document";
            ++member_checked;
        }
    }));
    EXPECT_GT(inner_checked, 0);
    EXPECT_GT(member_checked, 0);
    // Every prefix's own tokens once: the system prompt and each document.
    EXPECT_EQ(d.prefix_computed(), w.sys_len + w.groups * w.doc_len);
    EXPECT_EQ(d.pool().num_free(), d.pool().num_blocks()) << "every block back once the batch is done";
}

TEST(BatchLlmScheduler, PreemptedMembersReattachAndNoPrefixIsComputedTwice) {
    // 24 blocks: the pinned prefixes take 3 + 2 x 4, each member grows to 4-5
    // blocks of its own, so members are preempted while their group runs.
    const TwoLevel w{48, 64, 2, 4, 40};
    SchedulerDriver d(SchedulePolicy::kBatchLlm, 24);
    d.Submit(w, 2);
    ASSERT_TRUE(d.Run([&](Scheduler& s) {
        EXPECT_EQ(s.prefix_tokens_recomputed(), 0u);
        for (const auto& r : s.running()) {
            if (!r->internal && r->num_computed > 0) {
                EXPECT_EQ(r->cached_tokens, w.sys_len + w.doc_len);
            }
        }
    })) << "the batch did not finish";
    EXPECT_GT(d.scheduler().preemptions(), 0u) << "the budget did not force preemption";
    EXPECT_EQ(d.scheduler().prefix_tokens_recomputed(), 0u);
    EXPECT_EQ(d.prefix_computed(), w.sys_len + w.groups * w.doc_len);
    for (const auto& r : d.requests()) {
        EXPECT_EQ(static_cast<int32_t>(r->tokens.size()) - r->n_prompt, w.max_tokens);
    }
    EXPECT_EQ(d.pool().num_free(), d.pool().num_blocks());
}

TEST(BatchLlmScheduler, ABudgetBarelyAboveOneMemberStillFinishes) {
    // 12 blocks cannot hold the three prefixes and a member at its peak:
    // the groups run one after the other, each prefix let go when its
    // members are done, and whatever had to be computed again is counted.
    const TwoLevel w{48, 64, 2, 2, 20};
    SchedulerDriver d(SchedulePolicy::kBatchLlm, 12);
    d.Submit(w, 3);
    ASSERT_TRUE(d.Run([](Scheduler&) {})) << "the batch did not finish";
    for (const auto& r : d.requests()) {
        EXPECT_EQ(static_cast<int32_t>(r->tokens.size()) - r->n_prompt, w.max_tokens);
    }
    EXPECT_EQ(d.prefix_computed(), w.sys_len + w.groups * w.doc_len + int64_t(d.scheduler().prefix_tokens_recomputed()));
    EXPECT_EQ(d.pool().num_free(), d.pool().num_blocks());
}

TEST(BatchLlmScheduler, ABatchRequestInNoGroupStartsWhenItsPeakFits) {
    // Two requests with nothing shared: prompts of one block, 60 tokens out
    // (5 blocks at their peak), 7 blocks in all. Both prompts fit at once,
    // so fcfs runs them together; batchllm starts the second only when its
    // peak fits beside half the first's remaining growth (2 blocks), i.e.
    // after it, though both would start in the same step.
    const TwoLevel w{0, 0, 1, 2, 60};
    for (const SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kBatchLlm}) {
        SchedulerDriver d(policy, 7);
        const auto order = d.Submit(w, 4);
        EXPECT_TRUE(std::none_of(order.begin(), order.end(), [](const auto& s) { return s->internal; }));
        size_t most_running = 0;
        ASSERT_TRUE(d.Run([&](Scheduler& s) { most_running = std::max(most_running, s.running().size()); }));
        EXPECT_EQ(most_running, policy == SchedulePolicy::kFcfs ? 2u : 1u) << SchedulePolicyName(policy);
        for (const auto& r : d.requests()) {
            EXPECT_EQ(static_cast<int32_t>(r->tokens.size()) - r->n_prompt, w.max_tokens);
        }
        EXPECT_EQ(d.pool().num_free(), d.pool().num_blocks());
    }
}

}  // namespace
}  // namespace prepack
