// `prepack eval lazy`: how closely LazyLLM-pruned generation follows full
// generation on real text. Prompts (150-500 tokens) are the model's own
// greedy continuations of story openings, or lines of --prompts FILE; for
// each, the first token's distribution with and without pruning (top-1
// agreement, KL divergence) and the first 32 greedy tokens are compared,
// under each revival bound asked for (the bound changes only decode steps).
//
// With --tasks FILE it runs a long-context task set instead (needle
// retrieval, multi-fact retrieval, questions about the text; cli/lazy_tasks.h):
// each task's greedy answer without pruning and under each LazyLLM setting of
// --settings, scored against the known answers, with the prefill time to the
// first token and the whole generation's time beside the accuracy.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "cli/bench_util.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/lazy_tasks.h"
#include "core/chat/chat_template.h"
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
    // --tasks mode.
    std::string   tasks_file;
    std::string   settings = "default";
    int32_t       revive_limit = 0;
    int32_t       answer_tokens = 32;
    std::string   json_file;
    std::vector<int32_t> task_tokens;   // only tasks of these lengths (empty: all)
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


// ---- --tasks: long-context task sets -----------------------------------

// One LazyLLM setting the tasks run under. A new per-setting knob goes
// here, into ParseSettings, AnswerTask's request and the setting's JSON.
struct LazySetting {
    std::string  name;               // as --settings gave it
    LazySchedule schedule;           // empty: the model's default schedule
    int32_t      revive_limit = 0;   // as GenerateRequest takes it (0 = the default)
    LazyScoring  scoring = DefaultLazyScoring();
};

// --settings: ';'-separated items, each "default" or LAYER:KEEP,..., then
// optionally "@" and a scoring as --lazy-scoring takes it; none for the
// empty text (the unpruned answers alone).
absl::StatusOr<std::vector<LazySetting>> ParseSettings(const std::string& text, int32_t n_layers,
                                                       int32_t revive_limit) {
    std::vector<LazySetting> out;
    if (text.find_first_not_of(" \t") == std::string::npos) return out;
    size_t begin = 0;
    for (int item = 1;; ++item) {
        const size_t end = std::min(text.find(';', begin), text.size());
        std::string s = text.substr(begin, end - begin);
        s.erase(0, s.find_first_not_of(" \t"));
        s.erase(s.find_last_not_of(" \t") + 1);
        if (s.empty()) {
            return absl::InvalidArgumentError(
                absl::StrCat("--settings: item ", item, " is empty (\"default\" or LAYER:KEEP,...)"));
        }
        LazySetting setting{s, {}, revive_limit};
        const size_t at = s.find('@');
        if (at != std::string::npos) {
            absl::StatusOr<LazyScoring> scoring = ParseLazyScoring(s.substr(at + 1));
            if (!scoring.ok()) {
                return absl::InvalidArgumentError(absl::StrCat("--settings: item ", item, " (", s, "): ",
                                                               scoring.status().message()));
            }
            setting.scoring = *scoring;
        }
        const std::string schedule_text = s.substr(0, at);
        if (schedule_text != "default") {
            absl::StatusOr<LazySchedule> schedule = ParseLazySchedule(schedule_text, n_layers);
            if (!schedule.ok()) {
                return absl::InvalidArgumentError(absl::StrCat("--settings: item ", item, " (", s, "): ",
                                                               schedule.status().message()));
            }
            setting.schedule = *schedule;
        }
        out.push_back(std::move(setting));
        if (end == text.size()) break;
        begin = end + 1;
    }
    return out;
}

// A task ready to run: its prompt and where it came from.
struct PreparedTask {
    const LazyTask*      task;
    int32_t              document_tokens = 0;
    std::vector<int32_t> prompt;
};

// One greedy answer.
struct Answer {
    std::vector<int32_t> tokens;
    std::string          text;
    bool                 correct = false;
    double               ttft_ms = 0.0, gen_ms = 0.0;
    double               work = 1.0, work_end = 1.0;
};

