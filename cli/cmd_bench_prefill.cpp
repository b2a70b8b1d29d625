// `prepack bench prefill`: the same batch of prompts prefilled in each layout
// (padded, sorted, packed, ragged), timed in one run, with computed tokens,
// padding, peak memory, and how many prompts fit one forward in a budget.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_split.h"
#include "cli/bench_util.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/workload.h"
#include "core/prepacking/prefill_layout.h"
#include "core/base/runtime.h"
#include "kernels/cpu/cpu_level.h"

namespace prepack::cli {
namespace {

struct BenchPrefillOptions {
    CommonOptions common;
    std::string   layouts = "padded,sorted,packed,ragged";
    int32_t       prompts = 32;
    std::string   lengths = "uniform:16:1024";
    std::string   lengths_file;
    uint64_t      seed = 42;
    int32_t       pack_capacity = 0;
    std::string   packing = "bfd";
    int32_t       sorted_batch = 8;
    uint64_t      memory_budget = 0;
    int32_t       reps = 3;
    int32_t       warmup = 1;
};

// Largest k such that the first k prompts prefill in one layout within `budget` bytes.
int32_t PromptsThatFit(PrefillLayout layout, const std::vector<std::vector<int32_t>>& prompts,
                       const LayoutOptions& lo, const ModelConfig& c, int32_t block, uint64_t budget) {
    int32_t fit = 0;
    for (size_t k = 1; k <= prompts.size(); ++k) {
        const std::vector<std::vector<int32_t>> head(prompts.begin(), prompts.begin() + k);
        absl::StatusOr<PrefillPlan> p = PlanPrefill(layout, head, lo);
        if (!p.ok() || EstimatePeakBytes(c, *p, block) > budget) break;
        fit = static_cast<int32_t>(k);
    }
    return fit;
}

int Run(const BenchPrefillOptions& o) {
    std::vector<PrefillLayout> layouts;
    const std::vector<std::string> names = absl::StrSplit(o.layouts, ',');
    for (const std::string& name : names) {
        absl::StatusOr<PrefillLayout> l = ParsePrefillLayout(name);
        if (!l.ok()) return Fail(l.status());
        layouts.push_back(*l);
    }
    absl::StatusOr<BinPacking> packing = ParseBinPacking(o.packing);
    if (!packing.ok()) return Fail(packing.status());

    absl::StatusOr<Loaded> loaded = Load(o.common, 0, /*with_kv=*/false);
    if (!loaded.ok()) return Fail(loaded.status());
    const Model& model = *loaded->model;
    const ModelConfig& c = model.config();
    absl::StatusOr<std::vector<int32_t>> lengths =
        o.lengths_file.empty() ? SampleLengths(o.lengths, o.prompts, o.seed, c.max_context)
                               : ReadLengthsFile(o.lengths_file, c.max_context);
    if (!lengths.ok()) return Fail(lengths.status());
    const std::vector<std::vector<int32_t>> prompts = RandomPrompts(*lengths, c.vocab_size, o.seed);
    LayoutOptions lo;
    lo.pack_capacity = o.pack_capacity;
    lo.packing = *packing;
    lo.sorted_batch = o.sorted_batch;

    nlohmann::json workload = LengthStats(*lengths);
    workload["distribution"] = o.lengths_file.empty() ? o.lengths : "file:" + o.lengths_file;
    workload["seed"] = o.seed;
    nlohmann::json results = nlohmann::json::array();
    double padded_seconds = 0.0;
    std::vector<float> first_logits;

    // Each layout gets its own pool and workspace, so peaks are its own.
    struct Run {
        PrefillLayout                layout;
        PrefillPlan                  plan;
        Backend                      backend;
        PrefillResult                last;
        std::vector<double>          seconds;
    };
    std::vector<Run> runs;
    for (PrefillLayout layout : layouts) {
        absl::StatusOr<PrefillPlan> plan = PlanPrefill(layout, prompts, lo);
        if (!plan.ok()) return Fail(plan.status());
        const uint64_t need = EstimatePeakBytes(c, *plan, o.common.kv_block);
        absl::StatusOr<Backend> backend = CreateBackend(model, loaded->device, o.common.kv_block, need + (64ull << 20),
                                                        0, KvDType(o.common, model));
        if (!backend.ok()) return Fail(backend.status());
        Run r{layout, std::move(*plan), std::move(*backend), {}, {}};
        std::fprintf(stderr, "bench prefill: %-6s %d rows, %lld computed tokens\n", PrefillLayoutName(layout),
                     r.plan.rows, static_cast<long long>(r.plan.computed_tokens));
        runs.push_back(std::move(r));
    }
    auto once = [&](Run& r) -> absl::Status {
        std::vector<BlockTable> tables(prompts.size());
        std::vector<BlockTable*> kv;
        for (BlockTable& t : tables) kv.push_back(&t);
        const double t0 = NowSeconds();
        absl::StatusOr<PrefillResult> res = RunPrefill(*r.backend.runner, r.plan, kv);
        const double dt = NowSeconds() - t0;
        if (!res.ok()) return res.status();
        r.last = std::move(*res);
        r.seconds.push_back(dt);
        return absl::OkStatus();
    };
    // Rounds interleave the layouts, so a slow spell on this shared machine
    // slows every layout alike instead of one; the median of the timed
    // rounds is reported.
    for (int32_t round = 0; round < o.warmup + o.reps; ++round) {
        std::fprintf(stderr, "bench prefill: %s round %d of %d\n", round < o.warmup ? "warm-up" : "timed",
                     round < o.warmup ? round + 1 : round - o.warmup + 1, round < o.warmup ? o.warmup : o.reps);
        for (Run& r : runs) {
            if (absl::Status st = once(r); !st.ok()) return Fail(st);
            if (round < o.warmup) r.seconds.clear();
        }
    }
    for (Run& run : runs) {
        const double seconds = Median(run.seconds);
        if (run.layout == PrefillLayout::kPadded) padded_seconds = seconds;
        // Every layout must produce the same next-token logits: report how far apart they are.
        double max_diff = 0.0;
        if (first_logits.empty()) {
            first_logits = run.last.logits;
        } else {
            for (size_t i = 0; i < first_logits.size(); ++i) {
                max_diff = std::max(max_diff, double(std::fabs(first_logits[i] - run.last.logits[i])));
            }
        }
        nlohmann::json r = {
            {"layout", PrefillLayoutName(run.layout)},
            {"rows", run.plan.rows},
            {"forwards", run.plan.steps.size()},
            {"computed_tokens", run.plan.computed_tokens},
            {"padding_fraction", run.plan.padding_fraction()},
            {"seconds", seconds},
            {"seconds_all", run.seconds},
            {"tokens_per_s", double(run.plan.prompt_tokens) / seconds},
            {"peak_bytes", run.last.peak_kv_bytes + run.last.activation_bytes},
            {"peak_kv_bytes", run.last.peak_kv_bytes},
            {"peak_activation_bytes", run.last.activation_bytes},
            {"max_logit_diff_vs_first_layout", max_diff},
        };
        if (o.memory_budget > 0) {
            r["prompts_per_forward_in_budget"] =
                PromptsThatFit(run.layout, prompts, lo, c, o.common.kv_block, o.memory_budget);
        }
        results.push_back(r);
    }
    for (nlohmann::json& r : results) {
        r["speedup_vs_padded"] = padded_seconds > 0 ? nlohmann::json(padded_seconds / r["seconds"].get<double>())
                                                    : nlohmann::json(nullptr);
    }
    // Ideal speedup of a padding-free layout over padded: computed tokens saved.
    const double padded_tokens = double(prompts.size()) * workload["max"].get<double>();
    nlohmann::json out = {
        {"model", model.source()},
        {"threads", NumThreads()},
        {"cpu_kernels", cpu::KernelChoiceSummary()},
        {"workload", workload},
        {"ideal_speedup_vs_padded", padded_tokens / workload["total"].get<double>()},
        {"results", results},
    };
    if (o.memory_budget > 0) out["memory_budget_bytes"] = o.memory_budget;
    if (o.common.json) {
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("model %s, %d threads; %zu prompts, lengths %s: mean %.1f, CV %.2f, max %d, total %lld\n",
                model.source().c_str(), NumThreads(), prompts.size(), workload["distribution"].get<std::string>().c_str(),
                workload["mean"].get<double>(), workload["cv"].get<double>(), workload["max"].get<int>(),
                static_cast<long long>(workload["total"].get<int64_t>()));
    std::printf("CPU kernels %s\n", cpu::KernelChoiceSummary().c_str());
    std::printf("ideal speedup over padded (padded tokens / real tokens): %.2fx\n",
                out["ideal_speedup_vs_padded"].get<double>());
    std::printf("%-7s %5s %9s %8s %9s %11s %11s %9s%s\n", "layout", "rows", "computed", "padding", "seconds",
                "tokens/s", "peak MiB", "speedup", o.memory_budget ? "  fit in budget" : "");
    for (const nlohmann::json& r : results) {
        char speedup[32] = "-";
        if (!r["speedup_vs_padded"].is_null()) {
            std::snprintf(speedup, sizeof speedup, "%.2fx", r["speedup_vs_padded"].get<double>());
        }
        std::printf("%-7s %5d %9lld %7.1f%% %9.3f %11.1f %11.1f %9s",
                    r["layout"].get<std::string>().c_str(), r["rows"].get<int>(),
                    static_cast<long long>(r["computed_tokens"].get<int64_t>()),
                    100.0 * r["padding_fraction"].get<double>(), r["seconds"].get<double>(),
                    r["tokens_per_s"].get<double>(), r["peak_bytes"].get<double>() / (1 << 20), speedup);
        if (o.memory_budget) std::printf("  %d prompts", r["prompts_per_forward_in_budget"].get<int>());
        std::printf("\n");
    }
    return 0;
}

}  // namespace

void AddBenchPrefill(CLI::App& bench, int* exit_code) {
    auto* o = new BenchPrefillOptions();
    CLI::App* cmd = bench.add_subcommand("prefill", "Prefill one batch in padded, sorted, packed and ragged layouts");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--layouts", o->layouts, "comma-separated: padded,sorted,packed,ragged");
    cmd->add_option("--prompts", o->prompts, "prompts in the batch")->check(CLI::Range(1, 1 << 16));
    cmd->add_option("--lengths", o->lengths, "uniform:MIN:MAX, lognormal:MEAN:CV or fixed:L");
    cmd->add_option("--lengths-file", o->lengths_file, "whitespace-separated prompt lengths (overrides --lengths)");
    cmd->add_option("--seed", o->seed, "seed of lengths and prompt tokens");
    cmd->add_option("--pack-capacity", o->pack_capacity, "packed row capacity (0 = longest prompt)")->check(CLI::Range(0, 1 << 24));
    cmd->add_option("--packing", o->packing, "bfd (best-fit decreasing) or ffd (first-fit decreasing)");
    cmd->add_option("--sorted-batch", o->sorted_batch, "prompts per mini-batch in the sorted layout")->check(CLI::Range(1, 1 << 16));
    cmd->add_option("--memory-budget", o->memory_budget, "bytes: also report how many prompts fit one forward");
    cmd->add_option("--reps", o->reps, "timed runs (median reported)")->check(CLI::Range(1, 100));
    cmd->add_option("--warmup", o->warmup, "untimed runs first")->check(CLI::Range(0, 100));
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
