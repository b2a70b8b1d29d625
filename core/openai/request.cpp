#include "openai/request.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <set>

#include "fields.h"
#include "response_format.h"
#include "tools.h"

namespace prepack::openai {
namespace {

using namespace fields;

// The fields both endpoints share, into *out.
absl::Status ParseCommon(const Json& b, Api api, ApiRequest* out) {
    Sampling& s = out->sampling;

    // max_tokens (and max_completion_tokens, its newer name on chat).
    std::optional<int64_t> max_tokens, max_completion_tokens;
    OPENAI_TRY(GetInt(b, "max_tokens", &max_tokens));
    if (api == Api::kChat) OPENAI_TRY(GetInt(b, "max_completion_tokens", &max_completion_tokens));
    if (max_tokens && max_completion_tokens && *max_tokens != *max_completion_tokens) {
        return Invalid("max_completion_tokens", "differs from max_tokens; set one of them");
    }
    const char* max_name = max_completion_tokens ? "max_completion_tokens" : "max_tokens";
    if (max_completion_tokens) max_tokens = max_completion_tokens;
    if (max_tokens) {
        if (*max_tokens < 1 || *max_tokens > std::numeric_limits<int32_t>::max()) {
            return Invalid(max_name, "must be >= 1, got " + std::to_string(*max_tokens));
        }
        s.max_tokens = static_cast<int32_t>(*max_tokens);
    } else if (api == Api::kCompletions) {
        s.max_tokens = 16;   // OpenAI's default for completions
    }

    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    OPENAI_TRY(GetNumber(b, "temperature", &temperature));
    if (temperature) {
        if (!(*temperature >= 0.0 && *temperature <= 2.0)) {
            return Invalid("temperature", "must be in [0, 2] (0 = greedy), got " + Num(*temperature));
        }
        s.temperature = static_cast<float>(*temperature);
    }
    OPENAI_TRY(GetNumber(b, "top_p", &top_p));
    if (top_p) {
        if (!(*top_p > 0.0 && *top_p <= 1.0)) return Invalid("top_p", "must be in (0, 1], got " + Num(*top_p));
        s.top_p = static_cast<float>(*top_p);
    }
    std::optional<int64_t> top_k;
    OPENAI_TRY(GetInt(b, "top_k", &top_k));
    if (top_k) {
        if (*top_k < -1 || *top_k > std::numeric_limits<int32_t>::max()) {
            return Invalid("top_k", "must be >= 0 (0 or -1 = off), got " + std::to_string(*top_k));
        }
        s.top_k = *top_k < 0 ? 0 : static_cast<int32_t>(*top_k);
    }
    OPENAI_TRY(GetNumber(b, "min_p", &min_p));
    if (min_p) {
        if (!(*min_p >= 0.0 && *min_p <= 1.0)) return Invalid("min_p", "must be in [0, 1], got " + Num(*min_p));
        s.min_p = static_cast<float>(*min_p);
    }
    OPENAI_TRY(GetNumber(b, "repetition_penalty", &repetition_penalty));
    if (repetition_penalty) {
        if (!(*repetition_penalty > 0.0 && std::isfinite(*repetition_penalty))) {
            return Invalid("repetition_penalty", "must be > 0 (1 = off), got " + Num(*repetition_penalty));
        }
        s.repetition_penalty = static_cast<float>(*repetition_penalty);
    }
    for (const char* penalty : {"presence_penalty", "frequency_penalty"}) {
        std::optional<double> v;
        OPENAI_TRY(GetNumber(b, penalty, &v));
        if (v && *v != 0.0) {
            return Invalid(penalty, "not implemented (only 0); repetition_penalty (prepack's extension) is");
        }
    }
    if (const Json* bias = Get(b, "logit_bias")) {
        if (!bias->is_object()) return WrongType("logit_bias", "an object", *bias);
        if (!bias->empty()) return Invalid("logit_bias", "not implemented");
    }
    if (const Json* seed = Get(b, "seed")) {
        if (seed->is_number_unsigned()) {
            out->seed = seed->get<uint64_t>();
        } else if (seed->is_number_integer()) {
            out->seed = static_cast<uint64_t>(seed->get<int64_t>());
        } else {
            return WrongType("seed", "an integer", *seed);
        }
    }
    std::optional<bool> ignore_eos;
    OPENAI_TRY(GetBool(b, "ignore_eos", &ignore_eos));
    s.ignore_eos = ignore_eos.value_or(false);

    // stop: a string or a list of strings.
    if (const Json* stop = Get(b, "stop")) {
        if (stop->is_string()) {
            s.stop.push_back(stop->get<std::string>());
        } else if (stop->is_array()) {
            for (size_t i = 0; i < stop->size(); ++i) {
                if (!(*stop)[i].is_string()) {
                    return WrongType("stop[" + std::to_string(i) + "]", "a string", (*stop)[i]);
                }
                s.stop.push_back((*stop)[i].get<std::string>());
            }
        } else {
            return WrongType("stop", "a string or a list of strings", *stop);
        }
        if (s.stop.size() > kMaxStop) return Invalid("stop", "at most " + std::to_string(kMaxStop) + " stop strings");
        for (size_t i = 0; i < s.stop.size(); ++i) {
            const std::string field = "stop[" + std::to_string(i) + "]";
            if (s.stop[i].empty()) return Invalid(field, "must not be empty");
            if (s.stop[i].size() > kMaxStopBytes) {
                return Invalid(field, "longer than " + std::to_string(kMaxStopBytes) + " bytes");
            }
        }
    }

    std::optional<int64_t> n;
    OPENAI_TRY(GetInt(b, "n", &n));
    if (n) {
        if (*n < 1 || *n > kMaxN) {
            return Invalid("n", "must be in [1, " + std::to_string(kMaxN) + "], got " + std::to_string(*n));
        }
        out->n = static_cast<int>(*n);
    }
    std::optional<bool> stream;
    OPENAI_TRY(GetBool(b, "stream", &stream));
    out->stream = stream.value_or(false);
    if (const Json* so = Get(b, "stream_options")) {
        if (!so->is_object()) return WrongType("stream_options", "an object", *so);
        if (!out->stream) return Invalid("stream_options", "only allowed when stream is true");
        OPENAI_TRY(OnlyKnown(*so, {"include_usage"}, "stream_options."));
        std::optional<bool> include_usage;
        OPENAI_TRY(GetBool(*so, "include_usage", &include_usage, "stream_options."));
        out->include_usage = include_usage.value_or(false);
    }
    std::optional<std::string> user;
    OPENAI_TRY(GetString(b, "user", &user));
    out->user = user.value_or("");
    OPENAI_TRY(ParseResponseFormat(b, &out->response_format));
    if (s.ignore_eos && out->response_format.active()) {
        return Invalid("ignore_eos", "conflicts with " + out->response_format.field +
                                         ": a grammar decides where the output may end");
    }

    // LazyLLM (prepack's extensions): lazy_schedule or lazy_keep_ratio imply lazy.
    std::optional<bool> lazy;
    std::optional<double> keep_ratio;
    std::optional<int64_t> revive;
    Lazy& lp = out->lazy;
    OPENAI_TRY(GetBool(b, "lazy", &lazy));
    OPENAI_TRY(GetString(b, "lazy_schedule", &lp.schedule));
    OPENAI_TRY(GetNumber(b, "lazy_keep_ratio", &keep_ratio));
    OPENAI_TRY(GetInt(b, "lazy_revive_limit", &revive));
    if (lazy.has_value() && !*lazy && (lp.schedule || keep_ratio || revive)) {
        return Invalid("lazy", "is false but lazy_schedule, lazy_keep_ratio or lazy_revive_limit is set");
    }
    lp.enabled = lazy.value_or(false) || lp.schedule.has_value() || keep_ratio.has_value() || revive.has_value();
    if (keep_ratio) {
        if (!(*keep_ratio > 0.0 && *keep_ratio <= 1.0)) {
            return Invalid("lazy_keep_ratio", "must be in (0, 1], got " + Num(*keep_ratio));
        }
        lp.keep_ratio = static_cast<float>(*keep_ratio);
    }
    if (revive) {
        if (*revive < -1 || *revive > std::numeric_limits<int32_t>::max()) {
            return Invalid("lazy_revive_limit", "must be -1 (no bound), 0 (the default) or a count > 0, got " +
                                                    std::to_string(*revive));
        }
        lp.revive_limit = static_cast<int32_t>(*revive);
    }
    return absl::OkStatus();
}

absl::Status ParseToolCall(const Json& c, const std::string& at, ToolCall* out) {
    if (!c.is_object()) return WrongType(at, "an object", c);
    OPENAI_TRY(OnlyKnown(c, {"id", "type", "function"}, at + "."));
    std::optional<std::string> id, type, name, arguments;
    OPENAI_TRY(GetString(c, "id", &id, at + "."));
    OPENAI_TRY(GetString(c, "type", &type, at + "."));
    if (type && *type != "function") return Invalid(at + ".type", "must be \"function\"");
    const Json* f = Get(c, "function");
    if (f == nullptr) return Invalid(at + ".function", "required");
    if (!f->is_object()) return WrongType(at + ".function", "an object", *f);
    OPENAI_TRY(OnlyKnown(*f, {"name", "arguments"}, at + ".function."));
    OPENAI_TRY(GetString(*f, "name", &name, at + ".function."));
    if (!name || name->empty()) return Invalid(at + ".function.name", "required");
    OPENAI_TRY(GetString(*f, "arguments", &arguments, at + ".function."));
    out->id = id.value_or("");
    out->name = *name;
    out->arguments = arguments.value_or("{}");
    return absl::OkStatus();
}

absl::Status ParseMessage(const Json& m, size_t i, Message* out) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return WrongType(at, "an object", m);
    OPENAI_TRY(OnlyKnown(m, {"role", "content", "name", "tool_calls", "tool_call_id", "refusal"}, at + "."));
    std::optional<std::string> role, name, tool_call_id;
    OPENAI_TRY(GetString(m, "role", &role, at + "."));
    if (!role || role->empty()) {
        return Invalid(at + ".role", "required: \"system\", \"developer\", \"user\", \"assistant\" or \"tool\"");
    }
    static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
    if (kRoles.count(*role) == 0) {
        return Invalid(at + ".role",
                       "\"" + *role + "\" is not one of \"system\", \"developer\", \"user\", \"assistant\", \"tool\"");
    }
    out->role = *role;
    const Json* content = Get(m, "content");
    if (content == nullptr) {
        if (*role != "assistant") return Invalid(at + ".content", "required for a " + *role + " message");
        // An assistant turn of calls alone (the openai SDK sends the
        // response's message back with content null): the template reads
        // "", as vLLM renders it, since templates that write
        // role + content would fail on a missing content.
        out->content = "";
    } else if (content->is_string()) {
        out->content = content->get<std::string>();
    } else if (content->is_array()) {
        for (size_t k = 0; k < content->size(); ++k) {
            const Json& part = (*content)[k];
            const std::string pat = at + ".content[" + std::to_string(k) + "]";
            if (!part.is_object()) return WrongType(pat, "an object", part);
            std::optional<std::string> type, text;
            OPENAI_TRY(GetString(part, "type", &type, pat + "."));
            if (!type) return Invalid(pat + ".type", "required");
            if (*type != "text") {
                return Invalid(pat + ".type",
                               "\"" + *type + "\" parts are not supported (only \"text\": the model reads text)");
            }
            OPENAI_TRY(OnlyKnown(part, {"type", "text"}, pat + "."));
            OPENAI_TRY(GetString(part, "text", &text, pat + "."));
            if (!text) return Invalid(pat + ".text", "required");
            out->content_parts.push_back(*text);
        }
        if (content->empty()) out->content = "";
    } else {
        return WrongType(at + ".content", "a string or a list of content parts", *content);
    }
    if (const Json* refusal = Get(m, "refusal")) {
        if (!refusal->is_string()) return WrongType(at + ".refusal", "a string", *refusal);
        return Invalid(at + ".refusal", "not supported: give the assistant's words as content");
    }
    OPENAI_TRY(GetString(m, "name", &name, at + "."));
    out->name = name.value_or("");
    OPENAI_TRY(GetString(m, "tool_call_id", &tool_call_id, at + "."));
    out->tool_call_id = tool_call_id.value_or("");
    if (const Json* calls = Get(m, "tool_calls")) {
        if (!calls->is_array()) return WrongType(at + ".tool_calls", "a list", *calls);
        out->tool_calls.resize(calls->size());
        for (size_t j = 0; j < calls->size(); ++j) {
            OPENAI_TRY(ParseToolCall((*calls)[j], at + ".tool_calls[" + std::to_string(j) + "]", &out->tool_calls[j]));
        }
    }
    return absl::OkStatus();
}

// A list of token ids, each inside the vocabulary.
absl::Status ReadIds(const Json& list, const std::string& at, int64_t vocab_size, std::vector<int32_t>* ids) {
    for (size_t k = 0; k < list.size(); ++k) {
        const std::string kat = at + "[" + std::to_string(k) + "]";
        if (!list[k].is_number_integer()) return WrongType(kat, "a token id (an integer)", list[k]);
        const int64_t id = list[k].get<int64_t>();
        if (id < 0 || id >= vocab_size) {
            return Invalid(kat, std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size) +
                                    ")");
        }
        ids->push_back(static_cast<int32_t>(id));
    }
    return absl::OkStatus();
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

// Every endpoint's fields: the common ones, structured output, and `more`.
std::set<std::string_view> EndpointFields(std::initializer_list<std::string_view> more) {
    std::set<std::string_view> fields = With(kCommonFields, more);
    fields.insert(StructuredOutputFields().begin(), StructuredOutputFields().end());
    return fields;
}

absl::Status CheckChoices(const ApiRequest& r, int max_choices) {
    const int limit = std::min(kMaxChoices, max_choices);
    if (r.choices() > limit) {
        return Invalid(r.prompt_count() > 1 ? "prompt" : "n",
                       std::to_string(r.prompt_count()) + " prompt(s) x n = " + std::to_string(r.choices()) +
                           " choices, more than one request may ask for (" + std::to_string(limit) +
                           (limit < kMaxChoices ? "; each holds a slot of --max-queue)" : ")"));
    }
    return absl::OkStatus();
}

}  // namespace

