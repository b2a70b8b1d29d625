#include "core/prepacking/prefill_layout.h"

#include <algorithm>
#include <numeric>

namespace prepack {

const char* PrefillLayoutName(PrefillLayout layout) {
    switch (layout) {
        case PrefillLayout::kPadded: return "padded";
        case PrefillLayout::kSorted: return "sorted";
        case PrefillLayout::kPacked: return "packed";
        case PrefillLayout::kRagged: return "ragged";
    }
    return "unknown";
}

absl::StatusOr<PrefillLayout> ParsePrefillLayout(std::string_view name) {
    for (PrefillLayout l : {PrefillLayout::kPadded, PrefillLayout::kSorted, PrefillLayout::kPacked,
                            PrefillLayout::kRagged}) {
        if (name == PrefillLayoutName(l)) return l;
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown prefill layout '", std::string(name),
                                                   "' (use padded, sorted, packed or ragged)"));
}

namespace {

// Appends `n` padding rows that belong to no span.
void AppendPadding(StepPlan& plan, int32_t n, int32_t pad_token) {
    plan.tokens.insert(plan.tokens.end(), n, pad_token);
    plan.positions.insert(plan.positions.end(), n, 0);
}

// Appends prompt `p` as a span at positions 0.. and records it.
void AppendPrompt(LayoutStep& step, const std::vector<std::vector<int32_t>>& prompts, int32_t p, int32_t n_pad,
                  int32_t pad_token) {
    const std::vector<int32_t>& ids = prompts[p];
    const int32_t n = static_cast<int32_t>(ids.size());
    step.plan.Add(nullptr, ids.data(), n, 0, LogitsWanted::kLast);
    step.prompt.push_back(p);
    if (n_pad > 0) {
        // Right padding computed as more tokens of this prompt (positions go on).
        step.plan.seqs.back().n_pad = n_pad;
        for (int32_t i = 0; i < n_pad; ++i) {
            step.plan.tokens.push_back(pad_token);
            step.plan.positions.push_back(n + i);
        }
    }
}

// One right-padded [prompts.size(), max_len] step over `members`.
LayoutStep PaddedStep(const std::vector<std::vector<int32_t>>& prompts, const std::vector<int32_t>& members,
                      int32_t pad_token, std::vector<int32_t>& kv_slots) {
    int32_t width = 0;
    for (int32_t p : members) width = std::max(width, static_cast<int32_t>(prompts[p].size()));
    LayoutStep step;
    step.rows = static_cast<int32_t>(members.size());
    step.width = width;
    for (int32_t p : members) {
        AppendPrompt(step, prompts, p, width - static_cast<int32_t>(prompts[p].size()), pad_token);
        kv_slots[p] = width;
    }
    return step;
}

}  // namespace

absl::StatusOr<PrefillPlan> PlanPrefill(PrefillLayout layout, const std::vector<std::vector<int32_t>>& prompts,
                                        const LayoutOptions& options) {
    if (prompts.empty()) return absl::InvalidArgumentError("prefill batch has no prompts");
    std::vector<int32_t> lengths;
    for (size_t i = 0; i < prompts.size(); ++i) {
        if (prompts[i].empty()) return absl::InvalidArgumentError(absl::StrCat("prompt ", i, " is empty"));
        lengths.push_back(static_cast<int32_t>(prompts[i].size()));
    }
    const int32_t longest = *std::max_element(lengths.begin(), lengths.end());
    const int32_t n = static_cast<int32_t>(prompts.size());

    PrefillPlan plan;
    plan.layout = layout;
    plan.kv_slots = lengths;
    std::vector<int32_t> all(n);
    std::iota(all.begin(), all.end(), 0);

    switch (layout) {
        case PrefillLayout::kPadded:
            plan.steps.push_back(PaddedStep(prompts, all, options.pad_token, plan.kv_slots));
            break;
        case PrefillLayout::kSorted: {
            if (options.sorted_batch < 1) {
                return absl::InvalidArgumentError(absl::StrCat("sorted batch must be >= 1, got ", options.sorted_batch));
            }
            std::stable_sort(all.begin(), all.end(), [&](int32_t a, int32_t b) { return lengths[a] > lengths[b]; });
            for (int32_t b = 0; b < n; b += options.sorted_batch) {
                const std::vector<int32_t> members(all.begin() + b, all.begin() + std::min(n, b + options.sorted_batch));
                plan.steps.push_back(PaddedStep(prompts, members, options.pad_token, plan.kv_slots));
            }
            break;
        }
        case PrefillLayout::kPacked: {
            const int32_t capacity = options.pack_capacity > 0 ? options.pack_capacity : longest;
            if (capacity < longest) {
                return absl::InvalidArgumentError(absl::StrCat("pack capacity ", capacity,
                                                               " is below the longest prompt (", longest, " tokens)"));
            }
            PP_ASSIGN_OR_RETURN(auto bins, PackBins(lengths, capacity, options.packing));
            // Rows are as wide as the fullest bin: the batch stays rectangular
            // and only row tails are padding.
            int32_t width = 0;
            for (const auto& bin : bins) {
                int32_t fill = 0;
                for (int32_t p : bin) fill += lengths[p];
                width = std::max(width, fill);
            }
            LayoutStep step;
            step.rows = static_cast<int32_t>(bins.size());
            step.width = width;
            for (const auto& bin : bins) {
                int32_t fill = 0;
                for (int32_t p : bin) {
                    AppendPrompt(step, prompts, p, 0, options.pad_token);
                    fill += lengths[p];
                }
                AppendPadding(step.plan, width - fill, options.pad_token);
            }
            plan.steps.push_back(std::move(step));
            break;
        }
        case PrefillLayout::kRagged: {
            LayoutStep step;
            for (int32_t p : all) AppendPrompt(step, prompts, p, 0, options.pad_token);
            step.rows = 1;
            step.width = static_cast<int32_t>(step.plan.tokens.size());
            plan.steps.push_back(std::move(step));
            break;
        }
    }
    for (const LayoutStep& s : plan.steps) {
        plan.rows += s.rows;
        plan.computed_tokens += static_cast<int64_t>(s.plan.tokens.size());
    }
    for (int32_t len : lengths) plan.prompt_tokens += len;
    return plan;
}

