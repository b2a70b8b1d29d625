// `prepack chat`: a conversation in the terminal with a chat model, through
// its own chat template. Each line read is a user turn; the answer streams
// back and joins the history. /reset starts over (keeping --system), /exit or
// end of input quits, Ctrl-C stops the answer being written (not the
// program). Works the same from a pipe, one turn per line. A reasoning
// model's thinking goes to stderr, its answer to stdout.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
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
};

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
absl::StatusOr<std::string> Answer(Engine& engine, const Conversation& conv, const ChatOptions& o,
                                   const grammar::GrammarSpec& spec) {
    Request r;
    r.chat = std::make_shared<const Conversation>(conv);
    r.max_tokens = o.max_tokens;
    r.sampling = o.sampling;
    r.grammar = spec;
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
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (e.status.code() == absl::StatusCode::kCancelled) {
        std::fputs("(stopped)\n", stderr);
    } else if (!e.status.ok()) {
        return e.status;
    }
    return answer;
}

int Run(const ChatOptions& o) {
    if (absl::Status s = ValidateSamplingParams(o.sampling); !s.ok()) return Fail(s);
    const absl::StatusOr<grammar::GrammarSpec> spec = GrammarSpecFromFlags(o.grammar);
    if (!spec.ok()) return Fail(spec.status());
    absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(o.policy);
    if (!policy.ok()) return Fail(policy.status());
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
    if (o.no_thinking) conv.kwargs["enable_thinking"] = false;
    auto reset = [&] {
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
        conv.messages.push_back({{"role", "user"}, {"content", line}});
        absl::StatusOr<std::string> answer = Answer(**engine, conv, o, *spec);
        if (!answer.ok()) {
            conv.messages.erase(conv.messages.end() - 1);   // the turn did not happen
            std::fprintf(stderr, "prepack: %s\n", std::string(answer.status().message()).c_str());
            if (!tty) return 1;
            continue;
        }
        conv.messages.push_back({{"role", "assistant"}, {"content", *answer}});
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
