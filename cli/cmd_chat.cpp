// `prepack chat`: a conversation in the terminal with a chat model, through
// its own chat template. Each line read is a user turn; the answer streams
// back and joins the history. /reset starts over (keeping --system), /exit or
// end of input quits, Ctrl-C stops the answer being written (not the
// program). Works the same from a pipe, one turn per line. A reasoning
// model's thinking goes to stderr, its answer to stdout.
//
// Tools: --tools FILE (OpenAI's tools list, JSON) lets the model call them
// (--tool-choice, --no-parallel-tool-calls); an answer's calls are printed
// after its text as one JSON line, {"tool_calls": [{"id", "type":
// "function", "function": {"name", "arguments"}}]}, and join the history.
// A line "/tool TEXT" answers the last call with TEXT (a "tool" message),
// and the model answers that.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/grammar_flags.h"
#include "core/engine/engine.h"

namespace prepack::cli {
namespace {

struct ChatOptions {
    CommonOptions  common;
    std::string    system;
    std::string    chat_template_file;
    int32_t        max_tokens = 512;
    SamplingParams sampling;
    bool           no_thinking = false;
    std::string    policy = "lru";
    GrammarFlags   grammar;   // every answer follows it
    std::string    tools_file;        // --tools: OpenAI's tools list (JSON)
    std::string    tool_choice = "auto";
    bool           no_parallel_tool_calls = false;
};

// One answer: its text and the calls it made.
struct Answered {
    std::string                 text;
    std::vector<ParsedToolCall> calls;
};

absl::StatusOr<ToolChoice> ParseToolChoice(const std::string& text, bool parallel) {
    ToolChoice c;
    c.parallel = parallel;
    if (text == "none") {
        c.mode = ToolChoice::Mode::kNone;
    } else if (text == "auto") {
        c.mode = ToolChoice::Mode::kAuto;
    } else if (text == "required") {
        c.mode = ToolChoice::Mode::kRequired;
    } else if (!text.empty()) {
        c.mode = ToolChoice::Mode::kFunction;   // the engine checks the name against the tools
        c.function = text;
    } else {
        return absl::InvalidArgumentError("--tool-choice: give none, auto, required or a tool's name");
    }
    return c;
}

// --tools FILE: the list, checked as the engine will (names, schemas).
absl::StatusOr<nlohmann::ordered_json> ReadTools(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("--tools: '", path, "' cannot be read"));
    std::ostringstream text;
    text << in.rdbuf();
    nlohmann::ordered_json tools = nlohmann::ordered_json::parse(text.str(), nullptr, false);
    if (tools.is_discarded()) return absl::InvalidArgumentError(absl::StrCat("--tools: '", path, "' is not JSON"));
    if (tools.is_object() && tools.contains("tools")) tools = tools["tools"];   // a request body's field
    PP_RETURN_IF_ERROR(ParseFunctionTools(tools).status());
    return tools;
}

// The calls as OpenAI writes them in a response and in the history:
// arguments as JSON text (`as_text`) or, for a template, the object.
nlohmann::ordered_json CallsJson(const std::vector<ParsedToolCall>& calls, bool as_text) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const ParsedToolCall& c : calls) {
        nlohmann::ordered_json args = c.arguments;
        if (!as_text) {
            args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
            if (args.is_discarded()) args = c.arguments;   // a cut-off call: its text as it is
        }
        out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", args}}}});
    }
    return out;
}

std::atomic<bool> g_interrupted{false};

extern "C" void OnInterrupt(int) { g_interrupted.store(true); }

