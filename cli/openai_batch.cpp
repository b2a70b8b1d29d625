#include "cli/openai_batch.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "cli/batch_io.h"
#include "cli/batch_runner.h"
#include "cli/common.h"
#include "cli/openai_requests.h"
#include "openai/batch.h"

namespace prepack::cli {
namespace {

using openai::Json;

struct Line {
    size_t      number = 0;
    std::string text;
};

std::vector<Line> ReadLines(std::ifstream& in) {
    std::vector<Line> lines;
    std::string text;
    for (size_t n = 1; std::getline(in, text); ++n) {
        if (text.find_first_not_of(" \t\r") != std::string::npos) lines.push_back({n, text});
    }
    return lines;
}

// What an earlier run already answered: the custom_ids of its output lines,
// and the errors of lines that had none (not JSON, no custom_id), which are
// known by their message ("line 7: ...").
struct Answered {
    std::set<std::string> ids;
    std::set<std::string> anonymous_errors;

    bool Has(const Json& output_line) const {
        return output_line["custom_id"].is_string() ? ids.count(output_line["custom_id"].get<std::string>()) > 0
                                                    : anonymous_errors.count(ErrorKey(output_line)) > 0;
    }
    static std::string ErrorKey(const Json& output_line) { return output_line["error"]["message"].dump(); }
};

Answered ReadAnswered(const std::string& path) {
    Answered a;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        // A line cut short by a kill is not an answer: that request runs again.
        const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) continue;
        const auto id = j.find("custom_id");
        if (id != j.end() && id->is_string()) {
            a.ids.insert(id->get<std::string>());
        } else if (const auto e = j.find("error"); e != j.end() && e->is_object() && e->contains("message")) {
            a.anonymous_errors.insert(Answered::ErrorKey(j));
        }
    }
    return a;
}

// The custom_id a line names, if it is JSON with one (nothing else checked).
std::optional<std::string> CustomId(const std::string& text) {
    const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    const auto id = j.find("custom_id");
    if (id == j.end() || !id->is_string()) return std::nullopt;
    return id->get<std::string>();
}

uint64_t RandomSeed() {
    static std::mt19937_64 rng{std::random_device{}()};
    return rng();
}

// The lines a rerun still has to answer.
std::vector<const Line*> LinesToRun(const std::vector<Line>& lines, const Answered& answered) {
    std::vector<const Line*> todo;
    for (const Line& l : lines) {
        const std::optional<std::string> id = CustomId(l.text);
        // A line without a custom_id is an error whatever the model (its
        // body is never read), known by its message.
        bool done = id && answered.ids.count(*id) > 0;
        if (!id) {
            const openai::BatchEntry e = openai::ParseBatchLine(l.text, l.number, {});
            done = answered.Has(openai::BatchErrorLine(e, e.status, /*body_error=*/false));
        }
        if (!done) todo.push_back(&l);
    }
    return todo;
}

// The output file, appended to line by line (each flushed: a kill loses
// nothing written), and how many of the lines written were errors.
struct Output {
    std::ofstream file;
    size_t        failed = 0;

    void Write(const Json& line) {
        if (!line["error"].is_null()) ++failed;
        file << openai::Dump(line) << '\n';
        file.flush();
    }
};

// The lines that run: each with its engine requests.
struct Runnable {
    std::vector<openai::BatchLineRun> runs;
    std::vector<EngineRequests>       requests;   // per run
};