absl::StatusOr<Answer> AnswerTask(StepRunner& forward, const PreparedTask& t, int32_t answer_tokens,
                                  const LazySetting* setting) {
    GenerateRequest r;
    r.prompt_tokens = t.prompt;
    r.max_tokens = answer_tokens;
    r.sampling.temperature = 0.0f;
    r.lazy = setting != nullptr;
    if (setting) {
        r.lazy_schedule = setting->schedule;
        r.lazy_revive_limit = setting->revive_limit;
        r.lazy_scoring = setting->scoring;
    }
    absl::StatusOr<GenerateResult> g = Generate(forward, r);
    if (!g.ok()) return absl::Status(g.status().code(), absl::StrCat(t.task->where, ": ", g.status().message()));
    Answer a;
    a.tokens = g->tokens;
    a.text = g->text;
    a.correct = LazyAnswerCorrect(*t.task, g->text);
    a.ttft_ms = g->token_seconds.empty() ? g->prefill_seconds * 1e3 : g->token_seconds.front() * 1e3;
    a.gen_ms = g->token_seconds.empty() ? g->prefill_seconds * 1e3 : g->token_seconds.back() * 1e3;
    a.work = g->prompt_work_fraction;
    a.work_end = g->prompt_work_fraction_end;
    return a;
}

// Sums over the tasks of one group (a length, a kind, all) under one setting.
struct Tally {
    int32_t tasks = 0, full_correct = 0, correct = 0, identical = 0;
    double  log_ttft = 0.0, log_gen = 0.0;   // sums of log(unpruned / pruned)
    double  work = 0.0, work_end = 0.0;

    void Add(const Answer& full, const Answer& lazy) {
        ++tasks;
        full_correct += full.correct;
        correct += lazy.correct;
        identical += full.tokens == lazy.tokens;
        log_ttft += std::log(full.ttft_ms / lazy.ttft_ms);
        log_gen += std::log(full.gen_ms / lazy.gen_ms);
        work += lazy.work;
        work_end += lazy.work_end;
    }
    nlohmann::json Json() const {
        const double n = tasks;
        return {
            {"tasks", tasks},
            {"full_correct", full_correct},
            {"correct", correct},
            {"full_accuracy", full_correct / n},
            {"accuracy", correct / n},
            // null when the unpruned model answers none.
            {"accuracy_ratio", full_correct ? nlohmann::json(double(correct) / full_correct) : nlohmann::json()},
            {"identical_share", identical / n},
            // unpruned / pruned, geometric means over the tasks: above 1 = pruning is faster.
            {"ttft_speedup", std::exp(log_ttft / n)},
            {"gen_speedup", std::exp(log_gen / n)},
            {"work_fraction", work / n},
            {"work_fraction_end", work_end / n},
        };
    }
};

// Tasks are grouped by their target length in thousands of tokens, rounded:
// "1k" for about 1000 tokens, "<1k" below 500.
int32_t LengthThousands(int32_t tokens) { return static_cast<int32_t>(std::lround(tokens / 1000.0)); }
std::string LengthLabel(int32_t thousands) {
    return thousands == 0 ? std::string("<1k") : absl::StrCat(thousands, "k");
}

void PrintTallyRow(const std::string& label, const nlohmann::json& t) {
    const int32_t n = t["tasks"], fc = t["full_correct"], c = t["correct"];
    char ratio[32] = "-";
    if (!t["accuracy_ratio"].is_null()) std::snprintf(ratio, sizeof ratio, "%.2f", t["accuracy_ratio"].get<double>());
    std::printf("  %-8s %5d %9s %8s %6s %9.1f%% %7.2f %6.2f %10.1f%%\n", label.c_str(), n,
                absl::StrCat(fc, "/", n).c_str(), absl::StrCat(c, "/", n).c_str(), ratio,
                100.0 * t["identical_share"].get<double>(), t["ttft_speedup"].get<double>(),
                t["gen_speedup"].get<double>(), 100.0 * t["work_fraction"].get<double>());
}

// --task-tokens: keeps the tasks whose document length is one of `lengths`
// (a length subset of one file, so a sweep needs no copy of it).
// INVALID_ARGUMENT naming the lengths the file has when none is left.
absl::Status KeepTaskLengths(const std::vector<int32_t>& lengths, const std::string& file,
                             std::vector<LazyTask>* tasks) {
    std::set<int32_t> present;
    std::vector<LazyTask> kept;
    for (LazyTask& t : *tasks) {
        present.insert(t.tokens);
        if (std::find(lengths.begin(), lengths.end(), t.tokens) != lengths.end()) kept.push_back(std::move(t));
    }
    if (kept.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("--task-tokens: no task of ", file,
                                                       " has one of those lengths (it has: ",
                                                       absl::StrJoin(present, ", "), ")"));
    }
    *tasks = std::move(kept);
    return absl::OkStatus();
}

