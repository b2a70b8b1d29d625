#include "http/openai_request.h"

#include <regex>
#include <utility>

#include "openai/json_text.h"

namespace prepackd::http {
namespace {

namespace openai = prepack::openai;

// ResponseFormat::Kind is sent as GrammarKind (and on as prepack_grammar_kind) by number.
using FormatKind = openai::ResponseFormat::Kind;
static_assert(int(FormatKind::kJsonObject) == prepack::v1::GRAMMAR_KIND_JSON_OBJECT &&
              int(FormatKind::kJsonSchema) == prepack::v1::GRAMMAR_KIND_JSON_SCHEMA &&
              int(FormatKind::kRegex) == prepack::v1::GRAMMAR_KIND_REGEX &&
              int(FormatKind::kGbnf) == prepack::v1::GRAMMAR_KIND_GBNF);
static_assert(int(prepack::v1::GRAMMAR_KIND_JSON_OBJECT) == int(PREPACK_GRAMMAR_JSON_OBJECT) &&
              int(prepack::v1::GRAMMAR_KIND_JSON_SCHEMA) == int(PREPACK_GRAMMAR_JSON_SCHEMA) &&
              int(prepack::v1::GRAMMAR_KIND_REGEX) == int(PREPACK_GRAMMAR_REGEX) &&
              int(prepack::v1::GRAMMAR_KIND_GBNF) == int(PREPACK_GRAMMAR_GBNF));

// ToolChoice::Mode is sent as ToolChoiceMode (and on as prepack_tool_choice) by number.
using ToolMode = openai::ToolChoice::Mode;
static_assert(int(ToolMode::kNone) == prepack::v1::TOOL_CHOICE_MODE_NONE &&
              int(ToolMode::kAuto) == prepack::v1::TOOL_CHOICE_MODE_AUTO &&
              int(ToolMode::kRequired) == prepack::v1::TOOL_CHOICE_MODE_REQUIRED &&
              int(ToolMode::kFunction) == prepack::v1::TOOL_CHOICE_MODE_FUNCTION);

// What every prompt of a request shares: sampling, stop strings, log-probs, LazyLLM.
prepack::v1::GenerateRequest BaseRequest(const openai::ApiRequest& r) {
    prepack::v1::GenerateRequest g;
    prepack::v1::SamplingParams* s = g.mutable_sampling();
    const openai::Sampling& in = r.sampling;
    if (in.max_tokens) s->set_max_tokens(*in.max_tokens);
    s->set_temperature(in.temperature);
    if (in.top_p) s->set_top_p(*in.top_p);
    if (in.top_k) s->set_top_k(*in.top_k);
    if (in.min_p) s->set_min_p(*in.min_p);
    if (in.repetition_penalty) s->set_repetition_penalty(*in.repetition_penalty);
    s->set_ignore_eos(in.ignore_eos);
    for (const std::string& stop : in.stop) s->add_stop(stop);
    prepack::v1::LazyPruning* lp = g.mutable_lazy();
    lp->set_enabled(r.lazy.enabled);
    if (r.lazy.schedule) lp->set_schedule(*r.lazy.schedule);
    if (r.lazy.keep_ratio) lp->set_keep_ratio(*r.lazy.keep_ratio);
    if (r.lazy.revive_limit) lp->set_revive_limit(*r.lazy.revive_limit);
    g.set_logprobs(r.logprobs);
    g.set_top_logprobs(r.top_logprobs);
    // echo + logprobs: the prompt's tokens scored too (computed in the same
    // prefill; the request then shares no prefix KV, as it needs every row).
    if (r.scores_prompt()) g.set_prompt_logprobs(r.top_logprobs);
    if (r.response_format.active()) {
        // ResponseFormat::Kind and GrammarKind share their numbers (openai/request.h).
        prepack::v1::StructuredOutput* so = g.mutable_structured_output();
        so->set_kind(static_cast<prepack::v1::GrammarKind>(r.response_format.kind));
        so->set_text(r.response_format.text);
    }
    if (r.api == Api::kChat && r.chat.tool_choice.active()) {
        prepack::v1::ToolChoice* tc = g.mutable_tool_choice();
        tc->set_mode(static_cast<prepack::v1::ToolChoiceMode>(r.chat.tool_choice.mode));
        tc->set_function(r.chat.tool_choice.function);
        tc->set_parallel_tool_calls(r.chat.tool_choice.parallel);
    }
    return g;
}

}  // namespace

grpc::Status FromAbsl(const absl::Status& s) {
    if (s.ok()) return grpc::Status::OK;
    return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status ParseBody(std::string_view body, Json* out) { return FromAbsl(openai::ParseObject(body, "body", out)); }

grpc::Status CheckModel(const Json& body, const std::string& served_id) {
    return FromAbsl(openai::CheckModel(body, served_id));
}

prepack::v1::Conversation ToConversation(const openai::Chat& chat) {
    prepack::v1::Conversation c;
    for (const openai::Message& m : chat.messages) {
        prepack::v1::ChatMessage* out = c.add_messages();
        out->set_role(m.role);
        if (m.content) out->set_content(*m.content);
        for (const std::string& part : m.content_parts) out->add_content_parts(part);
        out->set_name(m.name);
        out->set_tool_call_id(m.tool_call_id);
        for (const openai::ToolCall& call : m.tool_calls) {
            prepack::v1::ToolCall* tc = out->add_tool_calls();
            tc->set_id(call.id);
            tc->set_name(call.name);
            tc->set_arguments_json(call.arguments);
        }
    }
    c.set_tools_json(chat.tools_json);
    c.set_chat_template_kwargs_json(chat.kwargs_json);
    if (chat.add_generation_prompt) c.set_add_generation_prompt(*chat.add_generation_prompt);
    return c;
}

void BuildGenerateRequests(ApiRequest* r) {
    const prepack::v1::GenerateRequest base = BaseRequest(*r);
    r->requests.clear();
    if (r->api == Api::kChat) {
        r->requests.push_back(base);
        *r->requests.back().mutable_chat() = ToConversation(r->chat);
        return;
    }
    for (const openai::Prompt& p : r->prompts) {
        prepack::v1::GenerateRequest g = base;
        if (p.token_ids) {
            g.mutable_token_ids()->mutable_ids()->Add(p.ids.begin(), p.ids.end());
        } else {
            g.set_text(p.text);
        }
        r->requests.push_back(std::move(g));
    }
}

grpc::Status ParseApiRequest(Api api, const Json& body, const prepack_model_desc& model, int max_queue,
                             ApiRequest* out) {
    const absl::Status s = api == Api::kChat ? openai::ParseChat(body, max_queue, out)
                                             : openai::ParseCompletion(body, model.vocab_size, max_queue, out);
    if (!s.ok()) return FromAbsl(s);
    BuildGenerateRequests(out);
    return grpc::Status::OK;
}

grpc::Status WithJsonNames(const grpc::Status& status, Api api, int prompt_index, const std::string& grammar_field) {
    if (status.ok()) return status;
    std::string m = status.error_message();
    // The structured output's errors: the field the body gave it in, once
    // for all prompts (they share it).
    for (const std::string from : {"structured_output.text", "structured_output.kind", "structured_output"}) {
        if (!grammar_field.empty() && m.rfind(from, 0) == 0) {
            return grpc::Status(status.error_code(), grammar_field + m.substr(from.size()));
        }
    }
    // Longest names first: each rule applies to what the ones before left.
    static const std::vector<std::pair<std::regex, std::string>> kChat = {
        {std::regex(R"(messages\.messages)"), "messages"},
        {std::regex(R"(messages\.tools_json)"), "tools"},
        {std::regex(R"(messages\.chat_template_kwargs_json)"), "chat_template_kwargs"},
        {std::regex(R"(\.content_parts\[)"), ".content["},
        {std::regex(R"((tool_calls\[\d+\])\.arguments_json)"), "$1.function.arguments"},
        {std::regex(R"((tool_calls\[\d+\])\.name)"), "$1.function.name"},
        {std::regex(R"(^tool_choice\.function\b)"), "tool_choice.function.name"},
        // The engine's words for a tool it cannot plan for: the field first.
        {std::regex(R"(^(tools\[\d+\]\.function\.parameters) \(tool ("[^"]*")\): )"), "$1: tool $2: "},
        {std::regex(R"(^tool_choice\.mode\b)"), "tool_choice"},
    };
    static const std::vector<std::pair<std::regex, std::string>> kCompletions = {
        {std::regex(R"(^text\b)"), "prompt"},
        {std::regex(R"(token_ids\.ids\[)"), "prompt["},
        {std::regex(R"(token_ids\.ids)"), "prompt"},
        {std::regex(R"(^top_logprobs\b)"), "logprobs"},
    };
    static const std::vector<std::pair<std::regex, std::string>> kBoth = {
        {std::regex(R"(sampling\.)"), ""},
        {std::regex(R"(lazy\.keep_ratio)"), "lazy_keep_ratio"},
        {std::regex(R"(lazy\.revive_limit)"), "lazy_revive_limit"},
        {std::regex(R"(lazy\.schedule)"), "lazy_schedule"},
    };
    for (const auto& [re, to] : api == Api::kChat ? kChat : kCompletions) m = std::regex_replace(m, re, to);
    for (const auto& [re, to] : kBoth) m = std::regex_replace(m, re, to);
    if (prompt_index >= 0) m = "prompt[" + std::to_string(prompt_index) + "]: " + m;
    return grpc::Status(status.error_code(), m);
}

grpc::Status ParseTokenize(const Json& body, const std::string& served_id, TokenizeRequest* out) {
    openai::TokenizeRequest r;
    if (absl::Status s = openai::ParseTokenize(body, served_id, &r); !s.ok()) return FromAbsl(s);
    out->chat = r.chat;
    out->text = std::move(r.text);
    out->add_special = r.add_special;
    out->parse_special = r.parse_special;
    if (r.chat) out->conversation = ToConversation(r.conversation);
    return grpc::Status::OK;
}

grpc::Status ParseDetokenize(const Json& body, const std::string& served_id, const prepack_model_desc& model,
                             std::vector<int32_t>* ids) {
    return FromAbsl(openai::ParseDetokenize(body, served_id, model.vocab_size, ids));
}

}  // namespace prepackd::http
