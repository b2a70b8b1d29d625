// `prepack batch`: an offline batch from a JSON-lines file to a JSON-lines
// file. Results are appended (and flushed) as each request finishes, so a
// killed job loses nothing: rerunning with the same --output skips the ids
// already there. The file is in prepack's own format (batch_io.h) or in
// OpenAI's batch format (openai_batch.h), told apart by its first line.
#include <cstdio>
#include <fstream>

#include "cli/batch_io.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/grammar_flags.h"
#include "cli/openai_batch.h"
#include "core/engine/engine.h"
#include "openai/request.h"

namespace prepack::cli {
namespace {

struct BatchOptions {
    CommonOptions common;
    std::string   input;
    std::string   output;
    std::string   policy = "batchllm";
    std::string   model_name;           // OpenAI batch files: what each body's "model" must name
    std::string   chat_template_file;   // OpenAI batch files: chat requests' template instead of the model's
    int32_t       max_batch_tokens = 1024;
    int32_t       max_running = 64;
    GrammarFlags  grammar;   // for the lines that name no grammar of their own
};

int Run(const BatchOptions& o) {
    absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(o.policy);
    if (!policy.ok()) return Fail(policy.status());
    std::ifstream in(o.input);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot open --input '", o.input, "'")));
    const absl::StatusOr<grammar::GrammarSpec> default_grammar = GrammarSpecFromFlags(o.grammar);
    if (!default_grammar.ok()) return Fail(default_grammar.status());
    if (IsOpenAiBatchFile(o.input)) {
        if (default_grammar->active()) {
            return Fail(absl::InvalidArgumentError(
                "the structured-output flags apply to prepack's own batch format; in an OpenAI batch file each "
                "body says its response_format"));
        }
        EngineOptions eo = EngineOptionsFrom(o.common, o.max_batch_tokens, o.max_running, *policy);
        eo.chat_template_file = o.chat_template_file;
        return RunOpenAiBatch(
            {o.input, o.output, o.model_name.empty() ? openai::DefaultModelId(o.common.model) : o.model_name, eo});
    }
    const std::set<std::string> done = DoneIds(o.output);
    std::vector<nlohmann::json> ids;
    std::vector<Request> requests;
    std::set<std::string> seen;
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        absl::StatusOr<BatchItem> item = ParseRequestLine(line, n);
        if (!item.ok()) return Fail(item.status());
        const std::string key = IdKey(item->id);
        if (!seen.insert(key).second) {
            return Fail(absl::InvalidArgumentError(absl::StrCat("line ", n, ": duplicate id ", key)));
        }
        if (done.count(key)) continue;
        ids.push_back(item->id);
        if (!item->request.grammar.active()) item->request.grammar = *default_grammar;
        requests.push_back(std::move(item->request));
    }
    std::fprintf(stderr, "batch: %zu requests to run, %zu already in %s\n", requests.size(), done.size(),
                 o.output.c_str());
    if (requests.empty()) return 0;

    const EngineOptions eo = EngineOptionsFrom(o.common, o.max_batch_tokens, o.max_running, *policy);
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(eo);
    if (!engine.ok()) return Fail(engine.status());
    EndPartialLine(o.output);
    std::ofstream out(o.output, std::ios::app);
    if (!out) return Fail(absl::PermissionDeniedError(absl::StrCat("cannot write --output '", o.output, "'")));
    size_t failed = 0;
    RunBatch(**engine, std::move(requests), [&](size_t i, BatchResult r) {
        if (!r.status.ok()) ++failed;
        out << ResultJson(ids[i], r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        out.flush();
    }, /*show_progress=*/true);
    PrintBatchSummary((*engine)->Stats(), failed, "requests");
    return failed ? 1 : 0;
}

}  // namespace

void AddBatch(CLI::App& app, int* exit_code) {
    auto* o = new BatchOptions();
    CLI::App* cmd = app.add_subcommand("batch", "Run an offline batch: JSON lines in, JSON lines out (resumable); "
                                                "`batch plan` / `batch merge` shard one over machines");
    AddCommonOptions(cmd, &o->common);
    // Required unless `batch plan` or `batch merge` runs instead (checked below).
    cmd->get_option("--model")->required(false);
    cmd->add_option("--input", o->input, "requests, one JSON object per line (required)");
    cmd->add_option("--output", o->output, "results, appended as they finish; rerun to resume (required)");
    cmd->add_option("--policy", o->policy, "batchllm (default), lru or fcfs");
    cmd->add_option("--model-name", o->model_name,
                    "OpenAI batch files: the model id each body's \"model\" must name (default: the model file's "
                    "name without directory and .gguf, as prepackd)");
    cmd->add_option("--chat-template-file", o->chat_template_file,
                    "OpenAI batch files: a Jinja chat template for /v1/chat/completions lines instead of the model's");
    cmd->add_option("--max-batch-tokens", o->max_batch_tokens, "tokens per forward step")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--max-running", o->max_running, "sequences decoding at once")->check(CLI::Range(1, 1 << 16));
    AddGrammarFlags(cmd, &o->grammar);   // a line's own json_schema / json_object / regex / grammar wins
    AddBatchPlan(*cmd, exit_code);
    AddBatchMerge(*cmd, exit_code);
    cmd->require_subcommand(0, 1);
    cmd->callback([cmd, o, exit_code]() {
        if (!cmd->get_subcommands().empty()) return;   // plan or merge ran
        for (const char* name : {"--model", "--input", "--output"}) {
            if (cmd->get_option(name)->count() == 0) throw CLI::RequiredError(name);
        }
        *exit_code = Run(*o);
    });
}

}  // namespace prepack::cli