int RunTasks(const EvalLazyOptions& o) {
    absl::StatusOr<std::vector<LazyTask>> tasks = LoadLazyTasks(o.tasks_file);
    if (!tasks.ok()) return Fail(tasks.status());
    if (!o.task_tokens.empty()) {
        absl::Status kept = KeepTaskLengths(o.task_tokens, o.tasks_file, &*tasks);
        if (!kept.ok()) return Fail(kept);
    }
    absl::StatusOr<int32_t> revive = ResolveReviveLimit(o.revive_limit);
    if (!revive.ok()) return Fail(revive.status());

    // Documents and prompts first, with the vocabulary alone: a bad task
    // is reported before the weights load.
    absl::StatusOr<Tokenizer> tok = LoadTokenizer(o.common.model);
    if (!tok.ok()) return Fail(tok.status());
    const ChatTemplates templates = ChatTemplates::Load(*tok);
    LazyTextCache texts;
    std::vector<PreparedTask> prepared;
    int64_t longest = 0;
    for (const LazyTask& t : *tasks) {
        absl::StatusOr<const std::string*> text = texts.Get(t);
        if (!text.ok()) return Fail(text.status());
        absl::StatusOr<LazyDocument> doc = BuildLazyDocument(t, **text, *tok);
        if (!doc.ok()) return Fail(doc.status());
        absl::StatusOr<std::vector<int32_t>> prompt = LazyTaskPrompt(t, doc->text, *tok, templates);
        if (!prompt.ok()) return Fail(prompt.status());
        longest = std::max<int64_t>(longest, prompt->size());
        prepared.push_back({&t, doc->tokens, std::move(*prompt)});
    }

    // KV for the longest prompt and its answer, twice over for LazyLLM's aux cache.
    absl::StatusOr<Loaded> loaded = Load(o.common, 2 * (longest + o.answer_tokens));
    if (!loaded.ok()) return Fail(loaded.status());
    const ModelConfig& c = loaded->model->config();
    for (const PreparedTask& p : prepared) {
        if (static_cast<int64_t>(p.prompt.size()) + o.answer_tokens > c.max_context) {
            return Fail(absl::InvalidArgumentError(absl::StrCat(
                p.task->where, ": task '", p.task->id, "' has a prompt of ", p.prompt.size(), " tokens, which with ",
                o.answer_tokens, " answer tokens exceeds the model's context of ", c.max_context)));
        }
    }
    absl::StatusOr<std::vector<LazySetting>> settings = ParseSettings(o.settings, c.n_layers, o.revive_limit);
    if (!settings.ok()) return Fail(settings.status());
    StepRunner& forward = *loaded->runner;

    // An untimed warm-up, so the first task's times are not the cold start's.
    {
        PreparedTask warm = prepared.front();
        warm.prompt.resize(std::min<size_t>(warm.prompt.size(), 64));
        absl::StatusOr<Answer> a = AnswerTask(forward, warm, 2, nullptr);
        if (!a.ok()) return Fail(a.status());
    }

    const size_t ns = settings->size();
    std::vector<Tally> all(ns);
    std::vector<std::map<int32_t, Tally>> by_length(ns);   // keyed by the rounded thousands, in order
    std::vector<std::map<std::string, Tally>> by_kind(ns);
    int32_t full_correct = 0;
    nlohmann::json per_task = nlohmann::json::array();
    for (size_t i = 0; i < prepared.size(); ++i) {
        const PreparedTask& p = prepared[i];
        const LazyTask& t = *p.task;
        std::fprintf(stderr, "eval lazy: task %zu of %zu (%zu tokens)\n", i + 1, prepared.size(), p.prompt.size());
        absl::StatusOr<Answer> full = AnswerTask(forward, p, o.answer_tokens, nullptr);
        if (!full.ok()) return Fail(full.status());
        full_correct += full->correct;
        nlohmann::json row = {
            {"id", t.id},
            {"kind", t.kind},
            {"tokens", t.tokens},
            {"document_tokens", p.document_tokens},
            {"prompt_tokens", p.prompt.size()},
            {"full",
             {{"correct", full->correct},
              {"answer", full->text},
              {"output_tokens", full->tokens.size()},
              {"ttft_ms", full->ttft_ms},
              {"gen_ms", full->gen_ms}}},
            {"lazy", nlohmann::json::array()},
        };
        std::string verdicts = absl::StrCat("  unpruned ", full->correct ? "right" : "wrong");
        for (size_t s = 0; s < ns; ++s) {
            absl::StatusOr<Answer> lazy = AnswerTask(forward, p, o.answer_tokens, &(*settings)[s]);
            if (!lazy.ok()) return Fail(lazy.status());
            all[s].Add(*full, *lazy);
            by_length[s][LengthThousands(t.tokens)].Add(*full, *lazy);
            by_kind[s][t.kind].Add(*full, *lazy);
            const bool identical = full->tokens == lazy->tokens;
            row["lazy"].push_back({
                {"setting", (*settings)[s].name},
                {"correct", lazy->correct},
                {"identical", identical},
                {"answer", lazy->text},
                {"output_tokens", lazy->tokens.size()},
                {"ttft_ms", lazy->ttft_ms},
                {"gen_ms", lazy->gen_ms},
                {"work_fraction", lazy->work},
                {"work_fraction_end", lazy->work_end},
            });
            absl::StrAppend(&verdicts, ", ", (*settings)[s].name, " ", lazy->correct ? "right" : "wrong",
                            identical ? " (identical)" : "");
        }
        std::fprintf(stderr, "%s\n", verdicts.c_str());
        per_task.push_back(std::move(row));
    }

    nlohmann::json settings_json = nlohmann::json::array();
    for (size_t s = 0; s < ns; ++s) {
        const LazySetting& st = (*settings)[s];
        nlohmann::json lengths = nlohmann::json::array(), kinds = nlohmann::json::array();
        for (const auto& [k, tally] : by_length[s]) {
            nlohmann::json j = tally.Json();
            j["bucket"] = LengthLabel(k);
            lengths.push_back(j);
        }
        for (const auto& [kind, tally] : by_kind[s]) {
            nlohmann::json j = tally.Json();
            j["kind"] = kind;
            kinds.push_back(j);
        }
        settings_json.push_back({
            {"name", st.name},
            {"schedule", FormatLazySchedule(st.schedule.empty() ? DefaultLazySchedule(c.n_layers) : st.schedule)},
            {"revive_limit", *ResolveReviveLimit(st.revive_limit)},
            {"scoring", FormatLazyScoring(st.scoring)},
            {"summary", all[s].Json()},
            {"by_length", lengths},
            {"by_kind", kinds},
        });
    }
    const double n = static_cast<double>(prepared.size());
    const nlohmann::json out = {
        {"model", loaded->model->source()},
        {"tasks_file", o.tasks_file},
        {"task_tokens", o.task_tokens},
        {"tasks", prepared.size()},
        {"answer_tokens", o.answer_tokens},
        {"prompt_format", templates.empty() ? "plain" : "chat_template"},
        {"full_correct", full_correct},
        {"full_accuracy", full_correct / n},
        {"settings", settings_json},
        {"per_task", per_task},
    };
    if (!o.json_file.empty()) {
        std::ofstream f(o.json_file);
        f << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        if (!f) return Fail(absl::UnavailableError(absl::StrCat("--json-file: cannot write ", o.json_file)));
    }
    if (o.common.json) {
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    std::printf("model %s: %zu tasks of %s, greedy answers of at most %d tokens (%s)\n",
                loaded->model->source().c_str(), prepared.size(), o.tasks_file.c_str(), o.answer_tokens,
                templates.empty() ? "plain prompt" : "the model's chat template");
    std::printf("unpruned: %d/%zu correct\n", full_correct, prepared.size());
    for (const nlohmann::json& st : settings_json) {
        std::printf("\nsetting %s: schedule %s, scoring %s, revival bound %d\n", st["name"].get<std::string>().c_str(),
                    st["schedule"].get<std::string>().c_str(), st["scoring"].get<std::string>().c_str(),
                    st["revive_limit"].get<int32_t>());
        std::printf("  %-8s %5s %9s %8s %6s %10s %7s %6s %11s\n", "group", "tasks", "unpruned", "pruned", "ratio",
                    "identical", "TTFT x", "gen x", "prompt work");
        for (const nlohmann::json& b : st["by_length"]) PrintTallyRow(b["bucket"].get<std::string>(), b);
        for (const nlohmann::json& k : st["by_kind"]) PrintTallyRow(k["kind"].get<std::string>(), k);
        PrintTallyRow("all", st["summary"]);
    }
    std::printf("\n(TTFT x, gen x: unpruned time / pruned time, geometric mean over the tasks; prompt work: the "
                "share of the prompt's token-layers the pruned prefill computed)\n");
    return 0;
}

}  // namespace