absl::Status CheckModel(const Json& body, const std::string& served_id) {
    const Json* model = Get(body, "model");
    if (model == nullptr) return Invalid("model", "required (this server serves \"" + served_id + "\")");
    if (!model->is_string()) return WrongType("model", "a string", *model);
    const std::string name = model->get<std::string>();
    if (name != served_id) {
        return absl::NotFoundError("model: \"" + name + "\" does not exist here; this server serves \"" + served_id +
                                   "\" (GET /v1/models)");
    }
    return absl::OkStatus();
}

absl::Status ParseChat(const Json& b, int max_choices, ApiRequest* out) {
    out->api = Api::kChat;
    OPENAI_TRY(OnlyKnown(b,
                         EndpointFields({"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
                                         "parallel_tool_calls", "chat_template_kwargs", "add_generation_prompt"}),
                         ""));
    OPENAI_TRY(ParseCommon(b, Api::kChat, out));

    std::optional<bool> logprobs;
    std::optional<int64_t> top_logprobs;
    OPENAI_TRY(GetBool(b, "logprobs", &logprobs));
    OPENAI_TRY(GetInt(b, "top_logprobs", &top_logprobs));
    out->logprobs = logprobs.value_or(false);
    if (top_logprobs) {
        if (*top_logprobs < 0 || *top_logprobs > 20) {
            return Invalid("top_logprobs", "must be in [0, 20], got " + std::to_string(*top_logprobs));
        }
        if (*top_logprobs > 0 && !out->logprobs) return Invalid("top_logprobs", "needs logprobs: true");
        out->top_logprobs = static_cast<int>(*top_logprobs);
    }
    Chat& c = out->chat;
    OPENAI_TRY(ParseTools(b, &c));
    // A tool call's shape is the tool-call format's grammar: no room for
    // another constraint, nor for going on past where it may end.
    if (c.tool_choice.active() && out->response_format.active()) {
        return Invalid(out->response_format.field,
                       "conflicts with tools: the tool-call format decides the answer's shape (with tool_choice "
                       "\"none\" the tools are only shown to the model)");
    }
    if (c.tool_choice.active() && out->sampling.ignore_eos) {
        return Invalid("ignore_eos", "conflicts with tools: the tool-call format decides where the answer may end");
    }
    if (const Json* kwargs = Get(b, "chat_template_kwargs")) {
        if (!kwargs->is_object()) return WrongType("chat_template_kwargs", "an object", *kwargs);
        c.kwargs_json = Dump(*kwargs);
    }
    OPENAI_TRY(GetBool(b, "add_generation_prompt", &c.add_generation_prompt));

    const Json* messages = Get(b, "messages");
    if (messages == nullptr) return Invalid("messages", "required");
    if (!messages->is_array()) return WrongType("messages", "a list", *messages);
    if (messages->empty()) return Invalid("messages", "must not be empty");
    c.messages.resize(messages->size());
    for (size_t i = 0; i < messages->size(); ++i) OPENAI_TRY(ParseMessage((*messages)[i], i, &c.messages[i]));
    return CheckChoices(*out, max_choices);
}

