#include "core/forward/cpu_pass.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "core/lazyllm/lazy_state.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"

namespace prepack {

ForwardPass::ForwardPass(const Model& model, KvBlockPool& pool) : model_(model), pool_(pool) {
    assert(pool.on_host());   // the CPU kernels read the blocks directly
    inv_freq_ = RopeInverseFrequencies(model.config(), model.weights());
    inv_freq_swa_ = RopeInverseFrequencies(model.config(), model.weights(), /*windowed=*/true);
}

cpu::AttentionShape LayerAttentionShape(const ModelConfig& c, int32_t layer) {
    cpu::AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim, c.qkv_dim(), c.q_dim()};
    shape.scale = c.attn_scale;
    shape.softcap = c.attn_softcap;
    if (c.Windowed(layer)) shape.window = c.sliding_window;
    return shape;
}

namespace {

// Floats of activation per step row, and per logits row: the one formula both
// Run()'s allocations and memory estimates use.
int64_t FloatsPerRow(const ModelConfig& c) {
    return int64_t{c.dim} /* x */ + std::max(c.dim, c.q_dim()) /* xb */ + c.qkv_dim() + c.q_dim() /* att */ +
           3 * int64_t{c.hidden_dim} /* gate|up, swiglu */;
}

// LongRoPE's attention factor: llama.cpp multiplies RoPE's cos and sin by
// it, i.e. the rotated dims of every Q and K head (the rest stay as they are).
void ScaleRotatedDims(float* qkv, int64_t rows, const ModelConfig& c) {
    const int heads = c.n_heads + c.n_kv_heads;
#pragma omp parallel for schedule(static) if (rows >= 16)
    for (int64_t r = 0; r < rows; ++r) {
        for (int h = 0; h < heads; ++h) {
            float* head = qkv + r * c.qkv_dim() + static_cast<int64_t>(h) * c.head_dim;
            for (int i = 0; i < c.rope_dim; ++i) head[i] *= c.rope_attn_factor;
        }
    }
}

}  // namespace

uint64_t ForwardPass::ActivationBytes(const ModelConfig& c, int64_t tokens, int64_t logit_rows) {
    return static_cast<uint64_t>(tokens * FloatsPerRow(c) + logit_rows * int64_t{c.vocab_size}) * sizeof(float);
}

uint64_t ForwardPass::workspace_bytes() const {
    return (x_.size() + xb_.size() + qkv_.size() + att_.size() + gu_.size() + hb_.size() + x_next_.size()) *
               sizeof(float) +
           logits_bytes_;
}

