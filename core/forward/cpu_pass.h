// The optimised forward pass: runs one StepPlan (many tokens of many
// sequences) through the model, reading and writing the paged KV cache.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/aligned_buffer.h"
#include "core/kv/kv_cache.h"
#include "core/lazyllm/lazy_prune.h"
#include "core/model/model.h"
#include "core/step/step_plan.h"
#include "core/step/step_runner.h"
#include "kernels/cpu/attention.h"

namespace prepack {

// Below this many shared tokens, plain paged attention is as fast as the
// cascade (see `prepack bench cascade` in docs/benchmarks.md).
constexpr int32_t kCascadeMinSharedTokens = 64;

// Checks a plan against the model and the sequences' block tables, as
// StepRunner::Run() promises: what every backend runs first.
absl::Status ValidateStepPlan(const ModelConfig& config, const StepPlan& plan);

// Layer `layer`'s attention as the kernels take it: head shape, score
// scale, soft-cap and (on a windowed layer) the sliding window.
cpu::AttentionShape LayerAttentionShape(const ModelConfig& config, int32_t layer);

class ForwardPass : public StepRunner {
public:
    // `pool` must keep its blocks in host memory.
    ForwardPass(const Model& model, KvBlockPool& pool);

    absl::Status Run(const StepPlan& plan, StepOutput* out) override;

    // Bytes of activation workspace a step of `tokens` rows with
    // `logit_rows` rows of logits needs (what Run() allocates for it).
    static uint64_t ActivationBytes(const ModelConfig& config, int64_t tokens, int64_t logit_rows);
    uint64_t workspace_bytes() const override;

    // Cascade (shared-prefix) decode attention: on by default.
    void set_cascade(bool on) override { cascade_ = on; }
    uint64_t cascade_queries() const override { return cascade_queries_; }

    const Model& model() const override { return model_; }
    KvBlockPool& pool() override { return pool_; }

private:
    void EnsureActivations(int64_t rows);
    void WriteKv(const StepPlan& plan, int32_t layer);
    void PlanAttention(const StepPlan& plan);
    void Attention(int32_t layer);
    // The block's output in xb_ (t rows) joins the residual stream x_:
    // RMS-normalised by `post_norm` where the model has one, times the
    // residual scale.
    void AddBranch(const float* post_norm, int64_t t);
    void Logits(const StepPlan& plan, StepOutput* out);
    // LazyLLM (cpu_pass_lazy.cpp, deciding through core/lazyllm/lazy_prune.h).
    // The last token's head-averaged attention over each pruning sequence's keys.
    void ScoreLastQueries(const StepPlan& plan, int32_t layer);
    // Drops the rows of tokens scored out (their hidden states to the aux
    // cache), brings back kept tokens that an earlier step pruned after this
    // layer (from the aux cache), and compacts the activations.
    void Prune(const StepPlan& plan, int32_t layer);

    const Model&  model_;
    KvBlockPool&  pool_;
    std::vector<float> inv_freq_;
    std::vector<float> inv_freq_swa_;   // windowed layers' (their own RoPE base)
    // Activations, grown to the largest step seen and then reused.
    AlignedFloats x_, xb_, qkv_, att_, gu_, hb_, x_next_;
    // Per row of this layer: RoPE position and token index in its sequence
    // (-1 for padding rows outside every span).
    std::vector<int32_t> row_pos_, row_slot_;
    std::vector<SeqRows> seq_rows_;   // per SeqStep
    std::vector<std::vector<float>> lazy_scores_;   // per SeqStep, for LazyLLM
    bool          cascade_ = true;
    uint64_t      cascade_queries_ = 0;
    std::vector<cpu::AttentionSpan>     spans_;    // this step's, for every layer
    std::vector<cpu::SharedPrefixGroup> shared_;
    uint64_t      logits_bytes_ = 0;
};

}  // namespace prepack
