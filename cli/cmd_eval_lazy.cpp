// `prepack eval lazy`: how closely LazyLLM-pruned generation follows full
// generation on real text. Prompts (150-500 tokens) are the model's own
// greedy continuations of story openings, or lines of --prompts FILE; for
// each, the first token's distribution with and without pruning (top-1
// agreement, KL divergence) and the first 32 greedy tokens are compared,
// under each revival bound asked for (the bound changes only decode steps).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/bench_util.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/engine/generate.h"
#include "core/base/runtime.h"
#include "core/lazyllm/lazy_state.h"

namespace prepack::cli {
namespace {

struct EvalLazyOptions {
    CommonOptions common;
    std::string   prompts_file;
    std::string   schedule;
    std::string   revive_limits = "0,-1";
    int32_t       prompts = 40;
    int32_t       min_tokens = 150, max_tokens = 500;
    int32_t       compare_tokens = 32;
    uint64_t      seed = 7;
};

// Openings in the style of TinyStories; the model writes the rest.
const char* const kOpenings[] = {
    "Once upon a time",
    "One day, a little girl named Lily",
    "Tom and his dog Max went to the beach. They",
    "There was a big red ball in the park.",
    "Sue liked to play with her toys.",
    "Once there was a small cat who",
    "Ben had a new toy car. He",
    "The sun was shining and the birds were singing.",
    "Mom said, \"Let's go to the store.\"",
    "A little bird lived in a tree.",
    "Tim wanted to help his mom in the kitchen.",
    "Anna found a shiny rock in the garden.",
    "Once upon a time, there was a big bear",
    "The boy and the girl were friends.",
    "It was a rainy day and Lucy was sad.",
    "Max the dog loved to run.",
    "One morning, Sam woke up early.",
    "There was a little boat on the lake.",
    "Lily and her mom went to the park.",
    "The old man had a funny hat.",
};

// log softmax of `logits`.
std::vector<double> LogSoftmax(const std::vector<float>& logits) {
    const double max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float x : logits) sum += std::exp(x - max);
    const double lz = max + std::log(sum);
    std::vector<double> out(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - lz;
    return out;
}

int32_t Argmax(const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

absl::StatusOr<GenerateResult> Greedy(StepRunner& forward, std::vector<int32_t> prompt, int32_t n,
                                      const LazySchedule* lazy, int32_t revive_limit = 0) {
    GenerateRequest r;
    r.prompt_tokens = std::move(prompt);
    r.max_tokens = n;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    r.lazy = lazy != nullptr;
    if (lazy) r.lazy_schedule = *lazy;
    r.lazy_revive_limit = revive_limit;
    return Generate(forward, r);
}

// The evaluation prompts: lines of `file`, or greedy continuations of the
// openings cut at lengths drawn from [min, max].
absl::StatusOr<std::vector<std::vector<int32_t>>> BuildPrompts(const EvalLazyOptions& o, StepRunner& forward) {
    const Model& model = forward.model();
    std::vector<std::vector<int32_t>> prompts;
    if (!o.prompts_file.empty()) {
        std::ifstream in(o.prompts_file);
        if (!in) return absl::NotFoundError(absl::StrCat("--prompts: cannot open ", o.prompts_file));
        std::string line;
        int line_no = 0;
        while (std::getline(in, line) && static_cast<int32_t>(prompts.size()) < o.prompts) {
            ++line_no;
            if (line.empty()) continue;
            absl::StatusOr<std::vector<int32_t>> ids = ResolvePrompt(model, line, {}, true);
            if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat(o.prompts_file, ":", line_no, ": ", ids.status().message()));
            if (static_cast<int64_t>(ids->size()) + o.compare_tokens >= model.config().max_context) {
                return absl::InvalidArgumentError(absl::StrCat(o.prompts_file, ":", line_no, ": prompt of ", ids->size(),
                                                               " tokens leaves no room for ", o.compare_tokens, " tokens"));
            }
            prompts.push_back(*ids);
        }
        if (prompts.empty()) return absl::InvalidArgumentError(absl::StrCat("--prompts: ", o.prompts_file, " has no prompts"));
        return prompts;
    }
    const int32_t max_len = std::min(o.max_tokens, model.config().max_context - o.compare_tokens - 1);
    if (max_len < o.min_tokens) {
        return absl::InvalidArgumentError(absl::StrCat("the model's context of ", model.config().max_context,
                                                       " tokens is too short for prompts of ", o.min_tokens, " tokens"));
    }
    std::mt19937_64 rng(o.seed);
    std::uniform_int_distribution<int32_t> length(o.min_tokens, max_len);
    const int32_t n_openings = static_cast<int32_t>(std::size(kOpenings));
    std::vector<std::vector<int32_t>> stories(n_openings);
    for (int32_t i = 0; i < o.prompts; ++i) {
        std::vector<int32_t>& story = stories[i % n_openings];
        if (story.empty()) {
            PP_ASSIGN_OR_RETURN(std::vector<int32_t> head, ResolvePrompt(model, kOpenings[i % n_openings], {}, true));
            PP_ASSIGN_OR_RETURN(GenerateResult g,
                                Greedy(forward, head, max_len - static_cast<int32_t>(head.size()), nullptr));
            story = head;
            story.insert(story.end(), g.tokens.begin(), g.tokens.end());
        }
        const int32_t n = std::min<int32_t>(length(rng), static_cast<int32_t>(story.size()));
        prompts.emplace_back(story.begin(), story.begin() + n);
    }
    return prompts;
}

// One revival bound's agreement with full generation, summed over prompts.
struct BoundTally {
    int32_t limit;             // as requested (0 = the default)
    int32_t top1 = 0, exact = 0;
    double  kl = 0.0, agree = 0.0, work = 0.0, work_end = 0.0;
};

int Run(const EvalLazyOptions& o) {
    absl::StatusOr<std::vector<int32_t>> limits = ParseIntList("--revive-limits", o.revive_limits, -1);
    if (!limits.ok()) return Fail(limits.status());
    std::vector<BoundTally> bounds;
    for (int32_t limit : *limits) bounds.push_back({limit});
    absl::StatusOr<Loaded> loaded = Load(o.common, 2 * int64_t{std::max(o.max_tokens, 512)});
    if (!loaded.ok()) return Fail(loaded.status());
    const ModelConfig& c = loaded->model->config();
    absl::StatusOr<LazySchedule> schedule = ParseLazySchedule(o.schedule, c.n_layers);
    if (!schedule.ok()) return Fail(schedule.status());
    StepRunner& forward = *loaded->runner;
    absl::StatusOr<std::vector<std::vector<int32_t>>> prompts = BuildPrompts(o, forward);
    if (!prompts.ok()) return Fail(prompts.status());

    int64_t token_sum = 0;
    nlohmann::json per_prompt = nlohmann::json::array();
    for (size_t i = 0; i < prompts->size(); ++i) {
        const std::vector<int32_t>& p = (*prompts)[i];
        std::fprintf(stderr, "eval lazy: prompt %zu of %zu (%zu tokens)\n", i + 1, prompts->size(), p.size());
        absl::StatusOr<GenerateResult> full = Greedy(forward, p, o.compare_tokens, nullptr);
        if (!full.ok()) return Fail(full.status());
        token_sum += static_cast<int64_t>(p.size());
        const std::vector<double> lp = LogSoftmax(full->first_logits);
        nlohmann::json row = {{"prompt_tokens", p.size()}};
        for (BoundTally& b : bounds) {
            absl::StatusOr<GenerateResult> lazy = Greedy(forward, p, o.compare_tokens, &*schedule, b.limit);
            if (!lazy.ok()) return Fail(lazy.status());
            const std::vector<double> lq = LogSoftmax(lazy->first_logits);
            double kl = 0.0;
            for (size_t v = 0; v < lp.size(); ++v) kl += std::exp(lp[v]) * (lp[v] - lq[v]);
            int32_t same = 0;
            for (int32_t t = 0; t < o.compare_tokens; ++t) same += full->tokens[t] == lazy->tokens[t];
            const bool top1_same = Argmax(full->first_logits) == Argmax(lazy->first_logits);
            b.top1 += top1_same;
            b.exact += same == o.compare_tokens;
            b.kl += kl;
            b.agree += double(same) / o.compare_tokens;
            b.work += lazy->prompt_work_fraction;
            b.work_end += lazy->prompt_work_fraction_end;
            row[absl::StrCat("revive_limit_", *ResolveReviveLimit(b.limit))] = {
                {"top1_same", top1_same}, {"kl", kl}, {"greedy_same", same},
                {"work_fraction", lazy->prompt_work_fraction},
                {"work_fraction_end", lazy->prompt_work_fraction_end}};
        }
        per_prompt.push_back(row);
    }
    const double n = static_cast<double>(prompts->size());
    nlohmann::json by_bound = nlohmann::json::array();
    for (const BoundTally& b : bounds) {
        by_bound.push_back({
            {"revive_limit", *ResolveReviveLimit(b.limit)},
            {"first_token_top1_agreement", b.top1 / n},
            {"first_token_kl", b.kl / n},
            {"greedy_agreement", b.agree / n},
            {"greedy_exact", b.exact / n},
            {"work_fraction", b.work / n},
            // After the compared tokens: how many pruned token-layers decode brought back.
            {"work_fraction_end", b.work_end / n},
        });
    }
    const nlohmann::json out = {
        {"model", loaded->model->source()},
        {"schedule", FormatLazySchedule(*schedule)},
        {"prompts", prompts->size()},
        {"mean_prompt_tokens", token_sum / n},
        {"compare_tokens", o.compare_tokens},
        {"default_revive_limit", kDefaultLazyReviveLimit},
        {"by_revive_limit", by_bound},
        {"per_prompt", per_prompt},
    };
    if (o.common.json) {
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("model %s, schedule %s, %zu prompts of %.0f tokens on average\n", loaded->model->source().c_str(),
                out["schedule"].get<std::string>().c_str(), prompts->size(), token_sum / n);
    std::printf("%-22s %8s %10s %14s %10s %14s\n", "revival bound", "top-1", "KL (nats)",
                absl::StrCat("greedy ", o.compare_tokens).c_str(), "all equal", "work pre/post");
    for (const nlohmann::json& b : by_bound) {
        const int32_t limit = b["revive_limit"].get<int32_t>();
        const std::string name = limit < 0 ? "none" : absl::StrCat(limit, limit == kDefaultLazyReviveLimit ? " (default)" : "");
        std::printf("%-22s %7.1f%% %10.4f %13.1f%% %9.1f%% %6.1f%%/%5.1f%%\n", name.c_str(),
                    100.0 * b["first_token_top1_agreement"].get<double>(), b["first_token_kl"].get<double>(),
                    100.0 * b["greedy_agreement"].get<double>(), 100.0 * b["greedy_exact"].get<double>(),
                    100.0 * b["work_fraction"].get<double>(), 100.0 * b["work_fraction_end"].get<double>());
    }
    return 0;
}

}  // namespace

void AddEvalLazy(CLI::App& eval, int* exit_code) {
    auto* o = new EvalLazyOptions();
    CLI::App* cmd = eval.add_subcommand("lazy", "Fidelity of LazyLLM-pruned generation to full generation");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--prompts", o->prompts_file, "text file, one prompt per line (default: built from the model's own stories)");
    cmd->add_option("--lazy-schedule", o->schedule, "LAYER:KEEP,... (default: the model's default schedule)");
    cmd->add_option("--revive-limits", o->revive_limits,
                    "comma-separated revival bounds, each evaluated (0 = the default, -1 = no bound)");
    cmd->add_option("--count", o->prompts, "prompts to evaluate")->check(CLI::Range(1, 100000));
    cmd->add_option("--min-prompt-tokens", o->min_tokens, "built prompts: shortest")->check(CLI::Range(2, 1 << 20));
    cmd->add_option("--max-prompt-tokens", o->max_tokens, "built prompts: longest")->check(CLI::Range(2, 1 << 20));
    cmd->add_option("--compare-tokens", o->compare_tokens, "greedy tokens compared")->check(CLI::Range(1, 4096));
    cmd->add_option("--seed", o->seed, "seed of the prompt lengths");
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