void AddEvalLazy(CLI::App& eval, int* exit_code) {
    auto* o = new EvalLazyOptions();
    CLI::App* cmd = eval.add_subcommand("lazy", "Fidelity of LazyLLM-pruned generation to full generation");
    AddCommonOptions(cmd, &o->common);
    // Without --tasks: first-token and greedy agreement on story prompts.
    std::vector<CLI::Option*> story_mode = {
        cmd->add_option("--prompts", o->prompts_file,
                        "text file, one prompt per line (default: built from the model's own stories)"),
        cmd->add_option("--lazy-schedule", o->schedule, "LAYER:KEEP,... (default: the model's default schedule)"),
        cmd->add_option("--revive-limits", o->revive_limits,
                        "comma-separated revival bounds, each evaluated (0 = the default, -1 = no bound)"),
        cmd->add_option("--count", o->prompts, "prompts to evaluate")->check(CLI::Range(1, 100000)),
        cmd->add_option("--min-prompt-tokens", o->min_tokens, "built prompts: shortest")->check(CLI::Range(2, 1 << 20)),
        cmd->add_option("--max-prompt-tokens", o->max_tokens, "built prompts: longest")->check(CLI::Range(2, 1 << 20)),
        cmd->add_option("--compare-tokens", o->compare_tokens, "greedy tokens compared")->check(CLI::Range(1, 4096)),
        cmd->add_option("--seed", o->seed, "seed of the prompt lengths"),
    };
    // With --tasks: accuracy on a long-context task set (cli/lazy_tasks.h).
    CLI::Option* tasks = cmd->add_option(
        "--tasks", o->tasks_file,
        "a task set (JSON lines; scripts/make_lazy_eval_tasks.py, tests/data/lazy_eval/botchan_tasks.jsonl): "
        "answers with and without pruning scored against the known ones");
    for (CLI::Option* opt : story_mode) tasks->excludes(opt);
    cmd->add_option("--settings", o->settings,
                    "--tasks: ';'-separated LazyLLM settings, each 'default' (the model's default schedule) or "
                    "LAYER:KEEP,... as --lazy-schedule takes, then optionally @SCORING as --lazy-scoring takes "
                    "(default@window=16,pool=3); empty: the unpruned answers alone")
        ->capture_default_str()->needs(tasks);
    cmd->add_option("--revive-limit", o->revive_limit,
                    "--tasks: pruned tokens a decode step may bring back, in every setting (0 = the default, "
                    "-1 = no bound)")
        ->capture_default_str()->needs(tasks);
    cmd->add_option("--answer-tokens", o->answer_tokens, "--tasks: greedy answer tokens at most (EOS ends sooner)")
        ->capture_default_str()->check(CLI::Range(1, 4096))->needs(tasks);
    cmd->add_option("--task-tokens", o->task_tokens,
                    "--tasks: only the tasks whose document length (the file's \"tokens\") is one of these")
        ->delimiter(',')->needs(tasks);
    cmd->add_option("--json-file", o->json_file,
                    "--tasks: also write the JSON report (per task and per setting) to this file")
        ->needs(tasks);
    cmd->callback([o, exit_code]() { *exit_code = o->tasks_file.empty() ? Run(*o) : RunTasks(*o); });
}

}  // namespace prepack::cli
