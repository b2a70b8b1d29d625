// `prepack batch plan` and `prepack batch merge`: an offline batch split over
// N machines by prefix (core/batchllm/shard_planner.h), and the shards'
// results put back together.
//
// plan reads the batch file, tokenizes every prompt with the model's
// vocabulary alone (no weights), and writes D/shard-000.jsonl ... (each
// shard's input lines, verbatim and in input order; a line without an "id"
// gets "id": its line number in the input, the id `prepack batch` would give
// it on the whole file, so results keep the same ids) and D/manifest.json
// (the input's sha256, each shard's file and 1-based input line numbers, ids
// and figures, the totals and the contiguous and hashed contrast splits).
// Lines `prepack batch` would refuse (not a JSON object, no prompt, a field
// of the wrong type, a duplicate id) are refused the same way, by line
// number, before anything is written: a shard must never fail where the
// whole file would not. Blank lines are skipped, as `prepack batch` does.
// Requests the engine rejects when they run (a bad sampling value, a prompt
// longer than the context) are planned like any other: their shard writes
// an "error" result, and merge puts it at its line.
//
// merge reads the shards' result files (`prepack batch --output` of each
// shard, in any order, resumed or not) and writes exactly one result per
// input line, in input order, matched by id. A missing result, an id with
// two results or a result whose id is not in the plan is reported by input
// line number (and file:line) with exit code 1, and nothing is written.
// A line cut short by a killed run is not a result (as when resuming); an
// output file that does not exist is taken as empty (`prepack batch` writes
// none for a shard without requests), so its ids are reported missing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/batch_io.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/sha256.h"
#include "core/batchllm/shard_planner.h"
#include "core/model/model.h"

namespace prepack::cli {
namespace {

constexpr const char kManifestFormat[] = "prepack-batch-plan/1";
constexpr size_t kMaxReported = 20;   // problems named one by one; the rest counted

struct PlanOptions {
    std::string model, input, out_dir;
    int32_t     shards = 2;
    int32_t     kv_block = 16;
    double      decode_weight = kDecodeTokenWeight;
    double      tolerance = 0.05;
    bool        json = false;
};

struct MergeOptions {
    std::string              manifest, output;
    std::vector<std::string> outputs;
    bool                     json = false;
};

// Progress on stderr at most once a second, for inputs large enough to wait on.
class Progress {
public:
    Progress(const char* what, size_t total) : what_(what), total_(total) {}
    void Tick(size_t done) {
        const auto now = std::chrono::steady_clock::now();
        if (total_ < 10000 || now - last_ < std::chrono::seconds(1)) return;
        last_ = now;
        std::fprintf(stderr, "batch plan: %s %zu/%zu\n", what_, done, total_);
    }

private:
    const char* what_;
    size_t total_;
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

std::string ShardFile(int32_t k) {
    char name[32];
    std::snprintf(name, sizeof name, "shard-%03d.jsonl", k);
    return name;
}

// The input line as a shard gets it: verbatim, or with "id": its input line
// number first when it has none.
std::string ShardLine(const std::string& line, size_t line_number) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.contains("id")) return line;
    const size_t brace = line.find('{');
    std::string out = line;
    out.insert(brace + 1, "\"id\":" + std::to_string(line_number) + ",");
    const nlohmann::json check = nlohmann::json::parse(out, nullptr, false);
    if (!check.is_discarded() && check.is_object() && check["id"] == nlohmann::json(line_number)) return out;
    j["id"] = line_number;   // not expected: ParseRequestLine accepted it as an object with a prompt
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::ordered_json SplitJson(const SplitFigures& f, int64_t single) {
    return {{"prompt_tokens_computed", f.prompt_tokens_computed},
            {"vs_single_machine", single > 0 ? double(f.prompt_tokens_computed) / double(single) : 1.0},
            {"work_max_over_mean", f.max_work > 0 ? 1.0 + f.imbalance() : 1.0}};
}

absl::Status WriteFile(const std::filesystem::path& path, const std::string& text) {
    const std::filesystem::path tmp = path.string() + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f << text;
        f.flush();
        if (!f) return absl::PermissionDeniedError(absl::StrCat("cannot write '", tmp.string(), "'"));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path.string(), "': ", ec.message()));
    return absl::OkStatus();
}

