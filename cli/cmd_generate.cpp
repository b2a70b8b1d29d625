// `prepack generate`: one prompt in, text streamed out (or one JSON object).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/grammar_flags.h"
#include "core/engine/generate.h"

namespace prepack::cli {
namespace {

struct GenerateOptions {
    CommonOptions            common;
    std::string              prompt;
    int32_t                  max_tokens = 128;
    // The library's defaults (SamplingParams), as the C ABI, prepackd and the
    // bindings use: one set everywhere, shown by --help.
    SamplingParams           sampling;
    std::vector<std::string> stop;
    bool                     lazy = false;
    std::string              lazy_schedule;
    std::string              lazy_scoring;
    int32_t                  lazy_revive_limit = 0;
    bool                     parse_special = false;
    GrammarFlags             grammar;
};

int Run(const GenerateOptions& o) {
    GenerateRequest req;
    req.prompt = o.prompt;
    req.max_tokens = o.max_tokens;
    req.sampling = o.sampling;
    req.stop = o.stop;
    req.parse_special = o.parse_special;
    req.lazy_revive_limit = o.lazy_revive_limit;
    // Check cheap things before loading a model.
    if (absl::Status s = ValidateSamplingParams(req.sampling); !s.ok()) return Fail(s);
    absl::StatusOr<grammar::GrammarSpec> spec = GrammarSpecFromFlags(o.grammar);
    if (!spec.ok()) return Fail(spec.status());
    req.grammar = *std::move(spec);

    absl::StatusOr<Loaded> loaded = Load(o.common, /*min_kv_tokens=*/4096);
    if (!loaded.ok()) return Fail(loaded.status());
    if (o.lazy || !o.lazy_schedule.empty() || !o.lazy_scoring.empty()) {
        absl::StatusOr<LazySchedule> sch = ParseLazySchedule(o.lazy_schedule, loaded->model->config().n_layers);
        if (!sch.ok()) return Fail(sch.status());
        absl::StatusOr<LazyScoring> scoring = ParseLazyScoring(o.lazy_scoring);
        if (!scoring.ok()) return Fail(scoring.status());
        req.lazy = true;
        req.lazy_schedule = *sch;
        req.lazy_scoring = *scoring;
    }
    StepRunner& forward = *loaded->runner;
    TextCallback stream;
    if (!o.common.json) {
        stream = [](std::string_view piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
    }
    absl::StatusOr<GenerateResult> r = Generate(forward, req, stream);
    if (!r.ok()) return Fail(r.status());
    if (!o.common.json) {
        std::fputc('\n', stdout);
        return 0;
    }
    const double prefill_ms = r->prefill_seconds * 1e3, decode_ms = r->decode_seconds * 1e3;
    nlohmann::json j = {
        {"model", loaded->model->source()},
        {"prompt_tokens", r->prompt_tokens},
        {"tokens", r->tokens},
        {"text", r->text},
        {"finish_reason", FinishReasonName(r->finish_reason)},
        {"prefill_ms", prefill_ms},
        {"decode_ms", decode_ms},
        {"prefill_tokens_per_s", prefill_ms > 0 ? r->prompt_tokens.size() / (prefill_ms / 1e3) : 0.0},
        // The first generated token comes from the prefill; the rest from decode steps.
        {"decode_tokens_per_s",
         decode_ms > 0 && r->tokens.size() > 1 ? (r->tokens.size() - 1) / (decode_ms / 1e3) : 0.0},
        {"lazy", req.lazy},
        {"prompt_work_fraction", r->prompt_work_fraction},
        {"prompt_layer_fractions", r->prompt_layer_fractions},
    };
    if (req.lazy) {
        j["lazy_schedule"] = FormatLazySchedule(req.lazy_schedule);
        j["max_revived_in_step"] = r->max_revived_in_step;
        j["prompt_work_fraction_end"] = r->prompt_work_fraction_end;
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
}

}  // namespace

void AddGenerate(CLI::App& app, int* exit_code) {
    auto* o = new GenerateOptions();   // lives as long as the process: CLI11 binds to it
    CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of a prompt");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--prompt", o->prompt, "prompt text (empty: generate from BOS alone)")->required();
    cmd->add_flag("--parse-special", o->parse_special,
                  "read control-token text in the prompt, such as <|eot_id|>, as that token (off: plain text)");
    cmd->add_option("--max-tokens", o->max_tokens, "tokens to generate at most")->check(CLI::Range(0, 1 << 24));
    AddSamplingOptions(cmd, &o->sampling);
    cmd->add_option("--stop", o->stop, "stop when this text is generated (repeatable)");
    AddGrammarFlags(cmd, &o->grammar);
    cmd->add_flag("--lazy", o->lazy, "LazyLLM: prune prompt tokens the next token barely attends to");
    cmd->add_option("--lazy-schedule", o->lazy_schedule,
                    "LazyLLM schedule LAYER:KEEP,... (implies --lazy; default: full first quarter, then 50%, 30%, 15%)");
    cmd->add_option("--lazy-scoring", o->lazy_scoring,
                    "LazyLLM scoring window=W,heads=mean|max,pool=P,sinks=S,recent=R, or paper (implies --lazy)");
    cmd->add_option("--lazy-revive-limit", o->lazy_revive_limit,
                    "LazyLLM: pruned tokens one decode step may bring back (0 = the default, -1 = no bound)")
        ->check(CLI::Range(-1, 1 << 30));
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
