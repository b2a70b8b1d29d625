// `prepack bench lazy`: time to first token and total generation time of one
// prompt with LazyLLM pruning off, on (the schedule), and on with every keep
// fraction 1.0 (the cost of scoring alone), interleaved in one run, with the
// fraction of token-layer work each did.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cli/bench_util.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/workload.h"
#include "core/engine/generate.h"
#include "core/base/runtime.h"
#include "kernels/cpu/cpu_level.h"

namespace prepack::cli {
namespace {

struct BenchLazyOptions {
    CommonOptions common;
    std::string   prompt_tokens = "1024,2048,4096";
    std::string   schedule;   // empty: the model's default
    int32_t       max_tokens = 16;
    uint64_t      seed = 42;
    int32_t       reps = 2;
    int32_t       warmup = 1;
};

struct Variant {
    const char*              name;
    bool                     lazy;
    LazySchedule             schedule;
    std::vector<double>      ttft, total;
    GenerateResult           last;
};

int Run(const BenchLazyOptions& o) {
    std::vector<int32_t> lengths;
    for (const std::string& item : std::vector<std::string>(absl::StrSplit(o.prompt_tokens, ','))) {
        int32_t n = 0;
        if (!absl::SimpleAtoi(item, &n) || n < 2) {
            return Fail(absl::InvalidArgumentError(
                absl::StrCat("--prompt-tokens: '", item, "' is not a length >= 2")));
        }
        lengths.push_back(n);
    }
    const int32_t longest = *std::max_element(lengths.begin(), lengths.end());
    // Room for the longest prompt, its generation, and the aux cache (at most one hidden state per token).
    absl::StatusOr<Loaded> loaded = Load(o.common, 2 * (int64_t{longest} + o.max_tokens));
    if (!loaded.ok()) return Fail(loaded.status());
    const Model& model = *loaded->model;
    const ModelConfig& c = model.config();
    if (longest + o.max_tokens > c.max_context) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--prompt-tokens ", longest, " plus --max-tokens ",
                                                            o.max_tokens, " exceed the context of ", c.max_context)));
    }
    absl::StatusOr<LazySchedule> schedule = ParseLazySchedule(o.schedule, c.n_layers);
    if (!schedule.ok()) return Fail(schedule.status());
    LazySchedule keep_all = *schedule;
    for (LazyPoint& p : keep_all) p.keep = 1.0f;
    StepRunner& forward = *loaded->runner;

    nlohmann::json results = nlohmann::json::array();
    for (int32_t n : lengths) {
        const std::vector<int32_t> prompt = RandomPrompts({n}, c.vocab_size, o.seed)[0];
        std::vector<Variant> variants = {{"full", false, {}, {}, {}, {}},
                                         {"lazy", true, *schedule, {}, {}, {}},
                                         {"keep1", true, keep_all, {}, {}, {}}};
        // Rounds interleave the variants, so a noisy spell hits all alike.
        for (int32_t round = 0; round < o.warmup + o.reps; ++round) {
            std::fprintf(stderr, "bench lazy: %d prompt tokens, %s round %d of %d\n", n,
                         round < o.warmup ? "warm-up" : "timed", round < o.warmup ? round + 1 : round - o.warmup + 1,
                         round < o.warmup ? o.warmup : o.reps);
            for (Variant& v : variants) {
                GenerateRequest r;
                r.prompt_tokens = prompt;
                r.max_tokens = o.max_tokens;
                r.sampling.temperature = 0.0f;
                r.ignore_eos = true;
                r.lazy = v.lazy;
                r.lazy_schedule = v.schedule;
                absl::StatusOr<GenerateResult> g = Generate(forward, r);
                if (!g.ok()) return Fail(g.status());
                if (round >= o.warmup) {
                    v.ttft.push_back(g->prefill_seconds);
                    v.total.push_back(g->prefill_seconds + g->decode_seconds);
                }
                v.last = std::move(*g);
            }
        }
        const double ttft_full = Median(variants[0].ttft), ttft_lazy = Median(variants[1].ttft);
        const double ttft_keep1 = Median(variants[2].ttft);
        const double work = variants[1].last.prompt_work_fraction;
        nlohmann::json r = {
            {"prompt_tokens", n},
            {"ttft_ms_full", ttft_full * 1e3},
            {"ttft_ms_lazy", ttft_lazy * 1e3},
            {"ttft_ms_keep1", ttft_keep1 * 1e3},
            {"ttft_speedup", ttft_full / ttft_lazy},
            {"keep1_overhead", ttft_keep1 / ttft_full - 1.0},
            {"total_ms_full", Median(variants[0].total) * 1e3},
            {"total_ms_lazy", Median(variants[1].total) * 1e3},
            {"total_speedup", Median(variants[0].total) / Median(variants[1].total)},
            {"work_fraction", work},
            // Measured speedup over the ideal one (1 / work fraction): how
            // little the scoring and compaction cost.
            {"speedup_vs_work", (ttft_full / ttft_lazy) * work},
            {"layer_fractions", variants[1].last.prompt_layer_fractions},
            // Decode steps bring pruned tokens back (each at most once per layer).
            {"work_fraction_after_decode", variants[1].last.prompt_work_fraction_end},
            {"same_first_token", variants[0].last.tokens.at(0) == variants[1].last.tokens.at(0)},
        };
        results.push_back(r);
    }
    const nlohmann::json out = {{"model", model.source()},
                                {"threads", NumThreads()},
                                {"cpu_kernels", cpu::KernelChoiceSummary()},
                                {"schedule", FormatLazySchedule(*schedule)},
                                {"max_tokens", o.max_tokens},
                                {"results", results}};
    if (o.common.json) {
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("model %s, %d threads, schedule %s, %d generated tokens\n", model.source().c_str(), NumThreads(),
                out["schedule"].get<std::string>().c_str(), o.max_tokens);
    std::printf("CPU kernels %s\n", cpu::KernelChoiceSummary().c_str());
    std::printf("%7s %11s %11s %8s %8s %10s %9s %11s %11s %8s\n", "prompt", "TTFT full", "TTFT lazy", "speedup",
                "work", "vs ideal", "keep1", "total full", "total lazy", "speedup");
    for (const nlohmann::json& r : results) {
        std::printf("%7d %9.1fms %9.1fms %7.2fx %7.1f%% %10.2f %+8.1f%% %9.1fms %9.1fms %7.2fx\n",
                    r["prompt_tokens"].get<int>(), r["ttft_ms_full"].get<double>(), r["ttft_ms_lazy"].get<double>(),
                    r["ttft_speedup"].get<double>(), 100.0 * r["work_fraction"].get<double>(),
                    r["speedup_vs_work"].get<double>(), 100.0 * r["keep1_overhead"].get<double>(),
                    r["total_ms_full"].get<double>(), r["total_ms_lazy"].get<double>(),
                    r["total_speedup"].get<double>());
    }
    return 0;
}

}  // namespace

void AddBenchLazy(CLI::App& bench, int* exit_code) {
    auto* o = new BenchLazyOptions();
    CLI::App* cmd = bench.add_subcommand("lazy", "Time to first token with and without LazyLLM pruning");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--prompt-tokens", o->prompt_tokens, "comma-separated prompt lengths");
    cmd->add_option("--lazy-schedule", o->schedule, "LAYER:KEEP,... (default: the model's default schedule)");
    cmd->add_option("--max-tokens", o->max_tokens, "tokens generated after each prompt")->check(CLI::Range(1, 1 << 16));
    cmd->add_option("--seed", o->seed, "seed of the prompt tokens");
    cmd->add_option("--reps", o->reps, "timed runs (median reported)")->check(CLI::Range(1, 100));
    cmd->add_option("--warmup", o->warmup, "untimed runs first")->check(CLI::Range(0, 100));
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