absl::Status ValidateStepPlan(const ModelConfig& c, const StepPlan& plan) {
    const int64_t t = static_cast<int64_t>(plan.tokens.size());
    if (t == 0) return absl::InvalidArgumentError("step has no tokens");
    if (plan.positions.size() != plan.tokens.size()) {
        return absl::InvalidArgumentError("step has a different number of tokens and positions");
    }
    for (int64_t i = 0; i < t; ++i) {
        if (plan.tokens[i] < 0 || plan.tokens[i] >= c.vocab_size) {
            return absl::InvalidArgumentError(absl::StrCat("token id ", plan.tokens[i], " at row ", i,
                                                           " is outside the vocabulary [0, ", c.vocab_size, ")"));
        }
        if (plan.positions[i] < 0 || plan.positions[i] >= c.max_context) {
            return absl::InvalidArgumentError(absl::StrCat("position ", plan.positions[i], " at row ", i,
                                                           " is outside the context [0, ", c.max_context, ")"));
        }
    }
    std::vector<uint8_t> covered(t, 0);
    for (const SeqStep& s : plan.seqs) {
        const int64_t rows = int64_t{s.n_tokens} + s.n_pad;
        if (s.kv == nullptr || s.n_tokens < 1 || s.n_pad < 0 || s.token_begin < 0 || s.token_begin + rows > t) {
            return absl::InvalidArgumentError("step has a span without KV or outside its tokens");
        }
        for (int64_t i = s.token_begin; i < s.token_begin + rows; ++i) {
            if (covered[i]++) return absl::InvalidArgumentError(absl::StrCat("row ", i, " is in two spans"));
        }
        if (s.lazy != nullptr) {
            if (s.n_pad != 0 || s.logits == LogitsWanted::kAll) {
                return absl::InvalidArgumentError("a LazyLLM span cannot have padding or want every row's logits");
            }
            for (int32_t i = 0; i < s.n_tokens; ++i) {
                if (plan.positions[s.token_begin + i] != s.kv->num_tokens() + i) {
                    return absl::InvalidArgumentError("a LazyLLM span's positions must be its token indices");
                }
            }
        }
        if (s.kv->num_tokens() + rows > s.kv->capacity()) {
            return absl::FailedPreconditionError(absl::StrCat(
                "sequence needs KV room for ", s.kv->num_tokens() + rows, " tokens but has ",
                s.kv->capacity()));
        }
    }
    std::vector<const BlockTable*> tables;
    for (const SeqStep& s : plan.seqs) tables.push_back(s.kv);
    std::sort(tables.begin(), tables.end());
    if (std::adjacent_find(tables.begin(), tables.end()) != tables.end()) {
        return absl::InvalidArgumentError("a sequence appears twice in one step");
    }
    return absl::OkStatus();
}

void ForwardPass::EnsureActivations(int64_t t) {
    const ModelConfig& c = model_.config();
    x_.EnsureSize(t * c.dim);
    xb_.EnsureSize(t * std::max<int64_t>(c.dim, c.q_dim()));
    qkv_.EnsureSize(t * c.qkv_dim());
    att_.EnsureSize(t * c.q_dim());
    gu_.EnsureSize(t * 2 * c.hidden_dim);
    hb_.EnsureSize(t * c.hidden_dim);
}

void ForwardPass::WriteKv(const StepPlan& plan, int32_t layer) {
    const ModelConfig& c = model_.config();
    const int32_t bs = pool_.block_size();
    const int64_t kv = c.kv_dim(), stride = c.qkv_dim(), q = c.q_dim();
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const SeqRows rows = seq_rows_[k];
        const int32_t* blocks = s.kv->blocks().data();
        // A decode step's one row per sequence is a copy of kv_dim floats:
        // not worth waking the team for.
#pragma omp parallel for schedule(static) if (int64_t{rows.count} * kv >= (int64_t{1} << 15))
        for (int32_t i = 0; i < rows.count; ++i) {
            const int32_t slot = row_slot_[rows.begin + i];
            const float* row = qkv_.data() + (rows.begin + i) * stride;
            pool_.WriteRow(layer, blocks[slot / bs], slot % bs, row + q, row + q + kv);
        }
        if (s.lazy != nullptr) {
            for (int32_t i = 0; i < rows.count; ++i) s.lazy->Computed(row_slot_[rows.begin + i], layer);
        }
    }
}

void ForwardPass::PlanAttention(const StepPlan& plan) {
    spans_.clear();
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        const SeqRows rows = seq_rows_[k];
        cpu::AttentionSpan span{rows.begin, rows.count, s.kv->num_tokens(), s.kv->blocks().data()};
        if (s.lazy != nullptr) {
            // Only what pruning actually changed costs anything: rows that
            // are no longer consecutive tokens, keys some layer lacks (a
            // token stopped early has its state in the aux cache).
            const int32_t first = row_slot_[rows.begin], last = row_slot_[rows.begin + rows.count - 1];
            span.kv_before = first;
            if (last - first + 1 != rows.count) span.q_slots = row_slot_.data() + rows.begin;
            if (s.lazy->aux().size() > 0) span.key_depth = s.lazy->depth();
        }
        spans_.push_back(span);
    }
    // Decode sequences that share prefix blocks get cascade attention.
    shared_.clear();
    if (cascade_) {
        shared_ = cpu::FindSharedPrefixes(spans_.data(), static_cast<int32_t>(spans_.size()), pool_.block_size(),
                                          kCascadeMinSharedTokens, 2);
    }
}

