#include "http/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <regex>
#include <set>

#include "request_builder.h"

namespace prepackd::http {
namespace {

grpc::Status Invalid(const std::string& field, const std::string& why) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

std::string Num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

const char* TypeName(const Json& v) {
    if (v.is_number_integer()) return "integer";
    if (v.is_number()) return "number";
    return v.type_name();
}

grpc::Status WrongType(const std::string& field, const char* want, const Json& v) {
    return Invalid(field, std::string("must be ") + want + ", got " + TypeName(v));
}

// The value of `key`, or null when absent or null (OpenAI's clients send
// null for "not given").
const Json* Get(const Json& o, const char* key) {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return nullptr;
    return &*it;
}

grpc::Status GetBool(const Json& o, const char* key, std::optional<bool>* out, const std::string& at = "") {
    const Json* v = Get(o, key);
    if (v == nullptr) return grpc::Status::OK;
    if (!v->is_boolean()) return WrongType(at + key, "a boolean", *v);
    *out = v->get<bool>();
    return grpc::Status::OK;
}

// An integer (a float with an integral value, 16.0, counts).
grpc::Status GetInt(const Json& o, const char* key, std::optional<int64_t>* out, const std::string& at = "") {
    const Json* v = Get(o, key);
    if (v == nullptr) return grpc::Status::OK;
    if (v->is_number_unsigned()) {
        const uint64_t u = v->get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return Invalid(at + key, "out of range");
        }
        *out = static_cast<int64_t>(u);
    } else if (v->is_number_integer()) {
        *out = v->get<int64_t>();
    } else if (v->is_number_float()) {
        const double d = v->get<double>();
        if (!(std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)) {
            return WrongType(at + key, "an integer", *v);
        }
        *out = static_cast<int64_t>(d);
    } else {
        return WrongType(at + key, "an integer", *v);
    }
    return grpc::Status::OK;
}

grpc::Status GetNumber(const Json& o, const char* key, std::optional<double>* out, const std::string& at = "") {
    const Json* v = Get(o, key);
    if (v == nullptr) return grpc::Status::OK;
    if (!v->is_number()) return WrongType(at + key, "a number", *v);
    *out = v->get<double>();
    return grpc::Status::OK;
}

grpc::Status GetString(const Json& o, const char* key, std::optional<std::string>* out, const std::string& at = "") {
    const Json* v = Get(o, key);
    if (v == nullptr) return grpc::Status::OK;
    if (!v->is_string()) return WrongType(at + key, "a string", *v);
    *out = v->get<std::string>();
    return grpc::Status::OK;
}

// Every key of `o` is one of `known`: a field nobody implements is refused,
// never ignored.
grpc::Status OnlyKnown(const Json& o, const std::set<std::string_view>& known, const std::string& at) {
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (known.count(it.key()) == 0) {
            return Invalid(at + it.key(), "unrecognized request argument (not implemented by prepackd)");
        }
    }
    return grpc::Status::OK;
}

#define PP_TRY(expr)                                        \
    do {                                                    \
        if (grpc::Status _s = (expr); !_s.ok()) return _s;  \
    } while (0)

