// `prepack bench batch`: one offline batch run under each scheduling policy
// (fcfs, lru, batchllm) in one process, reporting throughput, prefill tokens
// computed against the logical count and the prefix tree's minimum, and peak KV.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_split.h"
#include "cli/batch_io.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/batchllm/nested_groups.h"
#include "core/request/sampler.h"
#include "kernels/cpu/cpu_level.h"

namespace prepack::cli {
namespace {

struct BenchBatchOptions {
    CommonOptions common;
    std::string   workload = "shared-prefix";
    std::string   policies = "fcfs,lru,batchllm";
    int32_t       requests = 64;
    uint64_t      seed = 42;
    int32_t       max_batch_tokens = 1024;
    int32_t       max_running = 64;
};

int32_t Uniform(Rng& rng, int32_t lo, int32_t hi) {
    return lo + static_cast<int32_t>(rng.NextU64() % static_cast<uint64_t>(hi - lo + 1));
}

void AppendRandom(std::vector<int32_t>& ids, int32_t n, int32_t vocab, Rng& rng) {
    for (int32_t i = 0; i < n; ++i) ids.push_back(3 + static_cast<int32_t>(rng.NextU64() % uint64_t(vocab - 3)));
}

// Generated workloads (requests shuffled, as an offline batch arrives):
//   shared-prefix         8 groups sharing 400-token prefixes; suffixes 20-120; outputs 32-128
//   shared-prefix-nested  the same in two levels: a 100-token system prompt for
//                         all, then a 300-token document per group
//   few-shot              one 600-token few-shot prefix for all; questions 20-60; outputs 8-32
//   no-sharing            independent 420-520-token prompts; outputs 32-128
constexpr const char* kWorkloads[] = {"shared-prefix", "shared-prefix-nested", "few-shot", "no-sharing"};

absl::StatusOr<std::vector<Request>> MakeWorkload(const std::string& name, int32_t n, int32_t vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<Request> reqs(n);
    std::vector<std::vector<int32_t>> prefixes;
    int32_t out_lo = 32, out_hi = 128, suf_lo = 20, suf_hi = 120;
    if (name == "shared-prefix") {
        prefixes.resize(8);
        for (auto& p : prefixes) AppendRandom(p, 400, vocab, rng);
    } else if (name == "shared-prefix-nested") {
        std::vector<int32_t> system;
        AppendRandom(system, 100, vocab, rng);
        prefixes.assign(8, system);
        for (auto& p : prefixes) AppendRandom(p, 300, vocab, rng);
    } else if (name == "few-shot") {
        prefixes.resize(1);
        AppendRandom(prefixes[0], 600, vocab, rng);
        out_lo = 8, out_hi = 32, suf_lo = 20, suf_hi = 60;
    } else if (name == "no-sharing") {
        suf_lo = 420, suf_hi = 520;
    } else {
        return absl::InvalidArgumentError(absl::StrCat("unknown workload '", name, "'"));
    }
    for (int32_t i = 0; i < n; ++i) {
        Request& r = reqs[i];
        if (!prefixes.empty()) r.prompt_tokens = prefixes[i % prefixes.size()];
        AppendRandom(r.prompt_tokens, Uniform(rng, suf_lo, suf_hi), vocab, rng);
        r.max_tokens = Uniform(rng, out_lo, out_hi);
        r.sampling.temperature = 0.0f;
        r.ignore_eos = true;   // fixed output lengths: the same work under every policy
    }
    for (int32_t i = n - 1; i > 0; --i) std::swap(reqs[i], reqs[rng.NextU64() % uint64_t(i + 1)]);
    return reqs;
}

absl::StatusOr<std::vector<Request>> ReadWorkloadFile(const std::string& path) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot open workload file '", path, "'"));
    std::vector<Request> reqs;
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        PP_ASSIGN_OR_RETURN(BatchItem item, ParseRequestLine(line, n));
        reqs.push_back(std::move(item.request));
    }
    if (reqs.empty()) return absl::InvalidArgumentError(absl::StrCat("workload file '", path, "' has no requests"));
    return reqs;
}