void ForwardPass::Attention(int32_t layer) {
    const cpu::AttentionShape shape = LayerAttentionShape(model_.config(), layer);
    const cpu::PagedKv kv = pool_.Layer(layer);
    for (cpu::AttentionSpan& span : spans_) span.layer = layer;
    cpu::PagedAttention(qkv_.data(), att_.data(), shape, spans_.data(), static_cast<int32_t>(spans_.size()), kv,
                        shared_);
}

void ForwardPass::Logits(const StepPlan& plan, StepOutput* out) {
    const ModelConfig& c = model_.config();
    const ModelWeights& w = model_.weights();
    std::vector<int64_t> rows;
    out->first_row.assign(plan.seqs.size(), -1);
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
        const SeqStep& s = plan.seqs[i];
        if (s.logits == LogitsWanted::kNone) continue;
        out->first_row[i] = static_cast<int32_t>(rows.size());
        // A span's real tokens are its first n_tokens rows (pads follow);
        // under LazyLLM its last token is its last row, never pruned.
        const int64_t end = seq_rows_[i].begin + (s.lazy ? seq_rows_[i].count : s.n_tokens);
        const int64_t first = s.logits == LogitsWanted::kAll ? seq_rows_[i].begin : end - 1;
        for (int64_t r = first; r < end; ++r) rows.push_back(r);
    }
    const int64_t n = static_cast<int64_t>(rows.size());
    out->rows = static_cast<int32_t>(n);
    if (n == 0) return;
    // Only the rows that produce logits pass the final norm and the output
    // matrix: for a prefill that is one row per prompt, not every token.
    for (int64_t i = 0; i < n; ++i) {
        std::memcpy(xb_.data() + i * c.dim, x_.data() + rows[i] * c.dim, c.dim * sizeof(float));
    }
    cpu::RmsNorm(xb_.data(), w.output_norm, xb_.data(), n, c.dim, c.norm_eps);
    out->logits.EnsureSize(static_cast<size_t>(n) * c.vocab_size);
    logits_bytes_ = std::max<uint64_t>(logits_bytes_, out->logits.size() * sizeof(float));
    cpu::Linear(xb_.data(), w.output, out->logits.data(), n, c.vocab_size, c.dim, false);
    if (c.logit_scale != 1.0f) cpu::Scale(out->logits.data(), n * c.vocab_size, 1.0f / c.logit_scale);
    if (c.final_softcap > 0.0f) cpu::SoftCap(out->logits.data(), n * c.vocab_size, c.final_softcap);
}

void ForwardPass::AddBranch(const float* post_norm, int64_t t) {
    const ModelConfig& c = model_.config();
    if (post_norm != nullptr) cpu::RmsNorm(xb_.data(), post_norm, xb_.data(), t, c.dim, c.norm_eps);
    if (c.residual_scale != 1.0f) cpu::Scale(xb_.data(), t * c.dim, c.residual_scale);
    cpu::AddTo(x_.data(), xb_.data(), t * c.dim);
}