// The fields both endpoints share, into `g` (the sampling of every prompt)
// and *out.
grpc::Status ParseCommon(const Json& b, Api api, ApiRequest* out, prepack::v1::GenerateRequest* g) {
    prepack::v1::SamplingParams* s = g->mutable_sampling();

    // max_tokens (and max_completion_tokens, its newer name on chat).
    std::optional<int64_t> max_tokens, max_completion_tokens;
    PP_TRY(GetInt(b, "max_tokens", &max_tokens));
    if (api == Api::kChat) PP_TRY(GetInt(b, "max_completion_tokens", &max_completion_tokens));
    if (max_tokens && max_completion_tokens && *max_tokens != *max_completion_tokens) {
        return Invalid("max_completion_tokens", "differs from max_tokens; set one of them");
    }
    const char* max_name = max_completion_tokens ? "max_completion_tokens" : "max_tokens";
    if (max_completion_tokens) max_tokens = max_completion_tokens;
    if (max_tokens) {
        if (*max_tokens < 1 || *max_tokens > std::numeric_limits<int32_t>::max()) {
            return Invalid(max_name, "must be >= 1, got " + std::to_string(*max_tokens));
        }
        s->set_max_tokens(static_cast<int32_t>(*max_tokens));
        out->max_tokens_set = true;
    } else if (api == Api::kCompletions) {
        s->set_max_tokens(16);   // OpenAI's default for completions
        out->max_tokens_set = true;
    }

    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    PP_TRY(GetNumber(b, "temperature", &temperature));
    if (temperature) {
        if (!(*temperature >= 0.0 && *temperature <= 2.0)) {
            return Invalid("temperature", "must be in [0, 2] (0 = greedy), got " + Num(*temperature));
        }
        s->set_temperature(static_cast<float>(*temperature));
    } else {
        s->set_temperature(1.0f);   // OpenAI's default
    }
    PP_TRY(GetNumber(b, "top_p", &top_p));
    if (top_p) {
        if (!(*top_p > 0.0 && *top_p <= 1.0)) return Invalid("top_p", "must be in (0, 1], got " + Num(*top_p));
        s->set_top_p(static_cast<float>(*top_p));
    }
    std::optional<int64_t> top_k;
    PP_TRY(GetInt(b, "top_k", &top_k));
    if (top_k) {
        if (*top_k < -1 || *top_k > std::numeric_limits<int32_t>::max()) {
            return Invalid("top_k", "must be >= 0 (0 or -1 = off), got " + std::to_string(*top_k));
        }
        s->set_top_k(*top_k < 0 ? 0 : static_cast<int32_t>(*top_k));
    }
    PP_TRY(GetNumber(b, "min_p", &min_p));
    if (min_p) {
        if (!(*min_p >= 0.0 && *min_p <= 1.0)) return Invalid("min_p", "must be in [0, 1], got " + Num(*min_p));
        s->set_min_p(static_cast<float>(*min_p));
    }
    PP_TRY(GetNumber(b, "repetition_penalty", &repetition_penalty));
    if (repetition_penalty) {
        if (!(*repetition_penalty > 0.0 && std::isfinite(*repetition_penalty))) {
            return Invalid("repetition_penalty", "must be > 0 (1 = off), got " + Num(*repetition_penalty));
        }
        s->set_repetition_penalty(static_cast<float>(*repetition_penalty));
    }
    for (const char* penalty : {"presence_penalty", "frequency_penalty"}) {
        std::optional<double> v;
        PP_TRY(GetNumber(b, penalty, &v));
        if (v && *v != 0.0) {
            return Invalid(penalty, "not implemented (only 0); repetition_penalty (prepack's extension) is");
        }
    }
    if (const Json* bias = Get(b, "logit_bias")) {
        if (!bias->is_object()) return WrongType("logit_bias", "an object", *bias);
        if (!bias->empty()) return Invalid("logit_bias", "not implemented");
    }
    const Json* seed = Get(b, "seed");
    if (seed != nullptr) {
        if (seed->is_number_unsigned()) {
            out->seed = seed->get<uint64_t>();
        } else if (seed->is_number_integer()) {
            out->seed = static_cast<uint64_t>(seed->get<int64_t>());
        } else {
            return WrongType("seed", "an integer", *seed);
        }
    }
    std::optional<bool> ignore_eos;
    PP_TRY(GetBool(b, "ignore_eos", &ignore_eos));
    s->set_ignore_eos(ignore_eos.value_or(false));

    // stop: a string or a list of strings.
    if (const Json* stop = Get(b, "stop")) {
        if (stop->is_string()) {
            s->add_stop(stop->get<std::string>());
        } else if (stop->is_array()) {
            for (size_t i = 0; i < stop->size(); ++i) {
                if (!(*stop)[i].is_string()) {
                    return WrongType("stop[" + std::to_string(i) + "]", "a string", (*stop)[i]);
                }
                s->add_stop((*stop)[i].get<std::string>());
            }
        } else {
            return WrongType("stop", "a string or a list of strings", *stop);
        }
    }

    std::optional<int64_t> n;
    PP_TRY(GetInt(b, "n", &n));
    if (n) {
        if (*n < 1 || *n > kMaxN) {
            return Invalid("n", "must be in [1, " + std::to_string(kMaxN) + "], got " + std::to_string(*n));
        }
        out->n = static_cast<int>(*n);
    }
    std::optional<bool> stream;
    PP_TRY(GetBool(b, "stream", &stream));
    out->stream = stream.value_or(false);
    if (const Json* so = Get(b, "stream_options")) {
        if (!so->is_object()) return WrongType("stream_options", "an object", *so);
        if (!out->stream) return Invalid("stream_options", "only allowed when stream is true");
        PP_TRY(OnlyKnown(*so, {"include_usage"}, "stream_options."));
        std::optional<bool> include_usage;
        PP_TRY(GetBool(*so, "include_usage", &include_usage, "stream_options."));
        out->include_usage = include_usage.value_or(false);
    }
    std::optional<std::string> user;
    PP_TRY(GetString(b, "user", &user));
    out->user = user.value_or("");

    // LazyLLM (prepack's extensions): lazy_schedule or lazy_keep_ratio imply lazy.
    std::optional<bool> lazy;
    std::optional<std::string> schedule;
    std::optional<double> keep_ratio;
    std::optional<int64_t> revive;
    PP_TRY(GetBool(b, "lazy", &lazy));
    PP_TRY(GetString(b, "lazy_schedule", &schedule));
    PP_TRY(GetNumber(b, "lazy_keep_ratio", &keep_ratio));
    PP_TRY(GetInt(b, "lazy_revive_limit", &revive));
    if (lazy.has_value() && !*lazy && (schedule || keep_ratio || revive)) {
        return Invalid("lazy", "is false but lazy_schedule, lazy_keep_ratio or lazy_revive_limit is set");
    }
    prepack::v1::LazyPruning* lp = g->mutable_lazy();
    lp->set_enabled(lazy.value_or(false) || schedule.has_value() || keep_ratio.has_value() || revive.has_value());
    if (schedule) lp->set_schedule(*schedule);
    if (keep_ratio) {
        if (!(*keep_ratio > 0.0 && *keep_ratio <= 1.0)) {
            return Invalid("lazy_keep_ratio", "must be in (0, 1], got " + Num(*keep_ratio));
        }
        lp->set_keep_ratio(static_cast<float>(*keep_ratio));
    }
    if (revive) {
        if (*revive < -1 || *revive > std::numeric_limits<int32_t>::max()) {
            return Invalid("lazy_revive_limit", "must be -1 (no bound), 0 (the default) or a count > 0, got " +
                                                    std::to_string(*revive));
        }
        lp->set_revive_limit(static_cast<int32_t>(*revive));
    }
    return grpc::Status::OK;
}