absl::StatusOr<PrefillResult> RunPrefill(StepRunner& forward, PrefillPlan& plan, const std::vector<BlockTable*>& kv) {
    KvBlockPool& pool = forward.pool();
    const int32_t vocab = forward.model().config().vocab_size;
    PrefillResult result;
    result.logits.resize(kv.size() * static_cast<size_t>(vocab));
    auto fail = [&](absl::Status s) {
        for (BlockTable* t : kv) t->Release();
        return s;
    };
    StepOutput out;
    for (LayoutStep& step : plan.steps) {
        for (size_t i = 0; i < step.prompt.size(); ++i) {
            const int32_t p = step.prompt[i];
            if (p < 0 || static_cast<size_t>(p) >= kv.size()) return fail(absl::InvalidArgumentError("prompt index out of range"));
            step.plan.seqs[i].kv = kv[p];
            if (absl::Status s = kv[p]->Reserve(pool, plan.kv_slots[p]); !s.ok()) return fail(s);
        }
        result.peak_kv_bytes = std::max(result.peak_kv_bytes, pool.used_bytes());
        if (absl::Status s = forward.Run(step.plan, &out); !s.ok()) return fail(s);
        for (size_t i = 0; i < step.prompt.size(); ++i) {
            const int32_t p = step.prompt[i];
            std::copy_n(out.logits.data() + static_cast<size_t>(out.first_row[i]) * vocab, vocab,
                        result.logits.data() + static_cast<size_t>(p) * vocab);
            kv[p]->Trim(kv[p]->num_tokens());   // drop blocks that only held pads
        }
    }
    result.activation_bytes = forward.workspace_bytes();
    return result;
}

uint64_t EstimatePeakBytes(const ModelConfig& config, const PrefillPlan& plan, int32_t kv_block_size) {
    const uint64_t block_bytes = 2ull * config.n_layers * kv_block_size * config.kv_dim() * sizeof(float);
    auto blocks = [&](int64_t tokens) { return static_cast<uint64_t>((tokens + kv_block_size - 1) / kv_block_size); };
    uint64_t activations = 0, kept_kv = 0, peak_kv = 0;
    for (const LayoutStep& s : plan.steps) {
        activations = std::max(activations, ForwardPass::ActivationBytes(
                                                config, static_cast<int64_t>(s.plan.tokens.size()),
                                                static_cast<int64_t>(s.prompt.size())));
        uint64_t step_kv = 0, after = 0;
        for (size_t i = 0; i < s.prompt.size(); ++i) {
            const SeqStep& seq = s.plan.seqs[i];
            step_kv += blocks(plan.kv_slots[s.prompt[i]]) * block_bytes;
            after += blocks(seq.n_tokens) * block_bytes;
        }
        peak_kv = std::max(peak_kv, kept_kv + step_kv);
        kept_kv += after;
    }
    return activations + peak_kv;
}

}  // namespace prepack