// SIGINT sets a flag instead of ending the process; no SA_RESTART, so a
// read waiting for the next line returns and the prompt is shown again.
void CatchInterrupt() {
    struct sigaction sa {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
}

// Streams one answer; returns its text (what was written before a Ctrl-C
// included) or the error that ended it.
absl::StatusOr<Answered> Answer(Engine& engine, const Conversation& conv, const ChatOptions& o,
                                const grammar::GrammarSpec& spec, const ToolChoice& choice) {
    Request r;
    r.chat = std::make_shared<const Conversation>(conv);
    r.max_tokens = o.max_tokens;
    r.sampling = o.sampling;
    r.grammar = spec;
    r.tool_choice = choice;
    PP_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, engine.Submit(std::move(r)));
    std::string answer;
    bool thinking = false;
    g_interrupted.store(false);
    Event e;
    while (true) {
        if (g_interrupted.exchange(false)) stream->Cancel();
        if (!stream->Next(&e, 100)) continue;
        if (e.kind == Event::Kind::kFinish) break;
        if (!e.reasoning.empty()) {
            if (!thinking) std::fputs("[thinking] ", stderr);
            thinking = true;
            std::fwrite(e.reasoning.data(), 1, e.reasoning.size(), stderr);
        }
        if (!e.text.empty()) {
            if (thinking) std::fputs("\n", stderr);
            thinking = false;
            std::fwrite(e.text.data(), 1, e.text.size(), stdout);
            std::fflush(stdout);
            answer += e.text;
        }
    }
    if (!answer.empty() || e.tool_calls.empty()) std::fputc('\n', stdout);
    if (!e.tool_calls.empty()) {
        const nlohmann::ordered_json calls = {{"tool_calls", CallsJson(e.tool_calls, true)}};
        std::printf("%s\n", calls.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    std::fflush(stdout);
    if (e.status.code() == absl::StatusCode::kCancelled) {
        std::fputs("(stopped)\n", stderr);
    } else if (!e.status.ok()) {
        return e.status;
    }
    return Answered{std::move(answer), std::move(e.tool_calls)};
}

int Run(const ChatOptions& o) {
    if (absl::Status s = ValidateSamplingParams(o.sampling); !s.ok()) return Fail(s);
    const absl::StatusOr<grammar::GrammarSpec> spec = GrammarSpecFromFlags(o.grammar);
    if (!spec.ok()) return Fail(spec.status());
    absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(o.policy);
    if (!policy.ok()) return Fail(policy.status());
    const absl::StatusOr<ToolChoice> choice = ParseToolChoice(o.tool_choice, !o.no_parallel_tool_calls);
    if (!choice.ok()) return Fail(choice.status());
    nlohmann::ordered_json tools;
    if (!o.tools_file.empty()) {
        absl::StatusOr<nlohmann::ordered_json> t = ReadTools(o.tools_file);
        if (!t.ok()) return Fail(t.status());
        tools = *std::move(t);
    }
    EngineOptions eo = EngineOptionsFrom(o.common, 1024, 1, *policy);
    eo.chat_template_file = o.chat_template_file;
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(eo);
    if (!engine.ok()) return Fail(engine.status());
    if ((*engine)->chat_templates().empty() && o.chat_template_file.empty()) {
        return Fail(absl::FailedPreconditionError(
            absl::StrCat(o.common.model, " has no chat template (tokenizer.chat_template): give one with "
                                         "--chat-template-file FILE")));
    }
    const bool tty = isatty(STDIN_FILENO) != 0;
    if (tty) std::fputs("prepack chat: type a message; /reset starts over, /exit quits, Ctrl-C stops an answer\n", stderr);
    CatchInterrupt();
    Conversation conv;
    conv.tools = tools;
    if (o.no_thinking) conv.kwargs["enable_thinking"] = false;
    std::string last_call_id;   // what a /tool line answers
    auto reset = [&] {
        last_call_id.clear();
        conv.messages = nlohmann::ordered_json::array();
        if (!o.system.empty()) conv.messages.push_back({{"role", "system"}, {"content", o.system}});
    };
    reset();
    std::string line;
    while (true) {
        if (tty) {
            std::fputs("> ", stderr);
            std::fflush(stderr);
        }
        if (!std::getline(std::cin, line)) {
            if (std::cin.eof()) break;
            std::cin.clear();   // a Ctrl-C while waiting for a line
            g_interrupted.store(false);
            if (tty) std::fputs("\n(/exit or Ctrl-D quits)\n", stderr);
            continue;
        }
        if (line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
            reset();
            if (tty) std::fputs("(conversation cleared)\n", stderr);
            continue;
        }
        if (line.empty()) continue;
        if (line.rfind("/tool ", 0) == 0) {
            if (last_call_id.empty()) {
                std::fputs("prepack: /tool answers a tool call, and the last answer made none\n", stderr);
                if (!tty) return 1;
                continue;
            }
            conv.messages.push_back({{"role", "tool"}, {"tool_call_id", last_call_id}, {"content", line.substr(6)}});
        } else {
            conv.messages.push_back({{"role", "user"}, {"content", line}});
        }
        absl::StatusOr<Answered> answer = Answer(**engine, conv, o, *spec, *choice);
        if (!answer.ok()) {
            conv.messages.erase(conv.messages.end() - 1);   // the turn did not happen
            std::fprintf(stderr, "prepack: %s\n", std::string(answer.status().message()).c_str());
            if (!tty) return 1;
            continue;
        }
        nlohmann::ordered_json turn = {{"role", "assistant"}, {"content", answer->text}};
        if (!answer->calls.empty()) turn["tool_calls"] = CallsJson(answer->calls, false);
        last_call_id = answer->calls.empty() ? "" : answer->calls.back().id;
        conv.messages.push_back(std::move(turn));
    }
    return 0;
}

}  // namespace

void AddChat(CLI::App& app, int* exit_code) {
    auto* o = new ChatOptions();   // lives as long as the process: CLI11 binds to it
    CLI::App* cmd = app.add_subcommand("chat", "Talk with a chat model through its own chat template");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--system", o->system, "a system message opening the conversation");
    cmd->add_option("--chat-template-file", o->chat_template_file,
                    "a Jinja chat template to use instead of the model's tokenizer.chat_template");
    cmd->add_option("--max-tokens", o->max_tokens, "tokens per answer at most")->capture_default_str()
        ->check(CLI::Range(1, 1 << 24));
    AddSamplingOptions(cmd, &o->sampling);
    cmd->add_flag("--no-thinking", o->no_thinking, "pass enable_thinking=false to the template (Qwen3 style)");
    AddGrammarFlags(cmd, &o->grammar);
    cmd->add_option("--tools", o->tools_file,
                    "a JSON file with OpenAI's tools list ([{\"type\": \"function\", \"function\": {...}}, ...]) "
                    "the model may call; calls print as a JSON line {\"tool_calls\": [...]}");
    cmd->add_option("--tool-choice", o->tool_choice, "none, auto, required, or the name of the tool to call")
        ->capture_default_str();
    cmd->add_flag("--no-parallel-tool-calls", o->no_parallel_tool_calls, "at most one call per answer");
    // lru: each turn's prompt begins with the last one's, so the history's
    // KV is reused and a turn computes only its new tokens. fcfs computes
    // every prompt whole: an answer then never depends on what was asked
    // before (the few new tokens of a cached prompt take the int8 decode
    // kernels, whose rounding differs from the prefill panels', and greedy
    // answers can part at near-ties).
    cmd->add_option("--policy", o->policy, "fcfs or lru (reuse the history's KV between turns)")
        ->capture_default_str();
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
