// `prepack bench lazy`: one prompt per length, generated with LazyLLM pruning
// off, on with every keep fraction 1.0 (the cost of scoring alone), and on
// under each revival bound asked for, interleaved in one run. One generation
// of the longest output length gives every shorter one too (each token's
// time is recorded), so the figures are time to first token and whole
// generation time per output length, with the work each variant did.
#include <algorithm>
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
#include "core/lazyllm/lazy_state.h"
#include "kernels/cpu/cpu_level.h"

namespace prepack::cli {
namespace {

struct BenchLazyOptions {
    CommonOptions common;
    std::string   prompt_tokens = "256,1024,3840";
    std::string   output_tokens = "16,64,256";
    int32_t       max_tokens = 0;   // one output length (instead of --output-tokens)
    std::string   revive_limits = "0,-1";
    std::string   schedule;   // empty: the model's default
    std::string   scoring;    // empty: the default
    uint64_t      seed = 42;
    int32_t       reps = 3;
    int32_t       warmup = 1;
};

struct Variant {
    std::string                      name;
    bool                             lazy;
    LazySchedule                     schedule;
    int32_t                          revive_limit;   // as requested (0 = the default)
    std::vector<double>              ttft;
    std::vector<std::vector<double>> step;           // per timed run: each token's own seconds
    GenerateResult                   last;
};

std::string LimitName(int32_t requested) {
    if (requested < 0) return "lazy, no revival bound";
    if (requested == 0) return absl::StrCat("lazy, revive <= ", kDefaultLazyReviveLimit, " (default)");
    return absl::StrCat("lazy, revive <= ", requested);
}

// Leading generated tokens equal in both runs.
int32_t SamePrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return static_cast<int32_t>(i);
}

int Run(const BenchLazyOptions& o) {
    absl::StatusOr<std::vector<int32_t>> lengths = ParseIntList("--prompt-tokens", o.prompt_tokens, 2);
    if (!lengths.ok()) return Fail(lengths.status());
    absl::StatusOr<std::vector<int32_t>> outputs =
        o.max_tokens > 0 ? std::vector<int32_t>{o.max_tokens} : ParseIntList("--output-tokens", o.output_tokens, 1);
    if (!outputs.ok()) return Fail(outputs.status());
    std::sort(outputs->begin(), outputs->end());
    absl::StatusOr<std::vector<int32_t>> limits = ParseIntList("--revive-limits", o.revive_limits, -1);
    if (!limits.ok()) return Fail(limits.status());
    absl::StatusOr<LazyScoring> parsed_scoring = ParseLazyScoring(o.scoring);
    if (!parsed_scoring.ok()) return Fail(parsed_scoring.status());
    const LazyScoring scoring = *parsed_scoring;
    const int32_t longest = *std::max_element(lengths->begin(), lengths->end());
    const int32_t max_out = outputs->back();
    // Room for the longest prompt, its generation, and the aux cache (at most one hidden state per token).
    absl::StatusOr<Loaded> loaded = Load(o.common, 2 * (int64_t{longest} + max_out));
    if (!loaded.ok()) return Fail(loaded.status());
    const Model& model = *loaded->model;
    const ModelConfig& c = model.config();
    if (longest + max_out > c.max_context) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--prompt-tokens ", longest, " plus ", max_out,
                                                            " output tokens exceed the context of ", c.max_context)));
    }
    absl::StatusOr<LazySchedule> schedule = ParseLazySchedule(o.schedule, c.n_layers);
    if (!schedule.ok()) return Fail(schedule.status());
    LazySchedule keep_all = *schedule;
    for (LazyPoint& p : keep_all) p.keep = 1.0f;
    StepRunner& forward = *loaded->runner;

    nlohmann::json results = nlohmann::json::array();
    double worst_default = 1e9;
    for (int32_t n : *lengths) {
        const std::vector<int32_t> prompt = RandomPrompts({n}, c.vocab_size, o.seed)[0];
        std::vector<Variant> variants;
        variants.push_back({"full", false, {}, 0, {}, {}, {}});
        variants.push_back({"keep 1.0", true, keep_all, 0, {}, {}, {}});
        for (int32_t limit : *limits) variants.push_back({LimitName(limit), true, *schedule, limit, {}, {}, {}});
        // Rounds interleave the variants, so a noisy spell hits all alike.
        for (int32_t round = 0; round < o.warmup + o.reps; ++round) {
            const bool timed = round >= o.warmup;
            std::fprintf(stderr, "bench lazy: %d prompt tokens, %s round %d of %d\n", n, timed ? "timed" : "warm-up",
                         timed ? round - o.warmup + 1 : round + 1, timed ? o.reps : o.warmup);
            for (Variant& v : variants) {
                GenerateRequest r;
                r.prompt_tokens = prompt;
                r.max_tokens = max_out;
                r.sampling.temperature = 0.0f;
                r.ignore_eos = true;
                r.lazy = v.lazy;
                r.lazy_schedule = v.schedule;
                r.lazy_revive_limit = v.revive_limit;
                r.lazy_scoring = scoring;
                absl::StatusOr<GenerateResult> g = Generate(forward, r);
                if (!g.ok()) return Fail(g.status());
                if (timed) {
                    v.ttft.push_back(g->prefill_seconds);
                    std::vector<double> step(max_out);
                    for (int32_t i = 0; i < max_out; ++i) {
                        step[i] = g->token_seconds.at(i) - (i > 0 ? g->token_seconds.at(i - 1) : 0.0);
                    }
                    v.step.push_back(std::move(step));
                }
                v.last = std::move(*g);
            }
        }
        // Whole generation up to output i: the sum of each token's median
        // time over the runs. A neighbour's noisy spell lasts seconds and
        // hits one run's stretch of steps; per-token medians drop it where a
        // median of whole totals would keep it in every run it touched.
        auto total_at = [&](const Variant& v, size_t i) {
            double sum = 0.0;
            for (int32_t t = 0; t < (*outputs)[i]; ++t) {
                std::vector<double> runs;
                for (const std::vector<double>& run : v.step) runs.push_back(run[t]);
                sum += Median(runs);
            }
            return sum;
        };
        const Variant& full = variants[0];
        const double ttft_full = Median(full.ttft), ttft_keep1 = Median(variants[1].ttft);
        nlohmann::json lazy_rows = nlohmann::json::array();
        for (size_t k = 2; k < variants.size(); ++k) {
            const Variant& v = variants[k];
            nlohmann::json per_output = nlohmann::json::array();
            for (size_t i = 0; i < outputs->size(); ++i) {
                const int32_t m = (*outputs)[i];
                const double speedup = total_at(full, i) / total_at(v, i);
                if (v.revive_limit == 0) worst_default = std::min(worst_default, speedup);
                per_output.push_back({
                    {"output_tokens", m},
                    {"total_ms_full", total_at(full, i) * 1e3},
                    // Scoring every step and pruning nothing: the floor of the overhead.
                    {"total_ms_keep1", total_at(variants[1], i) * 1e3},
                    {"total_ms", total_at(v, i) * 1e3},
                    {"total_speedup", speedup},
                    // The prompt's token-layers computed once this many tokens were out.
                    {"work_fraction_after", v.last.token_work_fraction.at(m - 1)},
                    // Pruned tokens brought back per decode step (m - 1 steps made them).
                    {"revived_per_step", m > 1 ? double(v.last.token_revived.at(m - 1)) / (m - 1) : 0.0},
                    {"same_tokens_as_full", SamePrefix(std::vector<int32_t>(v.last.tokens.begin(), v.last.tokens.begin() + m),
                                                       full.last.tokens)},
                });
            }
            const double ttft = Median(v.ttft);
            lazy_rows.push_back({{"variant", v.name},
                                 {"revive_limit", v.revive_limit == 0 ? kDefaultLazyReviveLimit : v.revive_limit},
                                 {"ttft_ms", ttft * 1e3},
                                 {"ttft_speedup", ttft_full / ttft},
                                 {"max_revived_in_step", v.last.max_revived_in_step},
                                 {"outputs", per_output}});
        }
        const GenerateResult& first_lazy = variants[2].last;
        const double work = first_lazy.prompt_work_fraction;
        const double ttft_lazy = Median(variants[2].ttft);
        results.push_back({
            {"prompt_tokens", n},
            {"ttft_ms_full", ttft_full * 1e3},
            {"ttft_ms_keep1", ttft_keep1 * 1e3},
            {"keep1_overhead", ttft_keep1 / ttft_full - 1.0},
            // The first lazy variant's prefill (every bound prefills alike).
            {"ttft_ms_lazy", ttft_lazy * 1e3},
            {"ttft_speedup", ttft_full / ttft_lazy},
            {"work_fraction", work},
            // Measured speedup over the ideal one (1 / work fraction): how
            // little the scoring and compaction cost.
            {"speedup_vs_work", (ttft_full / ttft_lazy) * work},
            {"layer_fractions", first_lazy.prompt_layer_fractions},
            {"same_first_token", full.last.tokens.at(0) == first_lazy.tokens.at(0)},
            {"lazy", lazy_rows},
        });
    }
    const nlohmann::json out = {{"model", model.source()},
                                {"threads", NumThreads()},
                                {"cpu_kernels", cpu::KernelChoiceSummary()},
                                {"schedule", FormatLazySchedule(*schedule)},
                                {"scoring", FormatLazyScoring(scoring)},
                                {"default_revive_limit", kDefaultLazyReviveLimit},
                                {"output_tokens", *outputs},
                                {"worst_total_speedup_default", worst_default < 1e9 ? nlohmann::json(worst_default)
                                                                                    : nlohmann::json(nullptr)},
                                {"results", results}};
    if (o.common.json) {
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("model %s, %d threads, schedule %s\n", model.source().c_str(), NumThreads(),
                out["schedule"].get<std::string>().c_str());
    std::printf("CPU kernels %s\n", cpu::KernelChoiceSummary().c_str());
    for (const nlohmann::json& r : results) {
        std::printf("\n%d prompt tokens: TTFT full %.1f ms, lazy %.1f ms (%.2fx; work %.1f%%, %.2f of ideal), "
                    "keep 1.0 %+.1f%%\n",
                    r["prompt_tokens"].get<int>(), r["ttft_ms_full"].get<double>(), r["ttft_ms_lazy"].get<double>(),
                    r["ttft_speedup"].get<double>(), 100.0 * r["work_fraction"].get<double>(),
                    r["speedup_vs_work"].get<double>(), 100.0 * r["keep1_overhead"].get<double>());
        std::printf("  %-34s %7s %11s %11s %11s %8s %8s %9s %6s\n", "variant", "output", "total full", "keep 1.0",
                    "total lazy", "speedup", "work", "revived/s", "same");
        for (const nlohmann::json& v : r["lazy"]) {
            for (const nlohmann::json& p : v["outputs"]) {
                std::printf("  %-34s %7d %9.1fms %9.1fms %9.1fms %7.2fx %7.1f%% %9.1f %6d\n",
                            v["variant"].get<std::string>().c_str(), p["output_tokens"].get<int>(),
                            p["total_ms_full"].get<double>(), p["total_ms_keep1"].get<double>(),
                            p["total_ms"].get<double>(),
                            p["total_speedup"].get<double>(), 100.0 * p["work_fraction_after"].get<double>(),
                            p["revived_per_step"].get<double>(), p["same_tokens_as_full"].get<int>());
            }
        }
    }
    return 0;
}

}  // namespace