// Chat messages -> a Conversation.
grpc::Status ParseMessage(const Json& m, size_t i, prepack::v1::ChatMessage* out) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return WrongType(at, "an object", m);
    PP_TRY(OnlyKnown(m, {"role", "content", "name", "tool_calls", "tool_call_id", "refusal"}, at + "."));
    std::optional<std::string> role, name, tool_call_id;
    PP_TRY(GetString(m, "role", &role, at + "."));
    if (!role || role->empty()) {
        return Invalid(at + ".role", "required: \"system\", \"developer\", \"user\", \"assistant\" or \"tool\"");
    }
    static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
    if (kRoles.count(*role) == 0) {
        return Invalid(at + ".role",
                       "\"" + *role + "\" is not one of \"system\", \"developer\", \"user\", \"assistant\", \"tool\"");
    }
    out->set_role(*role);
    const Json* content = Get(m, "content");
    if (content == nullptr) {
        if (*role != "assistant") return Invalid(at + ".content", "required for a " + *role + " message");
    } else if (content->is_string()) {
        out->set_content(content->get<std::string>());
    } else if (content->is_array()) {
        for (size_t k = 0; k < content->size(); ++k) {
            const Json& part = (*content)[k];
            const std::string pat = at + ".content[" + std::to_string(k) + "]";
            if (!part.is_object()) return WrongType(pat, "an object", part);
            std::optional<std::string> type, text;
            PP_TRY(GetString(part, "type", &type, pat + "."));
            if (!type) return Invalid(pat + ".type", "required");
            if (*type != "text") {
                return Invalid(pat + ".type",
                               "\"" + *type + "\" parts are not supported (only \"text\": the model reads text)");
            }
            PP_TRY(OnlyKnown(part, {"type", "text"}, pat + "."));
            PP_TRY(GetString(part, "text", &text, pat + "."));
            if (!text) return Invalid(pat + ".text", "required");
            out->add_content_parts(*text);
        }
        if (content->empty()) out->set_content("");
    } else {
        return WrongType(at + ".content", "a string or a list of content parts", *content);
    }
    if (const Json* refusal = Get(m, "refusal")) {
        if (!refusal->is_string()) return WrongType(at + ".refusal", "a string", *refusal);
        return Invalid(at + ".refusal", "not supported: give the assistant's words as content");
    }
    PP_TRY(GetString(m, "name", &name, at + "."));
    if (name) out->set_name(*name);
    PP_TRY(GetString(m, "tool_call_id", &tool_call_id, at + "."));
    if (tool_call_id) out->set_tool_call_id(*tool_call_id);
    if (const Json* calls = Get(m, "tool_calls")) {
        if (!calls->is_array()) return WrongType(at + ".tool_calls", "a list", *calls);
        for (size_t j = 0; j < calls->size(); ++j) {
            const Json& c = (*calls)[j];
            const std::string cat = at + ".tool_calls[" + std::to_string(j) + "]";
            if (!c.is_object()) return WrongType(cat, "an object", c);
            PP_TRY(OnlyKnown(c, {"id", "type", "function"}, cat + "."));
            std::optional<std::string> id, type, fname, arguments;
            PP_TRY(GetString(c, "id", &id, cat + "."));
            PP_TRY(GetString(c, "type", &type, cat + "."));
            if (type && *type != "function") return Invalid(cat + ".type", "must be \"function\"");
            const Json* f = Get(c, "function");
            if (f == nullptr) return Invalid(cat + ".function", "required");
            if (!f->is_object()) return WrongType(cat + ".function", "an object", *f);
            PP_TRY(OnlyKnown(*f, {"name", "arguments"}, cat + ".function."));
            PP_TRY(GetString(*f, "name", &fname, cat + ".function."));
            if (!fname || fname->empty()) return Invalid(cat + ".function.name", "required");
            PP_TRY(GetString(*f, "arguments", &arguments, cat + ".function."));
            prepack::v1::ToolCall* tc = out->add_tool_calls();
            if (id) tc->set_id(*id);
            tc->set_name(*fname);
            tc->set_arguments_json(arguments.value_or("{}"));
        }
    }
    return grpc::Status::OK;
}

