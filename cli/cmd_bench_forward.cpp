// `prepack bench forward`: prefill and decode speed of one sequence, with the
// GEMM ceiling measured in the same run so efficiency is a same-run ratio.
#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/bench_util.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/forward/cuda_module.h"
#include "core/forward/cpu_pass.h"
#include "core/base/runtime.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/cpu_level.h"

namespace prepack::cli {
namespace {

struct BenchForwardOptions {
    CommonOptions common;
    int32_t       prompt_tokens = 512;
    int32_t       decode_tokens = 64;
    int32_t       decode_batch = 16;
    int32_t       reps = 3;
};

// Deterministic prompt ids away from the special tokens.
std::vector<int32_t> PromptIds(int32_t n, int32_t vocab) {
    std::vector<int32_t> ids(n);
    uint64_t x = 0x243F6A8885A308D3ull;
    for (int32_t i = 0; i < n; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = 3 + static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(vocab - 3));
    }
    return ids;
}

// What prefill and decode are compared against, measured in this run.
struct Ceilings {
    double peak_f32 = 0.0, peak_bf16 = 0.0;   // GEMM GFLOP/s
    double bandwidth = 0.0;                   // GB/s: CPU read bandwidth, GPU copy bandwidth
    bool   prepack_blocked = false;           // CPU: would pre-packing weights pay?
    double prepack_speedup = 0.0;
};

absl::StatusOr<Ceilings> CpuCeilings(const ModelConfig& c, int32_t rows) {
    Ceilings x;
    x.peak_f32 = MeasureGemmPeakGflops();
    x.peak_bf16 = MeasureBf16GemmPeakGflops();
    x.bandwidth = MeasureReadBandwidthGbps();
    // The layer's four products at the prompt's rows: the engine's path vs
    // the weights in oneDNN's preferred layout.
    double engine_s = 0.0, packed_s = 0.0;
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{c.qkv_dim(), c.dim}, {c.dim, c.q_dim()},
                              {2 * int64_t{c.hidden_dim}, c.dim}, {c.dim, c.hidden_dim}}) {
        const PrepackProbe p = MeasurePrepackedWeights(rows, n, k);
        const double gflop = 2.0 * rows * n * k / 1e9;
        x.prepack_blocked |= p.blocked;
        engine_s += gflop / p.engine_gflops;
        packed_s += gflop / p.packed_gflops;
    }
    x.prepack_speedup = engine_s / packed_s;
    return x;
}

// Bytes of the weight matrices one decode step reads.
uint64_t DecodeWeightBytes(const ModelWeights& w, const ModelConfig& c) {
    uint64_t embedding = 0;   // read by one row per token unless it is also the output
    if (!w.output.SameStorage(w.token_embd)) {
        const cpu::Matrix& e = w.token_embd;
        embedding = e.quantized() ? static_cast<uint64_t>(cpu::QuantRowBytes(e.quant[0].type, c.dim)) * c.vocab_size
                                  : static_cast<uint64_t>(c.vocab_size) * c.dim * (e.bf16 != nullptr ? 2 : 4);
    }
    return w.ResidentBytes() - embedding;
}

// Whether some matrix's many-row products run in int8 (cpu::QuantPrefillArithmetic
// of its block type and row length).
bool AnyInt8Prefill(const ModelWeights& w, const ModelConfig& c) {
    for (const LayerWeights& l : w.layers) {
        for (const auto& [m, k] : {std::pair{&l.wqkv, int64_t{c.dim}}, std::pair{&l.wo, int64_t{c.q_dim()}},
                                   std::pair{&l.w_gate_up, int64_t{c.dim}}, std::pair{&l.w_down, int64_t{c.hidden_dim}}}) {
            for (int s = 0; s < m->n_quant; ++s) {
                if (std::string_view(cpu::QuantPrefillArithmetic(m->quant[s].type, k)) == "int8") return true;
            }
        }
    }
    return false;
}