int RunPlan(const PlanOptions& o) {
    std::ifstream in(o.input, std::ios::binary);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot open --input '", o.input, "'")));

    // Parse every line as `prepack batch` does; report every bad one.
    std::vector<std::string> lines;        // the requests' lines, verbatim
    std::vector<size_t>      line_no;      // their 1-based line numbers in the input
    std::vector<Request>     requests;
    std::vector<std::string> ids;          // IdKey of each
    std::vector<std::string> errors;
    std::map<std::string, size_t> seen;
    std::string line;
    size_t physical = 0;
    for (size_t n = 1; std::getline(in, line); ++n) {
        physical = n;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        absl::StatusOr<BatchItem> item = ParseRequestLine(line, n);
        if (!item.ok()) {
            errors.emplace_back(item.status().message());
            continue;
        }
        const std::string key = IdKey(item->id);
        if (!seen.emplace(key, n).second) {
            errors.push_back(absl::StrCat("line ", n, ": duplicate id ", key, " (first on line ", seen[key], ")"));
            continue;
        }
        lines.push_back(line);
        line_no.push_back(n);
        requests.push_back(std::move(item->request));
        ids.push_back(key);
    }
    if (!errors.empty()) {
        for (size_t i = 0; i < std::min(errors.size(), kMaxReported); ++i) {
            std::fprintf(stderr, "prepack: %s\n", errors[i].c_str());
        }
        std::fprintf(stderr, "prepack: %zu bad line%s in '%s' (as `prepack batch` would refuse them); nothing planned\n",
                     errors.size(), errors.size() == 1 ? "" : "s", o.input.c_str());
        return 2;
    }

    absl::StatusOr<Tokenizer> tok = LoadTokenizer(o.model);
    if (!tok.ok()) return Fail(tok.status());
    std::vector<std::vector<int32_t>> prompts(requests.size());
    std::vector<int32_t> outputs(requests.size());
    size_t unencodable = 0;
    Progress progress("tokenized", requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
        const Request& r = requests[i];
        if (!r.prompt_tokens.empty()) {
            prompts[i] = r.prompt_tokens;
        } else {
            // As the engine tokenizes it (ResolvePrompt); one that fails
            // fails there too, with an error result: plan it as 0 tokens.
            absl::StatusOr<std::vector<int32_t>> enc = tok->Encode(r.prompt, r.add_bos, r.parse_special);
            if (enc.ok()) prompts[i] = *std::move(enc);
            else ++unencodable;
        }
        outputs[i] = std::max(0, r.max_tokens);
        progress.Tick(i + 1);
    }
    if (unencodable) std::fprintf(stderr, "batch plan: %zu prompts do not tokenize; planned as empty\n", unencodable);

    ShardPlanOptions po;
    po.shards = o.shards;
    po.grouping.min_prefix_tokens = o.kv_block;   // as the engine groups (BatchLlmScheduler::OrderBatch)
    po.decode_weight = o.decode_weight;
    po.tolerance = o.tolerance;
    if (requests.size() >= 10000) std::fprintf(stderr, "batch plan: grouping %zu prompts\n", requests.size());
    absl::StatusOr<ShardPlan> plan = PlanShards(prompts, outputs, ids, po);
    if (!plan.ok()) return Fail(plan.status());

    absl::StatusOr<std::string> sha = Sha256File(o.input);
    if (!sha.ok()) return Fail(sha.status());
    const std::filesystem::path dir(o.out_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Fail(absl::PermissionDeniedError(absl::StrCat("cannot create --out-dir '", o.out_dir, "': ", ec.message())));

    const int64_t single = plan->single_machine_tokens;
    nlohmann::ordered_json shards = nlohmann::ordered_json::array();
    for (int32_t k = 0; k < o.shards; ++k) {
        const ShardFigures& s = plan->plan.shards[k];
        std::string text;
        nlohmann::ordered_json shard_lines = nlohmann::ordered_json::array(), shard_ids = nlohmann::ordered_json::array();
        for (int32_t r : s.requests) {
            text += ShardLine(lines[r], line_no[r]);
            text += '\n';
            shard_lines.push_back(line_no[r]);
            shard_ids.push_back(nlohmann::ordered_json::parse(ids[r]));
        }
        if (absl::Status st = WriteFile(dir / ShardFile(k), text); !st.ok()) return Fail(st);
        if (s.requests.empty()) std::fprintf(stderr, "batch plan: %s has no requests\n", ShardFile(k).c_str());
        shards.push_back({{"file", ShardFile(k)},
                          {"requests", s.requests.size()},
                          {"estimated_work", s.work},
                          {"prompt_tokens_computed", s.prompt_tokens_computed},
                          {"prompt_tokens", s.prompt_tokens},
                          {"output_tokens", s.output_tokens},
                          {"lines", std::move(shard_lines)},
                          {"ids", std::move(shard_ids)}});
    }
    // The figures first, the shards with their long per-line lists last.
    nlohmann::ordered_json manifest = {
        {"format", kManifestFormat},
        {"input", o.input},
        {"input_sha256", *sha},
        {"input_lines", physical},
        {"requests", requests.size()},
        {"model", o.model},
        {"work_weights", {{"prefill_token", po.prefill_weight}, {"decode_token", po.decode_weight},
                          {"expected_output", "max_tokens"}}},
        {"grouping", {{"min_prefix_tokens", o.kv_block}, {"tolerance", o.tolerance}}},
        {"totals",
         {{"prompt_tokens", plan->prompt_tokens},
          {"unique_prompt_tokens", plan->unique_prompt_tokens},
          {"single_machine_prompt_tokens_computed", single},
          {"prompt_tokens_computed", plan->plan.prompt_tokens_computed},
          {"vs_single_machine", single > 0 ? double(plan->plan.prompt_tokens_computed) / double(single) : 1.0},
          {"output_tokens", plan->output_tokens},
          {"groups", plan->groups},
          {"split_groups", plan->split_groups},
          {"cuts", plan->cuts},
          {"split_prefix_tokens", plan->split_prefix_tokens},
          {"work_max_over_mean", 1.0 + plan->plan.imbalance()}}},
        {"contrast", {{"contiguous", SplitJson(plan->contiguous, single)}, {"hashed", SplitJson(plan->hashed, single)}}},
        {"shards", std::move(shards)},
    };
    const std::string text = manifest.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (absl::Status st = WriteFile(dir / "manifest.json", text); !st.ok()) return Fail(st);
    std::fprintf(stderr, "batch plan: wrote %d shard files and %s\n", o.shards, (dir / "manifest.json").c_str());

    if (o.json) {
        nlohmann::ordered_json summary = manifest;
        for (auto& s : summary["shards"]) {
            s.erase("lines");
            s.erase("ids");
        }
        std::printf("%s\n", summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    std::printf("%zu requests from %s into %d shards (%s); %lld prompt tokens, %lld computed on one machine (BatchLLM)\n",
                requests.size(), o.input.c_str(), o.shards, o.out_dir.c_str(),
                static_cast<long long>(plan->prompt_tokens), static_cast<long long>(single));
    std::printf("%-6s %9s %16s %14s %14s %8s\n", "shard", "requests", "prompt computed", "output tokens", "est. work",
                "vs mean");
    for (int32_t k = 0; k < o.shards; ++k) {
        const ShardFigures& s = plan->plan.shards[k];
        std::printf("%-6d %9zu %16lld %14lld %14.0f %7.3fx\n", k, s.requests.size(),
                    static_cast<long long>(s.prompt_tokens_computed), static_cast<long long>(s.output_tokens), s.work,
                    plan->plan.mean_work > 0 ? s.work / plan->plan.mean_work : 1.0);
    }
    std::printf("%-11s %16s %18s %14s\n", "split", "prompt computed", "vs one machine", "max/mean work");
    for (const auto& [name, f] : {std::pair<const char*, const SplitFigures*>{"planner", &plan->plan},
                                  {"contiguous", &plan->contiguous}, {"hashed", &plan->hashed}}) {
        std::printf("%-11s %16lld %17.3fx %13.3fx\n", name, static_cast<long long>(f->prompt_tokens_computed),
                    single > 0 ? double(f->prompt_tokens_computed) / double(single) : 1.0, 1.0 + f->imbalance());
    }
    std::printf("%d of %d groups split over shards (+%lld prefix tokens); work = prompt tokens computed + %.2f x "
                "output tokens (max_tokens)\n",
                plan->split_groups, plan->groups, static_cast<long long>(plan->split_prefix_tokens), po.decode_weight);
    return 0;
}

// One result line of a shard's output.
struct Found {
    size_t file, line;   // index into --outputs, 1-based line number
    std::string text;
};

int RunMerge(const MergeOptions& o) {
    std::ifstream mf(o.manifest);
    if (!mf) return Fail(absl::NotFoundError(absl::StrCat("cannot open --manifest '", o.manifest, "'")));
    const nlohmann::json manifest = nlohmann::json::parse(mf, nullptr, false);
    if (manifest.is_discarded() || !manifest.is_object() || manifest.value("format", "") != kManifestFormat ||
        !manifest.contains("shards") || !manifest["shards"].is_array()) {
        return Fail(absl::InvalidArgumentError(
            absl::StrCat("--manifest '", o.manifest, "' is not a manifest of `prepack batch plan` (", kManifestFormat, ")")));
    }
    // Every planned request: its input line and id, in input order.
    std::vector<std::pair<size_t, std::string>> planned;
    for (const auto& s : manifest["shards"]) {
        const auto& lines = s.at("lines");
        const auto& ids = s.at("ids");
        if (!lines.is_array() || !ids.is_array() || lines.size() != ids.size()) {
            return Fail(absl::InvalidArgumentError(absl::StrCat("--manifest '", o.manifest, "': a shard's lines and ids differ")));
        }
        for (size_t i = 0; i < lines.size(); ++i) planned.emplace_back(lines[i].get<size_t>(), IdKey(ids[i]));
    }
    std::sort(planned.begin(), planned.end());
    std::map<std::string, size_t> index;   // id -> position in `planned`
    for (size_t i = 0; i < planned.size(); ++i) {
        if (!index.emplace(planned[i].second, i).second) {
            return Fail(absl::InvalidArgumentError(absl::StrCat("--manifest '", o.manifest, "': id ", planned[i].second,
                                                                " planned twice")));
        }
    }

    std::vector<std::vector<Found>> found(planned.size());
    std::vector<std::string> unknown;
    size_t cut = 0;
    for (size_t f = 0; f < o.outputs.size(); ++f) {
        std::ifstream in(o.outputs[f], std::ios::binary);
        if (!in) {
            // `prepack batch` writes no file for a shard with no requests;
            // had it results, their ids are reported missing below.
            std::fprintf(stderr, "batch merge: cannot open output '%s'; taken as empty\n", o.outputs[f].c_str());
            continue;
        }
        std::string line;
        for (size_t n = 1; std::getline(in, line); ++n) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
            if (j.is_discarded() || !j.is_object() || !j.contains("id")) {
                ++cut;   // cut short by a killed run: that request ran again
                std::fprintf(stderr, "batch merge: %s:%zu is not a result line; skipped\n", o.outputs[f].c_str(), n);
                continue;
            }
            const std::string key = IdKey(j["id"]);
            const auto it = index.find(key);
            if (it == index.end()) {
                unknown.push_back(absl::StrCat(o.outputs[f], ":", n, ": id ", key, " is not in the plan"));
                continue;
            }
            found[it->second].push_back({f, n, line});
        }
    }
    std::vector<std::string> missing, duplicate;
    for (size_t i = 0; i < planned.size(); ++i) {
        const auto& [line_number, key] = planned[i];
        if (found[i].empty()) missing.push_back(absl::StrCat("line ", line_number, " (id ", key, "): no result"));
        if (found[i].size() > 1) {
            std::string where;
            for (const Found& x : found[i]) absl::StrAppend(&where, where.empty() ? "" : ", ", o.outputs[x.file], ":", x.line);
            duplicate.push_back(absl::StrCat("line ", line_number, " (id ", key, "): ", found[i].size(), " results (", where, ")"));
        }
    }
    if (!missing.empty() || !duplicate.empty() || !unknown.empty()) {
        for (const auto* list : {&missing, &duplicate, &unknown}) {
            for (size_t i = 0; i < std::min(list->size(), kMaxReported); ++i) {
                std::fprintf(stderr, "prepack: %s\n", (*list)[i].c_str());
            }
            if (list->size() > kMaxReported) std::fprintf(stderr, "prepack: ... and %zu more\n", list->size() - kMaxReported);
        }
        std::fprintf(stderr, "prepack: %zu missing, %zu duplicate, %zu unknown of %zu planned results; nothing written\n",
                     missing.size(), duplicate.size(), unknown.size(), planned.size());
        return 1;
    }
    std::string text;
    size_t errors = 0;
    for (size_t i = 0; i < planned.size(); ++i) {
        const std::string& t = found[i][0].text;
        text += t;
        if (text.back() == '\r') text.pop_back();
        text += '\n';
        errors += nlohmann::json::parse(t, nullptr, false).contains("error");
    }
    if (absl::Status st = WriteFile(o.output, text); !st.ok()) return Fail(st);
    const nlohmann::json summary = {{"results", planned.size()}, {"with_error", errors}, {"cut_lines_skipped", cut},
                                    {"output", o.output}};
    if (o.json) {
        std::printf("%s\n", summary.dump().c_str());
    } else {
        std::printf("merged %zu results in input order into %s (%zu with an \"error\")\n", planned.size(),
                    o.output.c_str(), errors);
    }
    return 0;
}

}  // namespace

void AddBatchPlan(CLI::App& batch, int* exit_code) {
    auto* o = new PlanOptions();
    CLI::App* cmd = batch.add_subcommand(
        "plan", "Split a batch file over N machines by shared prefix: D/shard-NNN.jsonl and D/manifest.json");
    cmd->add_option("--model", o->model, "GGUF file or synthetic:NAME (only its vocabulary is read, to tokenize)")
        ->required();
    cmd->add_option("--input", o->input, "requests, one JSON object per line (as for `prepack batch`)")->required();
    cmd->add_option("--out-dir", o->out_dir, "where the shard files and manifest.json go (created)")->required();
    cmd->add_option("--shards", o->shards, "number of shards (machines)")->required()->check(CLI::Range(1, 4096));
    cmd->add_option("--kv-block", o->kv_block,
                    "shortest prefix worth sharing, in tokens: the KV block size `prepack batch` will run with")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    cmd->add_option("--decode-weight", o->decode_weight,
                    "work of one output token in prefill tokens (balancing: prompt tokens computed + this x max_tokens)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e6));
    cmd->add_option("--tolerance", o->tolerance,
                    "split a group over shards when placing it whole would leave a shard this fraction over its share")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 10.0));
    cmd->add_flag("--json", o->json, "print the manifest's figures as JSON (without the per-line lists)");
    cmd->callback([o, exit_code]() { *exit_code = RunPlan(*o); });
}

void AddBatchMerge(CLI::App& batch, int* exit_code) {
    auto* o = new MergeOptions();
    CLI::App* cmd = batch.add_subcommand(
        "merge", "Merge the shards' results into one file, one result per input line in input order");
    cmd->add_option("--manifest", o->manifest, "manifest.json written by `prepack batch plan`")->required();
    cmd->add_option("--outputs", o->outputs, "the shards' result files (`prepack batch --output`), any order")
        ->required();
    cmd->add_option("--output", o->output, "the merged results (written only when every line has exactly one)")
        ->required();
    cmd->add_flag("--json", o->json, "print the summary as JSON");
    cmd->callback([o, exit_code]() { *exit_code = RunMerge(*o); });
}

}  // namespace prepack::cli