const std::set<std::string_view> kCommonFields = {
    "model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop", "presence_penalty",
    "frequency_penalty", "logit_bias", "seed", "user", "logprobs",
    // prepack's extensions
    "top_k", "min_p", "repetition_penalty", "ignore_eos", "lazy", "lazy_schedule", "lazy_keep_ratio",
    "lazy_revive_limit"};

std::set<std::string_view> With(std::set<std::string_view> base, std::initializer_list<std::string_view> more) {
    base.insert(more.begin(), more.end());
    return base;
}

grpc::Status CheckChoices(const ApiRequest& r, int max_queue) {
    const int limit = std::min(kMaxChoices, max_queue);
    if (r.choices() > limit) {
        return Invalid(r.prompts.size() > 1 ? "prompt" : "n",
                       std::to_string(r.prompts.size()) + " prompt(s) x n = " + std::to_string(r.choices()) +
                           " choices, more than one request may ask for (" + std::to_string(limit) +
                           "; each holds a slot of --max-queue)");
    }
    return grpc::Status::OK;
}

}  // namespace

grpc::Status ParseBody(std::string_view body, Json* out) {
    if (JsonNestingDepth(body) > kMaxJsonDepth) {
        return Invalid("body", "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    try {
        *out = Json::parse(body.begin(), body.end());
    } catch (const Json::parse_error& e) {
        const std::string what = e.what();
        const bool utf8 = what.find("UTF-8") != std::string::npos || what.find("utf-8") != std::string::npos;
        return Invalid("body", std::string(utf8 ? "invalid UTF-8" : "not valid JSON") + " (error at byte " +
                                   std::to_string(e.byte) + ")");
    }
    if (!out->is_object()) return WrongType("body", "a JSON object", *out);
    return grpc::Status::OK;
}

grpc::Status CheckModel(const Json& body, const std::string& served_id) {
    const Json* model = Get(body, "model");
    if (model == nullptr) return Invalid("model", "required (this server serves \"" + served_id + "\")");
    if (!model->is_string()) return WrongType("model", "a string", *model);
    const std::string name = model->get<std::string>();
    if (name != served_id) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            "model: \"" + name + "\" does not exist here; this server serves \"" + served_id +
                                "\" (GET /v1/models)");
    }
    return grpc::Status::OK;
}