absl::StatusOr<Ceilings> GpuCeilings() {
    PP_ASSIGN_OR_RETURN(const CudaModule* cuda, LoadCudaModule());
    Ceilings x;
    PP_ASSIGN_OR_RETURN(x.peak_f32, cuda->gemm_peak_gflops(cpu::DType::kF32));
    PP_ASSIGN_OR_RETURN(x.peak_bf16, cuda->gemm_peak_gflops(cpu::DType::kBf16));
    PP_ASSIGN_OR_RETURN(x.bandwidth, cuda->copy_bandwidth_gbps());
    return x;
}

int Run(const BenchForwardOptions& o) {
    const int64_t ctx = int64_t{o.prompt_tokens} + o.decode_tokens;
    // The prompt's sequence and the batch's each hold ctx tokens in whole
    // blocks: 512 + 4 tokens with --decode-batch 16 on the 1B-shaped Q8_0
    // file stopped on a full cache (549 blocks of 16) with the tokens alone.
    const int64_t block = std::max(1, o.common.kv_block);
    absl::StatusOr<Loaded> loaded = Load(o.common, (ctx + block - 1) / block * block * (o.decode_batch + 1));
    if (!loaded.ok()) return Fail(loaded.status());
    const Model& model = *loaded->model;
    const ModelConfig& c = model.config();
    if (ctx > c.max_context) {
        return Fail(absl::InvalidArgumentError(absl::StrCat(
            "--prompt-tokens + --decode-tokens = ", ctx, " exceeds the context of ", c.max_context)));
    }
    StepRunner& forward = *loaded->runner;
    const std::vector<int32_t> prompt = PromptIds(o.prompt_tokens, c.vocab_size);
    StepOutput out;
    absl::Status status;
    BlockTable kv;
    if (status = kv.Reserve(*loaded->pool, static_cast<int32_t>(ctx)); !status.ok()) return Fail(status);

    const bool gpu = loaded->device == Device::kCuda;
    std::fprintf(stderr, "bench forward: %s on %s, measuring GEMM peak and memory bandwidth...\n", c.name.c_str(),
                 gpu ? "cuda" : absl::StrCat(NumThreads(), " CPU threads").c_str());
    absl::StatusOr<Ceilings> ceil = gpu ? GpuCeilings() : CpuCeilings(c, o.prompt_tokens);
    if (!ceil.ok()) return Fail(ceil.status());
    ResetPeakRss();   // from here on the peak is the model's: weights, KV cache, activations
    const ModelWeights& weights = model.weights();
    const bool bf16 = weights.dtype == cpu::DType::kBf16;
    // The ceiling of the arithmetic this model runs: quantized matrices are
    // decoded to bf16 panels for many-row products where the CPU has native
    // bf16 GEMM, to f32 otherwise.
    const bool bf16_gemm = bf16 || (weights.AnyQuantized() && !gpu && cpu::HasNativeBf16Gemm());
    const double peak = bf16_gemm ? ceil->peak_bf16 : ceil->peak_f32, bandwidth = ceil->bandwidth;
    // Without native bf16 the Q4_0 and K-quant products run in int8 instead,
    // which may pass the f32 peak they are still compared with.
    const bool int8_gemm = !gpu && AnyInt8Prefill(weights, c);

    std::fprintf(stderr, "bench forward: prefill of %d tokens x %d...\n", o.prompt_tokens, o.reps);
    auto prefill = [&] {
        kv.set_num_tokens(0);
        StepPlan plan;
        plan.Add(&kv, prompt.data(), o.prompt_tokens, 0);
        if (status.ok()) status = forward.Run(plan, &out);
    };
    const double prefill_s = Median(TimeRuns(prefill, 1, o.reps));
    if (!status.ok()) return Fail(status);

    std::fprintf(stderr, "bench forward: decode of %d tokens x %d...\n", o.decode_tokens, o.reps);
    auto decode = [&] {
        kv.set_num_tokens(o.prompt_tokens);
        for (int32_t i = 0; i < o.decode_tokens && status.ok(); ++i) {
            StepPlan plan;
            const int32_t id = prompt[i % o.prompt_tokens];
            plan.Add(&kv, &id, 1, o.prompt_tokens + i);
            status = forward.Run(plan, &out);
        }
    };
    const double decode_s = o.decode_tokens > 0 ? Median(TimeRuns(decode, 1, o.reps)) : 0.0;
    if (!status.ok()) return Fail(status);

    // Batched decode: decode_batch sequences with the same context, each
    // step one token of every sequence (what continuous batching runs).
    double batch_s = 0.0;
    if (o.decode_batch > 1 && o.decode_tokens > 0) {
        std::fprintf(stderr, "bench forward: decode of %d sequences x %d tokens x %d...\n", o.decode_batch,
                     o.decode_tokens, o.reps);
        std::vector<BlockTable> tables(o.decode_batch);
        for (BlockTable& t : tables) {
            if (status = t.Reserve(*loaded->pool, static_cast<int32_t>(ctx)); !status.ok()) return Fail(status);
            // The prompt's K/V are copied, not recomputed: decode speed is what is measured.
            for (size_t b = 0; b < t.blocks().size() && b < kv.blocks().size(); ++b) {
                loaded->pool->CopyBlock(kv.blocks()[b], t.blocks()[b]);
            }
        }
        auto batch = [&] {
            for (BlockTable& t : tables) t.set_num_tokens(o.prompt_tokens);
            for (int32_t i = 0; i < o.decode_tokens && status.ok(); ++i) {
                StepPlan plan;
                const int32_t id = prompt[i % o.prompt_tokens];
                for (BlockTable& t : tables) plan.Add(&t, &id, 1, o.prompt_tokens + i);
                status = forward.Run(plan, &out);
            }
        };
        batch_s = Median(TimeRuns(batch, 1, o.reps));
        if (!status.ok()) return Fail(status);
    }

    // FLOPs: every layer matmul for every prompt token, the output matrix for
    // the one row that needs logits, and causal attention (sum of contexts).
    const double n = o.prompt_tokens;
    const double layer_params = static_cast<double>(c.MatmulParams()) - double(c.vocab_size) * c.dim;
    const double prefill_flops = 2.0 * layer_params * n + 2.0 * c.vocab_size * c.dim +
                                 c.AttentionFlops(1) * n * (n + 1) / 2.0;
    const double prefill_gflops = prefill_flops / prefill_s / 1e9;
    const double decode_tps = decode_s > 0 ? o.decode_tokens / decode_s : 0.0;
    // A batch-1 decode step reads every weight matrix once (as held: 4 or 2
    // bytes a weight, or the quantized blocks; an untied embedding only by
    // one row) and the sequence's K/V so far (the mean context over the
    // decoded tokens).
    const cpu::DType kv_dtype = loaded->pool->dtype();
    const double mean_context = o.prompt_tokens + (o.decode_tokens - 1) / 2.0;
    // (On the GPU quantized matrices are held decoded, in the model's dtype.)
    const double weight_bytes = gpu ? static_cast<double>(c.MatmulParams()) * (bf16 ? 2.0 : 4.0)
                                    : static_cast<double>(DecodeWeightBytes(weights, c));
    const double bytes_per_token = weight_bytes + mean_context * c.KvBytesPerToken(kv_dtype);
    const double decode_gbps = decode_tps * bytes_per_token / 1e9;
    const double batch_tps = batch_s > 0 ? double(o.decode_batch) * o.decode_tokens / batch_s : 0.0;

    nlohmann::json j = {
        {"model", model.source()},
        {"threads", NumThreads()},
        {"cpu_kernels", cpu::KernelChoiceSummary()},
        {"prompt_tokens", o.prompt_tokens},
        {"decode_tokens", o.decode_tokens},
        {"prefill_seconds", prefill_s},
        {"prefill_tokens_per_s", n / prefill_s},
        {"prefill_gflops", prefill_gflops},
        {"gemm_peak_gflops", peak},
        {"gemm_peak_f32_gflops", ceil->peak_f32},
        {"gemm_peak_bf16_gflops", ceil->peak_bf16},
        {"prefill_efficiency", prefill_gflops / peak},
        {"prefill_int8_gemm", int8_gemm},
        {"decode_seconds", decode_s},
        {"decode_tokens_per_s", decode_tps},
        {"decode_gbps", decode_gbps},
        {"mem_bandwidth_gbps", bandwidth},
        {"decode_efficiency", decode_gbps / bandwidth},
        {"decode_batch", o.decode_batch},
        {"decode_batch_tokens_per_s", batch_tps},
        {"decode_batch_speedup", decode_tps > 0 ? batch_tps / decode_tps : 0.0},
        {"dtype", cpu::DTypeName(model.weights().dtype)},
        {"weights", weights.MatrixTypes()},
        {"weight_resident_bytes", weights.ResidentBytes()},
        {"peak_rss_bytes", PeakRssBytes()},
        {"kv_dtype", cpu::DTypeName(kv_dtype)},
        {"device", o.common.device},
    };
    if (!gpu) {
        j["bf16_gemm_available"] = cpu::HasNativeBf16Gemm();
        j["bf16_gemm_path"] = cpu::Bf16GemmPath();
        j["prepacked_weights_blocked"] = ceil->prepack_blocked;
        j["prepacked_weights_speedup"] = ceil->prepack_speedup;
    }
    if (o.common.json) {
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    std::printf("model %s (%s, %.0f MiB; KV %s), %d threads, %d prompt tokens, %d decode tokens (median of %d)\n",
                model.source().c_str(), weights.MatrixTypes().c_str(), weights.ResidentBytes() / 1048576.0,
                cpu::DTypeName(kv_dtype),
                NumThreads(), o.prompt_tokens,
                o.decode_tokens, o.reps);
    std::printf("CPU kernels %s\n", cpu::KernelChoiceSummary().c_str());
    std::printf("  prefill   %10.1f tokens/s  %8.1f GFLOP/s  (%.0f%% of %s GEMM peak %.1f GFLOP/s%s)\n",
                n / prefill_s, prefill_gflops, 100.0 * prefill_gflops / peak, bf16_gemm ? "the bf16" : "the f32",
                peak, int8_gemm ? "; quantized products in int8" : "");
    std::printf("  decode    %10.1f tokens/s  %8.2f GB/s of weights + KV  (%.0f%% of read bandwidth %.1f GB/s)\n",
                decode_tps, decode_gbps, 100.0 * decode_gbps / bandwidth, bandwidth);
    if (!gpu && !weights.AnyQuantized()) {
        std::printf("  f32 weights pre-packed in oneDNN's layout (%s): layer products %.2fx the engine's\n",
                    ceil->prepack_blocked ? "blocked" : "plain: nothing to pack", ceil->prepack_speedup);
    }
    if (batch_tps > 0) {
        std::printf("  decode x%-3d %9.1f tokens/s  (%.2fx batch 1)\n", o.decode_batch, batch_tps, batch_tps / decode_tps);
    }
    std::printf("  peak resident memory %.0f MiB while running (weights %.0f MiB, the rest KV cache and activations)\n",
                j["peak_rss_bytes"].get<uint64_t>() / 1048576.0, weights.ResidentBytes() / 1048576.0);
    return 0;
}

}  // namespace

void AddBenchForward(CLI::App& bench, int* exit_code) {
    auto* o = new BenchForwardOptions();
    CLI::App* cmd = bench.add_subcommand("forward", "Prefill and decode speed of one sequence vs the GEMM peak");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt length")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--decode-tokens", o->decode_tokens, "tokens to decode after the prompt")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--decode-batch", o->decode_batch, "sequences decoded together in the batched decode (1 = skip)")
        ->check(CLI::Range(1, 1024));
    cmd->add_option("--reps", o->reps, "timed runs (the median is reported)")->check(CLI::Range(1, 100));
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
