// LazyLLM in the CUDA forward pass. The decisions are the CPU pass's
// (core/lazyllm/lazy_prune.h, on the host, from scores copied back: a few KB per
// pruning sequence); the GPU scores the last token's attention, masks the
// keys a layer lacks, and gathers the surviving and revived rows. The aux
// cache's cells are in the device pool, so states move device to device.
#include <vector>

#include "core/forward/cpu_pass.h"
#include "core/forward/cuda_pass_impl.h"
#include "core/lazyllm/lazy_state.h"
#include "kernels/cuda/lazy.h"

namespace prepack {

absl::Status CudaForwardPass::Impl::UploadDepths(const StepPlan& plan, const CudaStepMeta& m) {
    if (m.depth_len == 0) return absl::OkStatus();
    std::vector<int16_t> all(static_cast<size_t>(m.depth_len), -1);
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        if (m.depth_offset[k] < 0) continue;
        for (int32_t j = 0; j < s.kv->num_tokens() + s.n_tokens; ++j) all[m.depth_offset[k] + j] = s.lazy->depth(j);
    }
    return depth.CopyFromHost(all.data(), all.size() * sizeof(int16_t));
}

absl::Status CudaForwardPass::Impl::ScoreLastQueries(const StepPlan& plan, const CudaStepMeta& m, int32_t layer) {
    const ModelConfig& c = model.config();
    std::vector<cuda::ScoreJob> jobs;
    int32_t total = 0;
    lazy_scores.resize(plan.seqs.size());
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        if (!PruneCanChange(s, seq_rows[k], layer)) continue;
        const int64_t last = seq_rows[k].begin + seq_rows[k].count - 1;
        const int32_t horizon = row_slot[last];
        const int32_t table_begin = m.ints[m.at[CudaStepMeta::kTableBegin] + last];
        // The window's rows, as the CPU's LastQueryScores takes them:
        // trailing rows of consecutive tokens.
        const LazyScoring& scoring = s.lazy->scoring();
        int32_t window = 1;
        while (window < scoring.window && window < seq_rows[k].count && row_slot[last - window] == horizon - window) {
            ++window;
        }
        jobs.push_back({static_cast<int32_t>(last), horizon, table_begin, m.depth_offset[k], total, window,
                        scoring.head_max ? 1 : 0});
        total += horizon + 1;
    }
    PP_RETURN_IF_ERROR(ReserveDevice(score_jobs, jobs.size() * sizeof(cuda::ScoreJob)));
    PP_RETURN_IF_ERROR(score_jobs.CopyFromHost(jobs.data(), jobs.size() * sizeof(cuda::ScoreJob)));
    PP_RETURN_IF_ERROR(ReserveDevice(scores, total * sizeof(float)));
    PP_RETURN_IF_ERROR(ReserveDevice(score_scratch, 2 * total * sizeof(float)));
    // Scored as this layer attends (scale, soft-cap, sliding window), as the CPU does.
    const cpu::AttentionShape shape = LayerAttentionShape(c, layer);
    cuda::LastQueryScores(qkv.data(), act, shape, score_jobs.as<cuda::ScoreJob>(), static_cast<int32_t>(jobs.size()),
                          meta.as<int32_t>() + m.at[CudaStepMeta::kTables], depth.as<int16_t>(), layer,
                          pool.Layer(layer), scores.as<float>(), score_scratch.as<float>(), total);
    std::vector<float> host(total);
    PP_RETURN_IF_ERROR(scores.CopyToHost(host.data(), total * sizeof(float)));   // waits for the kernel
    size_t next = 0;
    for (size_t k = 0; k < plan.seqs.size(); ++k) {
        const SeqStep& s = plan.seqs[k];
        if (!PruneCanChange(s, seq_rows[k], layer)) continue;
        const cuda::ScoreJob& job = jobs[next++];
        lazy_scores[k].assign(host.begin() + job.out_begin, host.begin() + job.out_begin + job.horizon + 1);
    }
    return absl::OkStatus();
}

absl::Status CudaForwardPass::Impl::Prune(const StepPlan& plan, int32_t layer) {
    const int64_t row_bytes = model.config().dim * static_cast<int64_t>(ActBytes(act));
    PrunedRows next = PlanPrune(plan, layer, seq_rows, row_pos, row_slot, lazy_scores,
                                static_cast<const char*>(x.data()), row_bytes);
    if (next.unchanged) return absl::OkStatus();
    const int64_t t = static_cast<int64_t>(next.slot.size());
    PP_RETURN_IF_ERROR(ReserveDevice(x_next, std::max<int64_t>(t, 1) * row_bytes));
    PP_RETURN_IF_ERROR(ReserveDevice(gather_sources, std::max<int64_t>(t, 1) * sizeof(void*)));
    PP_RETURN_IF_ERROR(gather_sources.CopyFromHost(next.source.data(), t * sizeof(void*)));
    cuda::GatherRows(gather_sources.as<const void*>(), x_next.data(), t, row_bytes);
    // The gather is queued before any later Put can reuse a revived token's cell.
    EraseRevived(plan, next);
    std::swap(x, x_next);
    row_pos = std::move(next.pos);
    row_slot = std::move(next.slot);
    seq_rows = std::move(next.seq_rows);
    return absl::OkStatus();
}

}  // namespace prepack