grpc::Status ParseChat(const Json& b, const prepack_model_desc& /*model*/, int max_queue, ApiRequest* out) {
    out->api = Api::kChat;
    PP_TRY(OnlyKnown(b,
                     With(kCommonFields, {"messages", "max_completion_tokens", "top_logprobs", "response_format",
                                          "tools", "tool_choice", "parallel_tool_calls", "chat_template_kwargs",
                                          "add_generation_prompt"}),
                     ""));
    prepack::v1::GenerateRequest g;
    PP_TRY(ParseCommon(b, Api::kChat, out, &g));

    std::optional<bool> logprobs;
    std::optional<int64_t> top_logprobs;
    PP_TRY(GetBool(b, "logprobs", &logprobs));
    PP_TRY(GetInt(b, "top_logprobs", &top_logprobs));
    out->logprobs = logprobs.value_or(false);
    if (top_logprobs) {
        if (*top_logprobs < 0 || *top_logprobs > 20) {
            return Invalid("top_logprobs", "must be in [0, 20], got " + std::to_string(*top_logprobs));
        }
        if (*top_logprobs > 0 && !out->logprobs) return Invalid("top_logprobs", "needs logprobs: true");
        out->top_logprobs = static_cast<int>(*top_logprobs);
    }
    g.set_logprobs(out->logprobs);
    g.set_top_logprobs(out->top_logprobs);

    if (const Json* rf = Get(b, "response_format")) {
        if (!rf->is_object()) return WrongType("response_format", "an object", *rf);
        const Json* type = Get(*rf, "type");
        if (!(type != nullptr && *type == "text" && rf->size() == 1)) {
            return Invalid("response_format", "not implemented (only {\"type\": \"text\"}, the default)");
        }
    }
    prepack::v1::Conversation* c = g.mutable_chat();
    // Tools: rendered into the prompt by the template when given with
    // tool_choice "none" (the model sees them, as it does the calls in the
    // history); calling them is not implemented.
    const Json* tools = Get(b, "tools");
    std::string tool_choice = "auto";
    if (const Json* tc = Get(b, "tool_choice")) {
        if (tc->is_string()) {
            tool_choice = tc->get<std::string>();
        } else if (tc->is_object()) {
            tool_choice = "a named function";
        } else {
            return WrongType("tool_choice", "a string or an object", *tc);
        }
        if (tool_choice != "none" && tool_choice != "auto" && tool_choice != "required" && !tc->is_object()) {
            return Invalid("tool_choice", "must be \"none\", \"auto\", \"required\" or a named function");
        }
    }
    if (tools != nullptr) {
        if (!tools->is_array()) return WrongType("tools", "a list", *tools);
        if (!tools->empty() && tool_choice != "none") {
            const std::string got = Get(b, "tool_choice") ? "\"" + tool_choice + "\"" : "none, i.e. \"auto\"";
            return Invalid("tool_choice",
                           "tool calling is not implemented: tools are accepted with tool_choice \"none\" only (got " +
                               got + ")");
        }
        for (size_t k = 0; k < tools->size(); ++k) {
            if (!(*tools)[k].is_object()) {
                return WrongType("tools[" + std::to_string(k) + "]", "an object", (*tools)[k]);
            }
        }
        if (!tools->empty()) c->set_tools_json(tools->dump(-1, ' ', false, Json::error_handler_t::replace));
    } else if (tool_choice == "required" || tool_choice == "a named function") {
        return Invalid("tool_choice", "tool calling is not implemented");
    }
    if (const Json* ptc = Get(b, "parallel_tool_calls")) {
        if (!ptc->is_boolean()) return WrongType("parallel_tool_calls", "a boolean", *ptc);
    }
    if (const Json* kwargs = Get(b, "chat_template_kwargs")) {
        if (!kwargs->is_object()) return WrongType("chat_template_kwargs", "an object", *kwargs);
        c->set_chat_template_kwargs_json(kwargs->dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    std::optional<bool> add_generation_prompt;
    PP_TRY(GetBool(b, "add_generation_prompt", &add_generation_prompt));
    if (add_generation_prompt) c->set_add_generation_prompt(*add_generation_prompt);

    const Json* messages = Get(b, "messages");
    if (messages == nullptr) return Invalid("messages", "required");
    if (!messages->is_array()) return WrongType("messages", "a list", *messages);
    if (messages->empty()) return Invalid("messages", "must not be empty");
    for (size_t i = 0; i < messages->size(); ++i) PP_TRY(ParseMessage((*messages)[i], i, c->add_messages()));

    out->prompts.push_back(std::move(g));
    out->token_prompt.push_back(false);
    return CheckChoices(*out, max_queue);
}

grpc::Status ParseCompletion(const Json& b, const prepack_model_desc& model, int max_queue, ApiRequest* out) {
    out->api = Api::kCompletions;
    PP_TRY(OnlyKnown(b, With(kCommonFields, {"prompt", "echo", "suffix", "best_of"}), ""));
    prepack::v1::GenerateRequest g;
    PP_TRY(ParseCommon(b, Api::kCompletions, out, &g));

    std::optional<int64_t> logprobs;
    PP_TRY(GetInt(b, "logprobs", &logprobs));
    if (logprobs) {
        if (*logprobs < 0 || *logprobs > 20) {
            return Invalid("logprobs", "must be in [0, 20], got " + std::to_string(*logprobs));
        }
        out->logprobs = true;
        out->top_logprobs = static_cast<int>(*logprobs);
    }
    g.set_logprobs(out->logprobs);
    g.set_top_logprobs(out->top_logprobs);
    std::optional<bool> echo;
    PP_TRY(GetBool(b, "echo", &echo));
    out->echo = echo.value_or(false);
    if (out->echo && out->logprobs) {
        return Invalid("echo", "with logprobs is not implemented: the C ABI does not report the prompt's "
                               "log-probs (echo alone is)");
    }
    std::optional<std::string> suffix;
    PP_TRY(GetString(b, "suffix", &suffix));
    if (suffix && !suffix->empty()) return Invalid("suffix", "not implemented (insertion after the completion)");
    std::optional<int64_t> best_of;
    PP_TRY(GetInt(b, "best_of", &best_of));
    if (best_of && *best_of != out->n) {
        return Invalid("best_of", "not implemented (only equal to n: every choice is returned)");
    }

    // prompt: a string, a list of strings, token ids, or a list of token-id lists.
    const Json* prompt = Get(b, "prompt");
    if (prompt == nullptr) return Invalid("prompt", "required");
    auto add_text = [&](const Json& text) {
        prepack::v1::GenerateRequest r = g;
        r.set_text(text.get<std::string>());
        out->prompts.push_back(std::move(r));
        out->token_prompt.push_back(false);
    };
    auto add_ids = [&](const Json& ids, const std::string& at) -> grpc::Status {
        if (ids.empty()) return Invalid(at, "must not be empty");
        prepack::v1::GenerateRequest r = g;
        auto* t = r.mutable_token_ids()->mutable_ids();
        for (size_t k = 0; k < ids.size(); ++k) {
            const std::string kat = at + "[" + std::to_string(k) + "]";
            if (!ids[k].is_number_integer()) return WrongType(kat, "a token id (an integer)", ids[k]);
            const int64_t id = ids[k].get<int64_t>();
            if (id < 0 || id >= model.vocab_size) {
                return Invalid(kat, std::to_string(id) + " is outside the vocabulary [0, " +
                                        std::to_string(model.vocab_size) + ")");
            }
            t->Add(static_cast<int32_t>(id));
        }
        out->prompts.push_back(std::move(r));
        out->token_prompt.push_back(true);
        return grpc::Status::OK;
    };
    if (prompt->is_string()) {
        add_text(*prompt);
    } else if (prompt->is_array()) {
        if (prompt->empty()) return Invalid("prompt", "must not be empty");
        const Json& first = (*prompt)[0];
        if (first.is_number()) {
            PP_TRY(add_ids(*prompt, "prompt"));
        } else {
            for (size_t i = 0; i < prompt->size(); ++i) {
                const Json& p = (*prompt)[i];
                const std::string at = "prompt[" + std::to_string(i) + "]";
                if (p.is_string()) {
                    add_text(p);
                } else if (p.is_array()) {
                    PP_TRY(add_ids(p, at));
                } else {
                    return WrongType(at, "a string or a list of token ids", p);
                }
            }
        }
    } else {
        return WrongType("prompt", "a string, a list of strings, token ids, or a list of token-id lists", *prompt);
    }
    return CheckChoices(*out, max_queue);
}

grpc::Status WithJsonNames(const grpc::Status& status, Api api, int prompt_index) {
    if (status.ok()) return status;
    std::string m = status.error_message();
    // Longest names first: each rule applies to what the ones before left.
    static const std::vector<std::pair<std::regex, std::string>> kChat = {
        {std::regex(R"(messages\.messages)"), "messages"},
        {std::regex(R"(messages\.tools_json)"), "tools"},
        {std::regex(R"(messages\.chat_template_kwargs_json)"), "chat_template_kwargs"},
        {std::regex(R"(\.content_parts\[)"), ".content["},
        {std::regex(R"((tool_calls\[\d+\])\.arguments_json)"), "$1.function.arguments"},
        {std::regex(R"((tool_calls\[\d+\])\.name)"), "$1.function.name"},
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

grpc::Status ParseTokenize(const Json& b, const std::string& served_id, TokenizeRequest* out) {
    PP_TRY(OnlyKnown(b,
                     {"model", "prompt", "add_special_tokens", "parse_special", "messages", "add_generation_prompt",
                      "chat_template_kwargs"},
                     ""));
    if (Get(b, "model") != nullptr) PP_TRY(CheckModel(b, served_id));
    const Json* prompt = Get(b, "prompt");
    const Json* messages = Get(b, "messages");
    if ((prompt == nullptr) == (messages == nullptr)) return Invalid("prompt", "set prompt or messages (one of them)");
    if (prompt != nullptr) {
        if (Get(b, "add_generation_prompt") || Get(b, "chat_template_kwargs")) {
            return Invalid("add_generation_prompt", "applies to messages only");
        }
        if (!prompt->is_string()) return WrongType("prompt", "a string", *prompt);
        out->text = prompt->get<std::string>();
        std::optional<bool> add_special, parse_special;
        PP_TRY(GetBool(b, "add_special_tokens", &add_special));
        PP_TRY(GetBool(b, "parse_special", &parse_special));
        out->add_special = add_special.value_or(true);
        out->parse_special = parse_special.value_or(false);
        return grpc::Status::OK;
    }
    if (Get(b, "add_special_tokens") || Get(b, "parse_special")) {
        return Invalid("add_special_tokens", "applies to prompt only (a conversation's special tokens are the "
                                             "template's)");
    }
    out->chat = true;
    if (!messages->is_array()) return WrongType("messages", "a list", *messages);
    if (messages->empty()) return Invalid("messages", "must not be empty");
    for (size_t i = 0; i < messages->size(); ++i) {
        PP_TRY(ParseMessage((*messages)[i], i, out->conversation.add_messages()));
    }
    std::optional<bool> add_generation_prompt;
    PP_TRY(GetBool(b, "add_generation_prompt", &add_generation_prompt));
    if (add_generation_prompt) out->conversation.set_add_generation_prompt(*add_generation_prompt);
    if (const Json* kwargs = Get(b, "chat_template_kwargs")) {
        if (!kwargs->is_object()) return WrongType("chat_template_kwargs", "an object", *kwargs);
        out->conversation.set_chat_template_kwargs_json(kwargs->dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    return grpc::Status::OK;
}

grpc::Status ParseDetokenize(const Json& b, const std::string& served_id, const prepack_model_desc& model,
                             std::vector<int32_t>* ids) {
    PP_TRY(OnlyKnown(b, {"model", "tokens"}, ""));
    if (Get(b, "model") != nullptr) PP_TRY(CheckModel(b, served_id));
    const Json* tokens = Get(b, "tokens");
    if (tokens == nullptr) return Invalid("tokens", "required");
    if (!tokens->is_array()) return WrongType("tokens", "a list of token ids", *tokens);
    for (size_t k = 0; k < tokens->size(); ++k) {
        const Json& t = (*tokens)[k];
        const std::string at = "tokens[" + std::to_string(k) + "]";
        if (!t.is_number_integer()) return WrongType(at, "a token id (an integer)", t);
        const int64_t id = t.get<int64_t>();
        if (id < 0 || id >= model.vocab_size) {
            return Invalid(at, std::to_string(id) + " is outside the vocabulary [0, " +
                                   std::to_string(model.vocab_size) + ")");
        }
        ids->push_back(static_cast<int32_t>(id));
    }
    return grpc::Status::OK;
}

}  // namespace prepackd::http