int Run(const BenchBatchOptions& o) {
    std::vector<SchedulePolicy> policies;
    const std::vector<std::string> names = absl::StrSplit(o.policies, ',');
    for (const std::string& name : names) {
        absl::StatusOr<SchedulePolicy> p = ParseSchedulePolicy(name);
        if (!p.ok()) return Fail(p.status());
        policies.push_back(*p);
    }
    absl::StatusOr<Loaded> probe = Load(o.common, 0, /*with_kv=*/false);   // for the vocabulary and tokenizer
    if (!probe.ok()) return Fail(probe.status());
    const bool generated = std::find(std::begin(kWorkloads), std::end(kWorkloads), o.workload) != std::end(kWorkloads);
    absl::StatusOr<std::vector<Request>> reqs = generated
        ? MakeWorkload(o.workload, o.requests, probe->model->config().vocab_size, o.seed)
        : ReadWorkloadFile(o.workload);
    if (!reqs.ok()) return Fail(reqs.status());
    // Workload statistics over the tokenized prompts.
    std::vector<std::vector<int32_t>> prompts;
    int64_t out_tokens = 0;
    for (const Request& r : *reqs) {
        std::vector<int32_t> ids = r.prompt_tokens;
        if (ids.empty()) {
            absl::StatusOr<std::vector<int32_t>> enc = probe->model->tokenizer().Encode(r.prompt, r.add_bos);
            if (!enc.ok()) return Fail(enc.status());
            ids = *enc;
        }
        prompts.push_back(std::move(ids));
        out_tokens += r.max_tokens;
    }
    probe->model.reset();
    const PrefixTree tree(prompts);
    // What batchllm groups: nested, prefixes of at least one KV block.
    GroupingOptions grouping_options;
    grouping_options.min_prefix_tokens = o.common.kv_block;
    const NestedGrouping grouping = NestGroups(prompts, grouping_options);
    nlohmann::json workload = {
        {"name", o.workload},
        {"requests", reqs->size()},
        {"prompt_tokens", tree.LogicalTokens()},
        {"unique_prompt_tokens", tree.UniqueTokens()},
        {"shared_prefix_fraction", 1.0 - double(tree.UniqueTokens()) / double(tree.LogicalTokens())},
        {"grouped_prompt_tokens", grouping.computed_tokens},
        {"max_output_tokens", out_tokens},
    };

    nlohmann::json results = nlohmann::json::array();
    for (SchedulePolicy policy : policies) {
        const EngineOptions eo = EngineOptionsFrom(o.common, o.max_batch_tokens, o.max_running, policy);
        absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(eo);
        if (!engine.ok()) return Fail(engine.status());
        std::fprintf(stderr, "bench batch: %s, %zu requests\n", SchedulePolicyName(policy), reqs->size());
        int64_t generated_tokens = 0, failed = 0;
        const BatchRunStats run = RunBatch(**engine, *reqs, [&](size_t, BatchResult r) {
            generated_tokens += static_cast<int64_t>(r.tokens.size());
            if (!r.status.ok()) ++failed;
        }, /*show_progress=*/true);
        const EngineStats st = (*engine)->Stats();
        const double logical = double(st.prompt_tokens);
        results.push_back({
            {"policy", SchedulePolicyName(policy)},
            {"seconds", run.seconds},
            {"output_tokens_per_s", generated_tokens / run.seconds},
            {"total_tokens_per_s", (logical + generated_tokens) / run.seconds},
            {"prefill_tokens_computed", st.prompt_tokens_computed},
            {"prefill_tokens_logical", st.prompt_tokens},
            {"token_saving_ratio", 1.0 - double(st.prompt_tokens_computed) / logical},
            {"optimal_token_saving_ratio", 1.0 - double(tree.UniqueTokens()) / logical},
            {"computed_vs_unique", double(st.prompt_tokens_computed) / double(tree.UniqueTokens())},
            {"peak_kv_bytes", run.peak_kv_bytes},
            {"preemptions", st.preemptions},
            {"recomputed_prompt_tokens", static_cast<int64_t>(st.prompt_tokens_computed) - tree.UniqueTokens()},
            {"prefix_tokens_recomputed", st.prefix_tokens_recomputed},
            {"steps", st.steps},
            {"cascade_decode_tokens", st.cascade_decode_tokens},
            {"failed_requests", failed},
        });
    }
    nlohmann::json out = {{"model", o.common.model}, {"cpu_kernels", cpu::KernelChoiceSummary()}, {"workload", workload},
                          {"results", results}};
    if (o.common.json) {
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("model %s; workload %s: %zu requests, %lld prompt tokens (%.1f%% in shared prefixes), %lld output tokens\n",
                o.common.model.c_str(), o.workload.c_str(), reqs->size(),
                static_cast<long long>(tree.LogicalTokens()), 100.0 * workload["shared_prefix_fraction"].get<double>(),
                static_cast<long long>(out_tokens));
    std::printf("CPU kernels %s\n", cpu::KernelChoiceSummary().c_str());
    std::printf("%-9s %9s %12s %12s %10s %8s %10s %11s %12s %12s\n", "policy", "seconds", "out tok/s", "total tok/s",
                "prefill", "saving", "vs unique", "recomputed", "preemptions", "peak KV MiB");
    for (const auto& r : results) {
        std::printf("%-9s %9.2f %12.1f %12.1f %10lld %7.1f%% %9.3fx %11lld %12llu %12.1f\n",
                    r["policy"].get<std::string>().c_str(), r["seconds"].get<double>(),
                    r["output_tokens_per_s"].get<double>(), r["total_tokens_per_s"].get<double>(),
                    static_cast<long long>(r["prefill_tokens_computed"].get<int64_t>()),
                    100.0 * r["token_saving_ratio"].get<double>(), r["computed_vs_unique"].get<double>(),
                    static_cast<long long>(r["recomputed_prompt_tokens"].get<int64_t>()),
                    static_cast<unsigned long long>(r["preemptions"].get<uint64_t>()),
                    r["peak_kv_bytes"].get<double>() / (1 << 20));
    }
    std::printf("recomputed: prefill tokens beyond the prefix tree's unique minimum (%lld)\n",
                static_cast<long long>(tree.UniqueTokens()));
    return 0;
}

}  // namespace

void AddBenchBatch(CLI::App& bench, int* exit_code) {
    auto* o = new BenchBatchOptions();
    CLI::App* cmd = bench.add_subcommand("batch", "An offline batch under fcfs, lru and batchllm scheduling");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--workload", o->workload,
                    "shared-prefix, shared-prefix-nested, few-shot, no-sharing, or a batch input file (JSON lines)");
    cmd->add_option("--policies", o->policies, "comma-separated: fcfs,lru,batchllm");
    cmd->add_option("--requests", o->requests, "requests in a generated workload")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--seed", o->seed, "seed of the generated workload");
    cmd->add_option("--max-batch-tokens", o->max_batch_tokens, "tokens per forward step")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--max-running", o->max_running, "sequences decoding at once")->check(CLI::Range(1, 1 << 16));
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
