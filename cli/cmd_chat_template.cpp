// `prepack chat-template render`: a chat template rendered with a JSON
// object of its variables, printed exactly (or as JSON with the content
// spans and, given a model, the prompt ids), so a template can be checked
// against Python jinja2 / transformers byte for byte.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/chat/chat_template.h"

namespace prepack::cli {
namespace {

struct RenderOptions {
    std::string model;
    std::string template_file;
    std::string template_name;
    std::string input;
    std::string date;
    bool        json = false;
};

// "YYYY-MM-DD" as that day's noon, UTC.
absl::StatusOr<std::time_t> ParseDate(const std::string& date) {
    std::tm tm{};
    char rest = 0;
    if (std::sscanf(date.c_str(), "%4d-%2d-%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &rest) != 3 ||
        tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31) {
        return absl::InvalidArgumentError(absl::StrCat("--date '", date, "' is not YYYY-MM-DD"));
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_hour = 12;
    return timegm(&tm);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

int Run(const RenderOptions& o) {
    if (o.model.empty() == o.template_file.empty()) {
        return Fail(absl::InvalidArgumentError("give exactly one of --template FILE and --model M"));
    }
    std::time_t now = 0;
    if (!o.date.empty()) {
        absl::StatusOr<std::time_t> t = ParseDate(o.date);
        if (!t.ok()) return Fail(t.status());
        now = *t;
    }
    absl::StatusOr<std::string> input = o.input == "-" ? absl::StatusOr<std::string>(std::string(
                                                            std::istreambuf_iterator<char>(std::cin), {}))
                                                       : ReadFile(o.input);
    if (!input.ok()) return Fail(input.status());
    nlohmann::ordered_json context = nlohmann::ordered_json::parse(*input, nullptr, false);
    if (context.is_discarded() || !context.is_object()) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--input ", o.input, " is not a JSON object")));
    }
    std::optional<Tokenizer> tok;
    ChatTemplates templates;
    if (!o.model.empty()) {
        absl::StatusOr<Tokenizer> t = LoadTokenizer(o.model);
        if (!t.ok()) return Fail(t.status());
        tok = *std::move(t);
        templates = ChatTemplates::Load(*tok);
    } else {
        absl::StatusOr<ChatTemplates> t = ChatTemplates::LoadFile(o.template_file);
        if (!t.ok()) return Fail(t.status());
        templates = *std::move(t);
    }
    absl::StatusOr<jinja::Rendered> r =
        templates.RenderContext(tok ? &*tok : nullptr, std::move(context), o.template_name, now);
    if (!r.ok()) return Fail(r.status());
    if (!o.json) {
        std::fwrite(r->text.data(), 1, r->text.size(), stdout);
        return 0;
    }
    nlohmann::ordered_json j;
    j["text"] = r->text;
    j["content_spans"] = nlohmann::ordered_json::array();
    Tokenizer::ByteRanges plain;
    for (const jinja::Span& s : r->content) {
        j["content_spans"].push_back({s.begin, s.end});
        plain.emplace_back(s.begin, s.end);
    }
    if (tok) {
        absl::StatusOr<std::vector<int32_t>> ids = tok->EncodeMarkedUp(r->text, plain, true);
        if (!ids.ok()) return Fail(ids.status());
        j["ids"] = *ids;
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return 0;
}

}  // namespace

void AddChatTemplate(CLI::App& app, int* exit_code) {
    CLI::App* group = app.add_subcommand("chat-template", "Chat templates: render one to check it");
    group->require_subcommand(1);
    auto* o = new RenderOptions();   // lives as long as the process: CLI11 binds to it
    CLI::App* cmd = group->add_subcommand("render", "Print a chat template rendered with a JSON object of its variables");
    cmd->add_option("--template", o->template_file, "a Jinja template file");
    cmd->add_option("--model", o->model, "a GGUF file: render its own tokenizer.chat_template");
    cmd->add_option("--name", o->template_name, "one of the model's named templates (e.g. tool_use)");
    cmd->add_option("--input", o->input,
                    "JSON object of the variables: messages, add_generation_prompt, tools, bos_token, eos_token, "
                    "any kwargs ('-' = stdin)")
        ->required();
    cmd->add_option("--date", o->date, "pin strftime_now to 12:00:00 UTC on YYYY-MM-DD");
    cmd->add_flag("--json", o->json, "print {\"text\", \"content_spans\", \"ids\" (with --model)}");
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