absl::Status ForwardPass::Run(const StepPlan& plan, StepOutput* out) {
    PP_RETURN_IF_ERROR(ValidateStepPlan(model_.config(), plan));
    const ModelConfig& c = model_.config();
    const ModelWeights& w = model_.weights();
    int64_t t = static_cast<int64_t>(plan.tokens.size());
    const int64_t d = c.dim, h = c.hidden_dim;
    EnsureActivations(t);
    // Padding rows belong to no span: attention leaves them untouched, so
    // give them a defined value once.
    std::memset(att_.data(), 0, t * c.q_dim() * sizeof(float));

    InitStepRows(plan, &row_pos_, &row_slot_, &seq_rows_);
    BeginLazyStep(plan);
    // Spans and shared-prefix groups stay the same in every layer (until a
    // LazyLLM pruning moves rows).
    PlanAttention(plan);
    for (const auto& g : shared_) cascade_queries_ += g.spans.size();
    cpu::Gather(w.token_embd, plan.tokens.data(), x_.data(), t, d);
    if (c.embed_scale != 1.0f) cpu::Scale(x_.data(), t * d, c.embed_scale);
    // A block's output goes straight onto the residual stream (the GEMM
    // accumulates) unless a post-norm or a residual scale comes between.
    const bool branch_apart = c.post_norms || c.residual_scale != 1.0f;
    for (int32_t l = 0; l < c.n_layers; ++l) {
        const LayerWeights& lw = w.layers[l];
        cpu::RmsNorm(x_.data(), lw.attn_norm, xb_.data(), t, d, c.norm_eps);
        cpu::Linear(xb_.data(), lw.wqkv, qkv_.data(), t, c.qkv_dim(), d, false);
        if (lw.bqkv != nullptr) cpu::AddBias(qkv_.data(), lw.bqkv, t, c.qkv_dim());
        if (lw.q_norm != nullptr) {
            cpu::RmsNormHeads(qkv_.data(), t, c.qkv_dim(), 0, c.n_heads, c.head_dim, lw.q_norm, c.norm_eps);
            cpu::RmsNormHeads(qkv_.data(), t, c.qkv_dim(), c.q_dim(), c.n_kv_heads, c.head_dim, lw.k_norm, c.norm_eps);
        }
        const bool neox = c.rope_style == RopeStyle::kNeox;
        const float* inv_freq = c.Windowed(l) ? inv_freq_swa_.data() : inv_freq_.data();
        cpu::Rope(qkv_.data(), t, c.qkv_dim(), 0, c.n_heads, c.head_dim, c.rope_dim,
                  row_pos_.data(), inv_freq, neox);
        cpu::Rope(qkv_.data(), t, c.qkv_dim(), c.q_dim(), c.n_kv_heads, c.head_dim, c.rope_dim,
                  row_pos_.data(), inv_freq, neox);
        if (c.rope_attn_factor != 1.0f) ScaleRotatedDims(qkv_.data(), t, c);
        WriteKv(plan, l);
        Attention(l);
        const bool prune = PrunesAfter(plan, seq_rows_, l);
        if (prune) ScoreLastQueries(plan, l);
        if (branch_apart) {
            cpu::Linear(att_.data(), lw.wo, xb_.data(), t, d, c.q_dim(), false);
            AddBranch(lw.attn_post_norm, t);
        } else {
            cpu::Linear(att_.data(), lw.wo, x_.data(), t, d, c.q_dim(), true);   // x += attn Wo^T
        }

        cpu::RmsNorm(x_.data(), lw.ffn_norm, xb_.data(), t, d, c.norm_eps);
        cpu::Linear(xb_.data(), lw.w_gate_up, gu_.data(), t, 2 * h, d, false);
        if (c.ffn_act == FfnActivation::kGeluTanh) {
            cpu::GeGlu(gu_.data(), hb_.data(), t, h);
        } else {
            cpu::SwiGlu(gu_.data(), hb_.data(), t, h);
        }
        if (branch_apart) {
            cpu::Linear(hb_.data(), lw.w_down, xb_.data(), t, d, h, false);
            AddBranch(lw.ffn_post_norm, t);
        } else {
            cpu::Linear(hb_.data(), lw.w_down, x_.data(), t, d, h, true);         // x += ffn
        }
        if (prune) {
            Prune(plan, l);
            t = static_cast<int64_t>(row_slot_.size());
        }
    }
    Logits(plan, out);
    for (const SeqStep& s : plan.seqs) s.kv->set_num_tokens(s.kv->num_tokens() + s.n_tokens);
    return absl::OkStatus();
}

}  // namespace prepack