// Parses the lines to run into engine requests, and answers the ones that
// cannot run (unless an earlier run did): a bad line, a body the HTTP API
// would refuse, a custom_id an earlier line has.
Runnable ParseLines(const std::vector<Line>& lines, const std::vector<const Line*>& todo, const Answered& answered,
                    const std::string& model_id, const Engine& engine, Output* out) {
    const openai::BatchModel model{model_id, engine.model().config().vocab_size, openai::kMaxChoices};
    std::map<std::string, size_t> first_line;   // custom_id -> the line that has it
    for (const Line& l : lines) {
        if (const auto id = CustomId(l.text)) first_line.emplace(*id, l.number);
    }
    Runnable r;
    for (const Line* l : todo) {
        openai::BatchEntry e = openai::ParseBatchLine(l->text, l->number, model);
        if (e.custom_id && first_line.at(*e.custom_id) != l->number) {
            e.status = absl::InvalidArgumentError(absl::StrCat("custom_id: \"", *e.custom_id, "\" is also line ",
                                                               first_line.at(*e.custom_id),
                                                               "'s (custom_ids name one line each)"));
            e.body_error = false;
            e.custom_id.reset();   // the output line of that id is the other line's
        }
        absl::StatusOr<EngineRequests> requests =
            e.status.ok() ? ToEngineRequests(e.request, engine, e.request.seed.value_or(RandomSeed()))
                          : absl::StatusOr<EngineRequests>(e.status);
        if (!requests.ok()) {
            const Json line = openai::BatchErrorLine(e, requests.status(), e.body_error || e.status.ok());
            if (!answered.Has(line)) out->Write(line);
            continue;
        }
        r.runs.emplace_back(std::move(e));
        r.runs.back().Echo(requests->echo);
        r.requests.push_back(std::move(*requests));
    }
    return r;
}

// Runs every choice of every line as one engine batch (so BatchLLM's prefix
// tree spans the whole file) and writes each line's output line once its
// choices are done.
void RunLines(Engine& engine, Runnable& lines, const std::string& model_id, Output* out) {
    std::vector<Request> requests;
    std::vector<std::pair<size_t, size_t>> owner;   // request -> (line, choice)
    for (size_t r = 0; r < lines.runs.size(); ++r) {
        for (size_t k = 0; k < lines.requests[r].requests.size(); ++k) {
            requests.push_back(std::move(lines.requests[r].requests[k]));
            owner.emplace_back(r, k);
        }
    }
    openai::Pieces pieces([&](const std::vector<int32_t>& ids) { return engine.model().tokenizer().Decode(ids); });
    RunBatch(
        engine, std::move(requests),
        [&](size_t i, BatchResult result) {
            const auto [r, k] = owner[i];
            const absl::Status st = EndChoice(result, &lines.runs[r].choice(k));
            // Out of KV here means the prompt can never fit the budget: no retry helps (400, as prepackd says).
            const int http_status = st.code() == absl::StatusCode::kResourceExhausted ? 400 : 0;
            if (std::optional<Json> line = lines.runs[r].End(st, model_id, pieces, http_status)) out->Write(*line);
        },
        /*show_progress=*/true,
        [&](size_t i, const Event& e) {
            const auto [r, k] = owner[i];
            const openai::ApiRequest& request = lines.runs[r].entry().request;
            const int32_t first_token = lines.requests[r].first_token[k / static_cast<size_t>(request.n)];
            AddToken(request, e, first_token, &lines.runs[r].choice(k));
        });
}

}  // namespace

bool IsOpenAiBatchFile(const std::string& path) {
    std::ifstream in(path);
    std::string text;
    while (std::getline(in, text)) {
        const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (!j.is_discarded() && j.is_object()) return openai::IsBatchLine(j);
    }
    return false;
}

int RunOpenAiBatch(const OpenAiBatchOptions& o) {
    std::ifstream in(o.input);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot open --input '", o.input, "'")));
    const std::vector<Line> lines = ReadLines(in);
    const Answered answered = ReadAnswered(o.output);
    const std::vector<const Line*> todo = LinesToRun(lines, answered);
    std::fprintf(stderr, "batch: %zu OpenAI batch lines to run, %zu already in %s\n", todo.size(),
                 lines.size() - todo.size(), o.output.c_str());
    if (todo.empty()) return 0;

    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(o.engine);
    if (!engine.ok()) return Fail(engine.status());
    EndPartialLine(o.output);
    Output out{std::ofstream(o.output, std::ios::app)};
    if (!out.file) return Fail(absl::PermissionDeniedError(absl::StrCat("cannot write --output '", o.output, "'")));
    Runnable runnable = ParseLines(lines, todo, answered, o.model_id, **engine, &out);
    RunLines(**engine, runnable, o.model_id, &out);
    PrintBatchSummary((*engine)->Stats(), out.failed, "lines");
    return out.failed ? 1 : 0;
}

}  // namespace prepack::cli