absl::Status ParseCompletion(const Json& b, int64_t vocab_size, int max_choices, ApiRequest* out) {
    out->api = Api::kCompletions;
    OPENAI_TRY(OnlyKnown(b, EndpointFields({"prompt", "echo", "suffix", "best_of"}), ""));
    OPENAI_TRY(ParseCommon(b, Api::kCompletions, out));

    std::optional<int64_t> logprobs;
    OPENAI_TRY(GetInt(b, "logprobs", &logprobs));
    if (logprobs) {
        if (*logprobs < 0 || *logprobs > 20) {
            return Invalid("logprobs", "must be in [0, 20], got " + std::to_string(*logprobs));
        }
        out->logprobs = true;
        out->top_logprobs = static_cast<int>(*logprobs);
    }
    std::optional<bool> echo;
    OPENAI_TRY(GetBool(b, "echo", &echo));
    out->echo = echo.value_or(false);
    // echo + logprobs: the prompt's tokens scored too (computed in the same
    // prefill; the request then shares no prefix KV, as it needs every row).
    if (out->scores_prompt() && out->lazy.enabled) {
        return Invalid("echo", "with logprobs needs the whole prompt: not with lazy");
    }
    std::optional<std::string> suffix;
    OPENAI_TRY(GetString(b, "suffix", &suffix));
    if (suffix && !suffix->empty()) return Invalid("suffix", "not implemented (insertion after the completion)");
    std::optional<int64_t> best_of;
    OPENAI_TRY(GetInt(b, "best_of", &best_of));
    if (best_of && *best_of != out->n) {
        return Invalid("best_of", "not implemented (only equal to n: every choice is returned)");
    }

    // prompt: a string, a list of strings, token ids, or a list of token-id lists.
    const Json* prompt = Get(b, "prompt");
    if (prompt == nullptr) return Invalid("prompt", "required");
    auto add_text = [&](const Json& text) {
        Prompt p;
        p.text = text.get<std::string>();
        out->prompts.push_back(std::move(p));
    };
    auto add_ids = [&](const Json& ids, const std::string& at) -> absl::Status {
        if (ids.empty()) return Invalid(at, "must not be empty");
        Prompt p;
        p.token_ids = true;
        OPENAI_TRY(ReadIds(ids, at, vocab_size, &p.ids));
        out->prompts.push_back(std::move(p));
        return absl::OkStatus();
    };
    if (prompt->is_string()) {
        add_text(*prompt);
    } else if (prompt->is_array()) {
        if (prompt->empty()) return Invalid("prompt", "must not be empty");
        if ((*prompt)[0].is_number()) {
            OPENAI_TRY(add_ids(*prompt, "prompt"));
        } else {
            for (size_t i = 0; i < prompt->size(); ++i) {
                const Json& p = (*prompt)[i];
                const std::string at = "prompt[" + std::to_string(i) + "]";
                if (p.is_string()) {
                    add_text(p);
                } else if (p.is_array()) {
                    OPENAI_TRY(add_ids(p, at));
                } else {
                    return WrongType(at, "a string or a list of token ids", p);
                }
            }
        }
    } else {
        return WrongType("prompt", "a string, a list of strings, token ids, or a list of token-id lists", *prompt);
    }
    return CheckChoices(*out, max_choices);
}