void AddBenchLazy(CLI::App& bench, int* exit_code) {
    auto* o = new BenchLazyOptions();
    CLI::App* cmd = bench.add_subcommand("lazy", "Time to first token and whole generation with and without LazyLLM");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--prompt-tokens", o->prompt_tokens, "comma-separated prompt lengths");
    auto* outputs = cmd->add_option("--output-tokens", o->output_tokens,
                                    "comma-separated output lengths (one generation of the longest gives all)");
    cmd->add_option("--max-tokens", o->max_tokens, "a single output length")
        ->check(CLI::Range(1, 1 << 16))
        ->excludes(outputs);
    cmd->add_option("--revive-limits", o->revive_limits,
                    "comma-separated revival bounds, one lazy variant each (0 = default, -1 = no bound)");
    cmd->add_option("--lazy-schedule", o->schedule, "LAYER:KEEP,... (default: the model's default schedule)");
    cmd->add_option("--lazy-scoring", o->scoring, "window=W,heads=mean|max,pool=P,sinks=S,recent=R, or paper");
    cmd->add_option("--seed", o->seed, "seed of the prompt tokens");
    cmd->add_option("--reps", o->reps, "timed runs (medians reported: of TTFT, and of each token's time for totals)")->check(CLI::Range(1, 100));
    cmd->add_option("--warmup", o->warmup, "untimed runs first")->check(CLI::Range(0, 100));
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
