#include "cli/openai_requests.h"

#include "core/grammar/grammar_spec.h"
#include "openai/json_text.h"

namespace prepack::cli {
namespace {

using openai::Json;

// ResponseFormat::Kind becomes GrammarSpec::Kind by number.
using FormatKind = openai::ResponseFormat::Kind;
using SpecKind = grammar::GrammarSpec::Kind;
static_assert(int(FormatKind::kText) == int(SpecKind::kNone) &&
              int(FormatKind::kJsonObject) == int(SpecKind::kJsonObject) &&
              int(FormatKind::kJsonSchema) == int(SpecKind::kJsonSchema) &&
              int(FormatKind::kRegex) == int(SpecKind::kRegex) && int(FormatKind::kGbnf) == int(SpecKind::kGbnf));

// `text` (a JSON value's text the parser took as a string) parsed.
absl::StatusOr<Json> ParseJsonField(const std::string& text, const std::string& field) {
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return absl::InvalidArgumentError(field + ": not valid JSON");
    return j;
}

// A message in the shape chat templates read (transformers'): content parts
// as text parts, tool calls with their arguments as a mapping.
absl::StatusOr<Json> TemplateMessage(const openai::Message& m, size_t i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    Json out = Json::object();
    out["role"] = m.role;
    if (!m.content_parts.empty()) {
        Json parts = Json::array();
        for (const std::string& p : m.content_parts) parts.push_back(Json{{"type", "text"}, {"text", p}});
        out["content"] = std::move(parts);
    } else {
        out["content"] = m.content ? Json(*m.content) : Json(nullptr);
    }
    if (!m.name.empty()) out["name"] = m.name;
    if (!m.tool_calls.empty()) {
        Json calls = Json::array();
        for (size_t j = 0; j < m.tool_calls.size(); ++j) {
            const openai::ToolCall& tc = m.tool_calls[j];
            const std::string field = at + ".tool_calls[" + std::to_string(j) + "].function.arguments";
            PP_ASSIGN_OR_RETURN(Json arguments, ParseJsonField(tc.arguments, field));
            if (!arguments.is_object()) {
                return absl::InvalidArgumentError(field + ": must be a JSON object (templates read the arguments "
                                                          "as a mapping), got " + arguments.type_name());
            }
            // The keys in the order prepackd's C ABI requests have them (a template's tojson shows it).
            Json call = Json::object();
            if (!tc.id.empty()) call["id"] = tc.id;
            call["type"] = "function";
            call["function"] = {{"name", tc.name}, {"arguments", std::move(arguments)}};
            calls.push_back(std::move(call));
        }
        out["tool_calls"] = std::move(calls);
    }
    if (!m.tool_call_id.empty()) out["tool_call_id"] = m.tool_call_id;
    return out;
}

absl::StatusOr<std::shared_ptr<const Conversation>> ToConversation(const openai::Chat& chat) {
    auto c = std::make_shared<Conversation>();
    for (size_t i = 0; i < chat.messages.size(); ++i) {
        PP_ASSIGN_OR_RETURN(Json m, TemplateMessage(chat.messages[i], i));
        c->messages.push_back(std::move(m));
    }
    if (!chat.tools_json.empty()) {
        PP_ASSIGN_OR_RETURN(c->tools, ParseJsonField(chat.tools_json, "tools"));
    }
    if (!chat.kwargs_json.empty()) {
        PP_ASSIGN_OR_RETURN(c->kwargs, ParseJsonField(chat.kwargs_json, "chat_template_kwargs"));
    }
    c->add_generation_prompt = chat.add_generation_prompt.value_or(true);
    PP_RETURN_IF_ERROR(ValidateConversation(*c));
    return std::shared_ptr<const Conversation>(std::move(c));
}

// ToolChoice::Mode of the openai library and of the engine share their numbers.
using ApiToolMode = openai::ToolChoice::Mode;
using EngineToolMode = ToolChoice::Mode;
static_assert(int(ApiToolMode::kNone) == int(EngineToolMode::kNone) &&
              int(ApiToolMode::kAuto) == int(EngineToolMode::kAuto) &&
              int(ApiToolMode::kRequired) == int(EngineToolMode::kRequired) &&
              int(ApiToolMode::kFunction) == int(EngineToolMode::kFunction));

// What every choice shares: sampling, stopping, log-probs, LazyLLM.
Request BaseRequest(const openai::ApiRequest& r) {
    Request q;
    const openai::Sampling& s = r.sampling;
    q.sampling.temperature = s.temperature;
    if (s.top_p) q.sampling.top_p = *s.top_p;
    if (s.top_k) q.sampling.top_k = *s.top_k;
    if (s.min_p) q.sampling.min_p = *s.min_p;
    if (s.repetition_penalty) q.sampling.repetition_penalty = *s.repetition_penalty;
    q.stop = s.stop;
    q.ignore_eos = s.ignore_eos;
    q.logprobs = r.top_logprobs;
    q.prompt_logprobs = r.scores_prompt() ? r.top_logprobs : -1;
    q.lazy = r.lazy.enabled;
    q.lazy_schedule = r.lazy.schedule.value_or("");
    if (r.lazy.keep_ratio) q.lazy_keep_ratio = *r.lazy.keep_ratio;
    if (r.lazy.revive_limit) q.lazy_revive_limit = *r.lazy.revive_limit;
    // ResponseFormat::Kind and GrammarSpec::Kind share their numbers (openai/request.h).
    q.grammar.kind = static_cast<grammar::GrammarSpec::Kind>(r.response_format.kind);
    q.grammar.text = r.response_format.text;
    // Tool calling (chat): kNone leaves the tools render-only.
    const openai::ToolChoice& tc = r.chat.tool_choice;
    q.tool_choice.mode = r.api == openai::Api::kChat ? static_cast<EngineToolMode>(tc.mode) : EngineToolMode::kNone;
    q.tool_choice.function = tc.function;
    q.tool_choice.parallel = tc.parallel;
    return q;
}

// The structured output's grammar built once, so that a bad one is refused
// naming the field that gave it, as prepackd's HTTP API refuses it (the
// engine builds it again, or finds it cached, when the request starts).
absl::Status CheckGrammar(const openai::ResponseFormat& format, const grammar::GrammarSpec& spec) {
    if (!spec.active()) return absl::OkStatus();
    const absl::Status s = grammar::BuildGrammar(spec).status();
    if (s.ok()) return s;
    return absl::Status(s.code(), format.field + ": " + std::string(s.message()));
}

// The prompt's ids, as the engine will see them (for its length).
absl::StatusOr<std::vector<int32_t>> PromptIds(const Request& q, const Engine& engine) {
    if (q.chat != nullptr) {
        PP_ASSIGN_OR_RETURN(ChatPrompt p, engine.RenderChat(*q.chat));
        return std::move(p.ids);
    }
    return ResolvePrompt(engine.model(), q.prompt, q.prompt_tokens, q.add_bos);
}

}  // namespace

absl::StatusOr<EngineRequests> ToEngineRequests(const openai::ApiRequest& r, const Engine& engine, uint64_t seed) {
    const int32_t context = engine.model().config().max_context;
    const bool chat = r.api == openai::Api::kChat;
    const bool several = r.prompt_count() > 1;
    EngineRequests out;
    PP_RETURN_IF_ERROR(CheckGrammar(r.response_format, BaseRequest(r).grammar));
    for (size_t p = 0; p < r.prompt_count(); ++p) {
        const std::string at = several ? "prompt[" + std::to_string(p) + "]: " : "";
        Request q = BaseRequest(r);
        if (chat) {
            PP_ASSIGN_OR_RETURN(q.chat, ToConversation(r.chat));
        } else if (r.prompts[p].token_ids) {
            q.prompt_tokens = r.prompts[p].ids;
        } else {
            q.prompt = r.prompts[p].text;
        }
        absl::StatusOr<std::vector<int32_t>> ids = PromptIds(q, engine);
        if (!ids.ok()) {
            const std::string field = chat ? "messages" : "prompt";
            // The missing template is no field's fault: its message names the ways to give one.
            if (ids.status().code() == absl::StatusCode::kFailedPrecondition) return ids.status();
            return absl::Status(ids.status().code(), at + field + ": " + std::string(ids.status().message()));
        }
        const int32_t n_prompt = static_cast<int32_t>(ids->size());
        if (!r.sampling.max_tokens) {
            if (n_prompt >= context) {
                return absl::OutOfRangeError(at + "messages: the prompt (rendered: " + std::to_string(n_prompt) +
                                             " tokens) leaves no room to generate within the context length (" +
                                             std::to_string(context) + ")");
            }
            q.max_tokens = context - n_prompt;
        } else if (int64_t{n_prompt} + *r.sampling.max_tokens > context) {
            return absl::OutOfRangeError(at + (chat ? "messages (rendered: " : "prompt (") + std::to_string(n_prompt) +
                                         " tokens) plus max_tokens (" + std::to_string(*r.sampling.max_tokens) +
                                         ") exceed the context length (" + std::to_string(context) + ")");
        } else {
            q.max_tokens = *r.sampling.max_tokens;
        }
        if (r.echo) {
            out.echo.push_back(r.prompts[p].token_ids ? openai::ToValidUtf8(engine.model().tokenizer().Decode(*ids))
                                                      : r.prompts[p].text);
        }
        out.first_token.push_back(ids->empty() ? 0 : ids->front());
        for (int c = 0; c < r.n; ++c) {
            out.requests.push_back(q);
            out.requests.back().sampling.seed = seed + out.requests.size() - 1;
        }
    }
    return out;
}

void AddToken(const openai::ApiRequest& r, const Event& e, int32_t first_token, openai::Choice* c) {
    c->reasoning += e.reasoning;
    // The calls, added up from their deltas (the same calls, ids included,
    // as the finish event's; BatchResult keeps only text).
    if (!e.tool_call_deltas.empty()) {
        std::vector<openai::ToolCallDelta> deltas;
        for (const ToolCallDelta& d : e.tool_call_deltas) deltas.push_back({d.index, d.id, d.name, d.arguments});
        openai::AddToolCallDeltas(deltas, &c->tool_calls);
    }
    if (!r.logprobs) return;
    if (r.scores_prompt() && c->logprobs.empty()) {
        std::vector<openai::TokenLogprob> scored;
        if (e.prompt_logprobs != nullptr) {
            for (const Event::PromptLogprob& p : *e.prompt_logprobs) scored.push_back({p.token, p.logprob, p.top});
        }
        c->logprobs = openai::EchoedPrompt(first_token, std::move(scored));
        c->prompt_logprobs = c->logprobs.size();
    }
    c->logprobs.push_back({e.token, e.logprob, e.top_logprobs});
}

absl::Status EndChoice(const BatchResult& result, openai::Choice* c) {
    if (!result.status.ok()) return result.status;
    c->text += result.text;
    c->finish_reason = result.finish_reason == FinishReason::kLength ? "length" : "stop";
    c->prompt_tokens = result.usage.prompt_tokens;
    c->completion_tokens = result.usage.completion_tokens;
    c->cached_tokens = result.usage.cached_prompt_tokens;
    c->reasoning_tokens = result.usage.reasoning_tokens;
    return absl::OkStatus();
}

}  // namespace prepack::cli