absl::Status ParseTokenize(const Json& b, const std::string& served_id, TokenizeRequest* out) {
    OPENAI_TRY(OnlyKnown(b,
                         {"model", "prompt", "add_special_tokens", "parse_special", "messages",
                          "add_generation_prompt", "chat_template_kwargs"},
                         ""));
    if (Get(b, "model") != nullptr) OPENAI_TRY(CheckModel(b, served_id));
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
        OPENAI_TRY(GetBool(b, "add_special_tokens", &add_special));
        OPENAI_TRY(GetBool(b, "parse_special", &parse_special));
        out->add_special = add_special.value_or(true);
        out->parse_special = parse_special.value_or(false);
        return absl::OkStatus();
    }
    if (Get(b, "add_special_tokens") || Get(b, "parse_special")) {
        return Invalid("add_special_tokens", "applies to prompt only (a conversation's special tokens are the "
                                             "template's)");
    }
    out->chat = true;
    if (!messages->is_array()) return WrongType("messages", "a list", *messages);
    if (messages->empty()) return Invalid("messages", "must not be empty");
    Chat& c = out->conversation;
    c.messages.resize(messages->size());
    for (size_t i = 0; i < messages->size(); ++i) OPENAI_TRY(ParseMessage((*messages)[i], i, &c.messages[i]));
    OPENAI_TRY(GetBool(b, "add_generation_prompt", &c.add_generation_prompt));
    if (const Json* kwargs = Get(b, "chat_template_kwargs")) {
        if (!kwargs->is_object()) return WrongType("chat_template_kwargs", "an object", *kwargs);
        c.kwargs_json = Dump(*kwargs);
    }
    return absl::OkStatus();
}

absl::Status ParseDetokenize(const Json& b, const std::string& served_id, int64_t vocab_size,
                             std::vector<int32_t>* ids) {
    OPENAI_TRY(OnlyKnown(b, {"model", "tokens"}, ""));
    if (Get(b, "model") != nullptr) OPENAI_TRY(CheckModel(b, served_id));
    const Json* tokens = Get(b, "tokens");
    if (tokens == nullptr) return Invalid("tokens", "required");
    if (!tokens->is_array()) return WrongType("tokens", "a list of token ids", *tokens);
    return ReadIds(*tokens, "tokens", vocab_size, ids);
}

std::string DefaultModelId(const std::string& model) {
    if (model.rfind("synthetic:", 0) == 0) return model;
    std::string id = model;
    if (const size_t slash = id.find_last_of('/'); slash != std::string::npos) id = id.substr(slash + 1);
    constexpr std::string_view kExt = ".gguf";
    if (id.size() > kExt.size() && id.compare(id.size() - kExt.size(), kExt.size(), kExt) == 0) {
        id.resize(id.size() - kExt.size());
    }
    return id;
}

}  // namespace prepack::openai
