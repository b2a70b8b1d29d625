// `prepack batch`: an offline batch from a JSON-lines file to a JSON-lines
// file. Results are appended (and flushed) as each request finishes, so a
// killed job loses nothing: rerunning with the same --output skips the ids
// already there.
#include <cstdio>
#include <fstream>

#include "cli/batch_io.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/engine/engine.h"

namespace prepack::cli {
namespace {

struct BatchOptions {
    CommonOptions common;
    std::string   input;
    std::string   output;
    std::string   policy = "batchllm";
    int32_t       max_batch_tokens = 1024;
    int32_t       max_running = 64;
};

// Makes sure appended lines start on a line of their own, even after a
// previous run was killed halfway through writing one.
void EndPartialLine(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in || in.tellg() <= 0) return;
    in.seekg(-1, std::ios::end);
    char last = 0;
    in.get(last);
    if (last != '\n') std::ofstream(path, std::ios::app) << '\n';
}

int Run(const BatchOptions& o) {
    absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(o.policy);
    if (!policy.ok()) return Fail(policy.status());
    std::ifstream in(o.input);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot open --input '", o.input, "'")));
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
    const EngineStats st = (*engine)->Stats();
    std::fprintf(stderr, "batch: done; %llu of %llu prompt tokens computed (%.1f%% saved by prefix sharing)%s\n",
                 static_cast<unsigned long long>(st.prompt_tokens_computed),
                 static_cast<unsigned long long>(st.prompt_tokens), 100.0 * st.prefix_saving,
                 failed ? absl::StrCat(", ", failed, " requests failed (see their \"error\")").c_str() : "");
    return failed ? 1 : 0;
}

}  // namespace

void AddBatch(CLI::App& app, int* exit_code) {
    auto* o = new BatchOptions();
    CLI::App* cmd = app.add_subcommand("batch", "Run an offline batch: JSON lines in, JSON lines out (resumable)");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--input", o->input, "requests, one JSON object per line")->required();
    cmd->add_option("--output", o->output, "results, appended as they finish; rerun to resume")->required();
    cmd->add_option("--policy", o->policy, "batchllm (default), lru or fcfs");
    cmd->add_option("--max-batch-tokens", o->max_batch_tokens, "tokens per forward step")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--max-running", o->max_running, "sequences decoding at once")->check(CLI::Range(1, 1 << 16));
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
