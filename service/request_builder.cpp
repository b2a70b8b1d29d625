#include "request_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine_host.h"

namespace prepackd {
namespace {

// prepack.v1's ToolChoiceMode is the C ABI's prepack_tool_choice by number.
static_assert(int(prepack::v1::TOOL_CHOICE_MODE_NONE) == int(PREPACK_TOOL_CHOICE_NONE) &&
              int(prepack::v1::TOOL_CHOICE_MODE_AUTO) == int(PREPACK_TOOL_CHOICE_AUTO) &&
              int(prepack::v1::TOOL_CHOICE_MODE_REQUIRED) == int(PREPACK_TOOL_CHOICE_REQUIRED) &&
              int(prepack::v1::TOOL_CHOICE_MODE_FUNCTION) == int(PREPACK_TOOL_CHOICE_FUNCTION));

constexpr int    kMaxTopLogprobs = 20;   // the engine's limit (prepack.h: logprobs 0..20)
constexpr size_t kMaxStop = 16;
constexpr size_t kMaxStopBytes = 256;

grpc::Status Invalid(const std::string& prefix, const std::string& field, const std::string& why) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, prefix + field + ": " + why);
}

std::string Num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

grpc::Status CheckSampling(const prepack::v1::SamplingParams& s, const std::string& p) {
    if (s.has_max_tokens() && s.max_tokens() < 1) {
        return Invalid(p, "sampling.max_tokens", "must be >= 1, got " + std::to_string(s.max_tokens()));
    }
    if (s.has_temperature() && !(std::isfinite(s.temperature()) && s.temperature() >= 0.0f)) {
        return Invalid(p, "sampling.temperature", "must be >= 0 (0 = greedy), got " + Num(s.temperature()));
    }
    if (s.top_k() < 0) return Invalid(p, "sampling.top_k", "must be >= 0 (0 = off), got " + std::to_string(s.top_k()));
    if (s.has_top_p() && !(s.top_p() > 0.0f && s.top_p() <= 1.0f)) {
        return Invalid(p, "sampling.top_p", "must be in (0, 1], got " + Num(s.top_p()));
    }
    if (!(s.min_p() >= 0.0f && s.min_p() <= 1.0f)) {
        return Invalid(p, "sampling.min_p", "must be in [0, 1], got " + Num(s.min_p()));
    }
    if (s.has_repetition_penalty() && !(std::isfinite(s.repetition_penalty()) && s.repetition_penalty() > 0.0f)) {
        return Invalid(p, "sampling.repetition_penalty", "must be > 0 (1 = off), got " + Num(s.repetition_penalty()));
    }
    if (static_cast<size_t>(s.stop_size()) > kMaxStop) {
        return Invalid(p, "sampling.stop", "at most " + std::to_string(kMaxStop) + " stop strings");
    }
    for (int i = 0; i < s.stop_size(); ++i) {
        const std::string field = "sampling.stop[" + std::to_string(i) + "]";
        if (s.stop(i).empty()) return Invalid(p, field, "must not be empty");
        if (s.stop(i).size() > kMaxStopBytes) return Invalid(p, field, "longer than 256 bytes");
    }
    return grpc::Status::OK;
}

using Json = nlohmann::ordered_json;

// `text` parsed, or INVALID_ARGUMENT naming `field` and where it stops being JSON.
grpc::Status ParseJson(const std::string& text, const std::string& field, Json* out) {
    if (JsonNestingDepth(text) > kMaxJsonDepth) {
        return Invalid("", field, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    try {
        *out = Json::parse(text);
    } catch (const Json::parse_error& e) {
        return Invalid("", field, "not valid JSON (error at byte " + std::to_string(e.byte) + ")");
    }
    return grpc::Status::OK;
}

// INVALID_ARGUMENT when `value` holds a NUL character: the C ABI's strings
// end at the first one, so the rest would silently be lost.
grpc::Status NoNul(const std::string& value, const std::string& field) {
    const size_t at = value.find('\0');
    if (at == std::string::npos) return grpc::Status::OK;
    return Invalid("", field,
                   "contains a NUL character (byte " + std::to_string(at) + "), which text cannot hold here");
}

const char* OrNull(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

// The prompt, checked without tokenizing: one is set, text is short enough
// to be worth tokenizing, token ids are in the vocabulary, a conversation
// is well formed and short enough to be worth rendering.
grpc::Status CheckPrompt(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_model_desc& model,
                         uint64_t max_prompt_bytes, const std::string& chat_field) {
    switch (in.prompt_case()) {
        case prepack::v1::GenerateRequest::kChat:
            if (in.has_add_bos() && !in.add_bos()) {
                return Invalid(p, "add_bos",
                               "applies to text prompts only (a conversation's BOS is as its template and the "
                               "vocabulary say)");
            }
            if (in.parse_special()) {
                return Invalid(p, "parse_special",
                               "applies to text prompts only (the text of a conversation's messages never becomes "
                               "control tokens)");
            }
            return CheckConversation(in.chat(), p + chat_field, max_prompt_bytes);
        case prepack::v1::GenerateRequest::kText:
            return CheckPromptBytes(in.text().size(), p + "text", max_prompt_bytes);
        case prepack::v1::GenerateRequest::kTokenIds: {
            if (in.has_add_bos() && in.add_bos()) {
                return Invalid(p, "add_bos", "applies to text prompts only (token_ids are taken as given)");
            }
            const auto& t = in.token_ids().ids();
            if (t.empty()) return Invalid(p, "token_ids.ids", "must not be empty");
            for (int i = 0; i < t.size(); ++i) {
                if (t[i] < 0 || t[i] >= model.vocab_size) {
                    return Invalid(p, "token_ids.ids[" + std::to_string(i) + "]",
                                   std::to_string(t[i]) + " is outside the vocabulary [0, " +
                                       std::to_string(model.vocab_size) + ")");
                }
            }
            return grpc::Status::OK;
        }
        case prepack::v1::GenerateRequest::PROMPT_NOT_SET: break;
    }
    return Invalid(p, "prompt", "set text, token_ids or chat");
}

// The prompt's ids (after CheckPrompt): token_ids as given, or the text
// tokenized here.
grpc::Status PromptIds(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_engine* engine,
                       std::vector<int32_t>* ids) {
    if (in.prompt_case() == prepack::v1::GenerateRequest::kTokenIds) {
        ids->assign(in.token_ids().ids().begin(), in.token_ids().ids().end());
        return grpc::Status::OK;
    }
    // Empty text is BOS alone (llama.cpp's behaviour), when BOS is added.
    grpc::Status s = TokenizeText(engine, in.text(), !in.has_add_bos() || in.add_bos(), in.parse_special(), ids);
    if (!s.ok()) return grpc::Status(s.error_code(), p + "text: " + s.error_message());
    if (ids->empty()) return Invalid(p, "text", "is empty and no BOS token is added");
    return grpc::Status::OK;
}

}  // namespace

grpc::Status CheckPromptBytes(uint64_t bytes, const std::string& field, uint64_t max_prompt_bytes) {
    if (bytes <= max_prompt_bytes) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                        field + ": " + std::to_string(bytes) + " bytes, more than any prompt that fits the " +
                            "context (at most " + std::to_string(max_prompt_bytes) + " bytes, --max-prompt-bytes)");
}

grpc::Status CheckStructuredOutput(const prepack::v1::StructuredOutput& so, const std::string& f) {
    switch (so.kind()) {
        case prepack::v1::GRAMMAR_KIND_NONE:
        case prepack::v1::GRAMMAR_KIND_JSON_OBJECT:
            if (!so.text().empty()) {
                return Invalid(f, ".text",
                               "must be empty for " + prepack::v1::GrammarKind_Name(so.kind()) +
                                   " (it takes no grammar text)");
            }
            return grpc::Status::OK;
        case prepack::v1::GRAMMAR_KIND_JSON_SCHEMA:
        case prepack::v1::GRAMMAR_KIND_REGEX:
        case prepack::v1::GRAMMAR_KIND_GBNF:
            if (so.text().empty()) {
                return Invalid(f, ".text", std::string("required for ") + prepack::v1::GrammarKind_Name(so.kind()));
            }
            return NoNul(so.text(), f + ".text");
        default: break;
    }
    return Invalid(f, ".kind", "unknown value " + std::to_string(so.kind()) +
                                   " (0 NONE, 1 JSON_OBJECT, 2 JSON_SCHEMA, 3 REGEX, 4 GBNF)");
}

grpc::Status CheckToolChoice(const prepack::v1::GenerateRequest& in, const std::string& f) {
    const prepack::v1::ToolChoice& tc = in.tool_choice();
    // "REQUIRED", as the C ABI and the docs say it.
    std::string mode = prepack::v1::ToolChoiceMode_Name(tc.mode());
    if (mode.rfind("TOOL_CHOICE_MODE_", 0) == 0) mode = mode.substr(17);
    switch (tc.mode()) {
        case prepack::v1::TOOL_CHOICE_MODE_NONE:
        case prepack::v1::TOOL_CHOICE_MODE_AUTO:
        case prepack::v1::TOOL_CHOICE_MODE_REQUIRED:
            if (!tc.function().empty()) {
                return Invalid(f, ".function", "must be empty for " + mode + " (only FUNCTION names a tool)");
            }
            break;
        case prepack::v1::TOOL_CHOICE_MODE_FUNCTION:
            if (tc.function().empty()) return Invalid(f, ".function", "required for FUNCTION (the tool to call)");
            if (grpc::Status s = NoNul(tc.function(), f + ".function"); !s.ok()) return s;
            break;
        default:
            return Invalid(f, ".mode", "unknown value " + std::to_string(tc.mode()) +
                                           " (0 NONE, 1 AUTO, 2 REQUIRED, 3 FUNCTION)");
    }
    if (tc.mode() == prepack::v1::TOOL_CHOICE_MODE_NONE) return grpc::Status::OK;
    const bool tools = in.prompt_case() == prepack::v1::GenerateRequest::kChat && !in.chat().tools_json().empty();
    if (!tools) {
        // AUTO with nothing to call is plain text; the others ask for a call.
        if (tc.mode() == prepack::v1::TOOL_CHOICE_MODE_AUTO) return grpc::Status::OK;
        return Invalid(f, ".mode", mode + " needs tools to call (a conversation with tools_json)");
    }
    if (in.structured_output().kind() != prepack::v1::GRAMMAR_KIND_NONE) {
        return Invalid(f, ".mode", mode + " conflicts with structured_output: the tool-call format decides the "
                                          "answer's shape (with NONE the tools are only shown to the model)");
    }
    if (in.sampling().ignore_eos()) {
        return Invalid(f, ".mode", mode + " conflicts with sampling.ignore_eos: the tool-call format decides where "
                                          "the answer may end");
    }
    return grpc::Status::OK;
}

grpc::Status CheckRequest(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_model_desc& model,
                          uint64_t max_prompt_bytes, const std::string& chat_field) {
    if (grpc::Status s = CheckStructuredOutput(in.structured_output(), p + "structured_output"); !s.ok()) return s;
    if (grpc::Status s = CheckToolChoice(in, p + "tool_choice"); !s.ok()) return s;
    if (in.sampling().ignore_eos() && in.structured_output().kind() != prepack::v1::GRAMMAR_KIND_NONE) {
        return Invalid(p, "sampling.ignore_eos", "conflicts with structured_output: a grammar decides where the "
                                                 "output may end");
    }
    if (grpc::Status s = CheckSampling(in.sampling(), p); !s.ok()) return s;
    if (in.top_logprobs() < 0 || in.top_logprobs() > kMaxTopLogprobs) {
        return Invalid(p, "top_logprobs", "must be in [0, 20], got " + std::to_string(in.top_logprobs()));
    }
    if (in.has_prompt_logprobs() && (in.prompt_logprobs() < 0 || in.prompt_logprobs() > kMaxTopLogprobs)) {
        return Invalid(p, "prompt_logprobs", "must be in [0, 20], got " + std::to_string(in.prompt_logprobs()));
    }
    if (in.has_prompt_logprobs() && in.lazy().enabled()) {
        return Invalid(p, "prompt_logprobs", "needs every prompt token through every layer: not with lazy");
    }
    if (in.lazy().has_keep_ratio() && !(in.lazy().keep_ratio() > 0.0f && in.lazy().keep_ratio() <= 1.0f)) {
        return Invalid(p, "lazy.keep_ratio", "must be in (0, 1], got " + Num(in.lazy().keep_ratio()));
    }
    if (in.lazy().has_revive_limit() && in.lazy().revive_limit() < -1) {
        return Invalid(p, "lazy.revive_limit",
                       "must be -1 (no bound), 0 (the default) or a count > 0, got " +
                           std::to_string(in.lazy().revive_limit()));
    }
    return CheckPrompt(in, p, model, max_prompt_bytes, chat_field);
}

uint64_t ConversationBytes(const prepack::v1::Conversation& c) {
    uint64_t bytes = c.tools_json().size() + c.chat_template_kwargs_json().size();
    for (const prepack::v1::ChatMessage& m : c.messages()) {
        bytes += m.role().size() + m.content().size() + m.name().size() + m.tool_call_id().size();
        for (const std::string& part : m.content_parts()) bytes += part.size();
        for (const prepack::v1::ToolCall& call : m.tool_calls()) {
            bytes += call.id().size() + call.name().size() + call.arguments_json().size();
        }
    }
    return bytes;
}

grpc::Status CheckConversation(const prepack::v1::Conversation& c, const std::string& f, uint64_t max_prompt_bytes) {
    // The size first: a huge conversation costs nothing more to refuse.
    if (grpc::Status s = CheckPromptBytes(ConversationBytes(c), f, max_prompt_bytes); !s.ok()) return s;
    if (c.messages().empty()) {
        return Invalid(f, ".messages", "must not be empty: a conversation needs at least one message");
    }
    for (int i = 0; i < c.messages_size(); ++i) {
        const prepack::v1::ChatMessage& m = c.messages(i);
        const std::string at = f + ".messages[" + std::to_string(i) + "]";
        if (m.role().empty()) {
            return Invalid(at, ".role", "must be set (\"system\", \"user\", \"assistant\", \"tool\", ...)");
        }
        if (grpc::Status s = NoNul(m.role(), at + ".role"); !s.ok()) return s;
        if (m.has_content() && m.content_parts_size() > 0) {
            return Invalid(at, "", "set content or content_parts, not both");
        }
        if (grpc::Status s = NoNul(m.content(), at + ".content"); !s.ok()) return s;
        for (int k = 0; k < m.content_parts_size(); ++k) {
            if (grpc::Status s = NoNul(m.content_parts(k), at + ".content_parts[" + std::to_string(k) + "]"); !s.ok()) {
                return s;
            }
        }
        if (grpc::Status s = NoNul(m.name(), at + ".name"); !s.ok()) return s;
        if (grpc::Status s = NoNul(m.tool_call_id(), at + ".tool_call_id"); !s.ok()) return s;
        for (int j = 0; j < m.tool_calls_size(); ++j) {
            const prepack::v1::ToolCall& call = m.tool_calls(j);
            const std::string cat = at + ".tool_calls[" + std::to_string(j) + "]";
            if (call.name().empty()) return Invalid(cat, ".name", "must be set (the function called)");
            // The JSON parser would refuse a NUL in arguments_json anyway.
            if (grpc::Status s = NoNul(call.id(), cat + ".id"); !s.ok()) return s;
            if (grpc::Status s = NoNul(call.name(), cat + ".name"); !s.ok()) return s;
        }
    }
    if (grpc::Status s = NoNul(c.tools_json(), f + ".tools_json"); !s.ok()) return s;
    if (grpc::Status s = NoNul(c.chat_template_kwargs_json(), f + ".chat_template_kwargs_json"); !s.ok()) return s;
    return NoNul(c.template_name(), f + ".template_name");
}

grpc::Status BuildChat(const prepack::v1::Conversation& c, const std::string& f, PreparedChat* out) {
    out->messages.resize(static_cast<size_t>(c.messages_size()));
    out->parts.resize(out->messages.size());
    out->tool_calls.resize(out->messages.size());
    for (int i = 0; i < c.messages_size(); ++i) {
        const prepack::v1::ChatMessage& in = c.messages(i);
        const std::string at = f + ".messages[" + std::to_string(i) + "]";
        prepack_chat_message& m = out->messages[static_cast<size_t>(i)];
        prepack_chat_message_init(&m);
        m.role = in.role().c_str();
        if (in.has_content()) {
            m.content = in.content().c_str();
        } else if (in.content_parts_size() > 0) {
            std::vector<const char*>& parts = out->parts[static_cast<size_t>(i)];
            for (const std::string& part : in.content_parts()) parts.push_back(part.c_str());
            m.content_parts = parts.data();
            m.n_content_parts = parts.size();
        }   // else null content
        m.name = OrNull(in.name());
        m.tool_call_id = OrNull(in.tool_call_id());
        if (in.tool_calls_size() > 0) {
            Json calls = Json::array();
            for (int j = 0; j < in.tool_calls_size(); ++j) {
                const prepack::v1::ToolCall& tc = in.tool_calls(j);
                const std::string field = at + ".tool_calls[" + std::to_string(j) + "].arguments_json";
                Json arguments;
                if (tc.arguments_json().empty()) {
                    return Invalid("", field, "must be a JSON object ({} for no arguments)");
                }
                if (grpc::Status s = ParseJson(tc.arguments_json(), field, &arguments); !s.ok()) return s;
                if (!arguments.is_object()) {
                    return Invalid("", field,
                                   std::string("must be a JSON object (templates read the arguments as a mapping), "
                                               "got ") + arguments.type_name());
                }
                Json call = Json::object();
                if (!tc.id().empty()) call["id"] = tc.id();
                call["type"] = "function";
                Json function = Json::object();
                function["name"] = tc.name();
                function["arguments"] = std::move(arguments);
                call["function"] = std::move(function);
                calls.push_back(std::move(call));
            }
            // Every string came from a decoded proto3 field: valid UTF-8.
            out->tool_calls[static_cast<size_t>(i)] = calls.dump(-1, ' ', false, Json::error_handler_t::replace);
            m.tool_calls_json = out->tool_calls[static_cast<size_t>(i)].c_str();
        }
    }
    prepack_chat& chat = out->chat;
    chat.messages = out->messages.data();
    chat.n_messages = out->messages.size();
    if (!c.tools_json().empty()) {
        Json tools;
        if (grpc::Status s = ParseJson(c.tools_json(), f + ".tools_json", &tools); !s.ok()) return s;
        if (!tools.is_array()) {
            return Invalid(f, ".tools_json",
                           std::string("must be a JSON list of tool definitions, got ") + tools.type_name());
        }
        for (size_t k = 0; k < tools.size(); ++k) {
            if (!tools[k].is_object()) {
                return Invalid(f, ".tools_json", "item " + std::to_string(k) + " must be an object, got " +
                                                     tools[k].type_name());
            }
            // For a named tool_choice; the engine checks the tools themselves.
            const auto function = tools[k].find("function");
            if (function != tools[k].end() && function->is_object()) {
                const auto name = function->find("name");
                if (name != function->end() && name->is_string()) out->tool_names.push_back(name->get<std::string>());
            }
        }
        chat.tools_json = c.tools_json().c_str();
    }
    if (!c.chat_template_kwargs_json().empty()) {
        Json kwargs;
        const std::string field = f + ".chat_template_kwargs_json";
        if (grpc::Status s = ParseJson(c.chat_template_kwargs_json(), field, &kwargs); !s.ok()) return s;
        if (!kwargs.is_object()) {
            return Invalid("", field, std::string("must be a JSON object, got ") + kwargs.type_name());
        }
        for (const char* reserved : {"messages", "tools", "add_generation_prompt"}) {
            if (kwargs.contains(reserved)) {
                return Invalid("", field,
                               std::string("must not set \"") + reserved + "\" (the conversation's own fields do)");
            }
        }
        chat.kwargs_json = c.chat_template_kwargs_json().c_str();
    }
    chat.add_generation_prompt = !c.has_add_generation_prompt() || c.add_generation_prompt() ? 1 : 0;
    chat.template_name = OrNull(c.template_name());
    return grpc::Status::OK;
}

grpc::Status RenderChat(const prepack_engine* engine, const PreparedChat& chat, const std::string& field,
                        std::string* text, std::vector<int32_t>* ids) {
    prepack_chat_prompt* prompt = nullptr;
    const prepack_status st = prepack_chat_render(engine, &chat.chat, &prompt);
    if (st != PREPACK_OK) {
        const std::string why = prepack_last_error();
        // The missing template is no field's fault: the library's words
        // already name the ways to give one.
        if (st == PREPACK_FAILED_PRECONDITION) return ToGrpc(st, why);
        return ToGrpc(st, field + ": " + why);
    }
    std::unique_ptr<prepack_chat_prompt, void (*)(prepack_chat_prompt*)> owned(prompt, prepack_chat_prompt_free);
    if (text != nullptr) text->assign(prompt->text, prompt->text_len);
    if (ids != nullptr) ids->assign(prompt->tokens, prompt->tokens + prompt->n_tokens);
    return grpc::Status::OK;
}

prepack::v1::GenerateRequest ToGenerateRequest(prepack::v1::ChatRequest* in) {
    prepack::v1::GenerateRequest out;
    out.mutable_chat()->Swap(in->mutable_conversation());
    out.mutable_sampling()->Swap(in->mutable_sampling());
    out.mutable_lazy()->Swap(in->mutable_lazy());
    out.set_logprobs(in->logprobs());
    out.set_top_logprobs(in->top_logprobs());
    if (in->has_structured_output()) out.mutable_structured_output()->Swap(in->mutable_structured_output());
    if (in->has_tool_choice()) out.mutable_tool_choice()->Swap(in->mutable_tool_choice());
    return out;
}

grpc::Status TokenizeText(const prepack_engine* engine, const std::string& text, bool add_bos, bool parse_special,
                          std::vector<int32_t>* ids) {
    // Ids are never more than bytes + BOS for this tokenizer family, but ask
    // again with the size the library reports if that ever changes.
    ids->resize(text.size() + 2);
    size_t n = 0;
    prepack_status st = prepack_tokenize_special(engine, text.data(), text.size(), add_bos, parse_special, ids->data(),
                                                 ids->size(), &n);
    if (st == PREPACK_OUT_OF_RANGE) {
        ids->resize(n);
        st = prepack_tokenize_special(engine, text.data(), text.size(), add_bos, parse_special, ids->data(),
                                      ids->size(), &n);
    }
    if (st != PREPACK_OK) return ToGrpc(st, prepack_last_error());
    ids->resize(n);
    return grpc::Status::OK;
}

grpc::Status PrepareRequest(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_engine* engine,
                            const prepack_model_desc& model, uint64_t max_prompt_bytes,
                            std::chrono::system_clock::time_point deadline, PreparedRequest* out,
                            const std::string& chat_field) {
    if (grpc::Status s = CheckRequest(in, p, model, max_prompt_bytes, chat_field); !s.ok()) return s;
    prepack_request& r = out->request;
    if (in.prompt_case() == prepack::v1::GenerateRequest::kChat) {
        // Rendered here for its length (the context check below, the log);
        // the engine renders it again from request.chat, which makes it a
        // chat request (reasoning apart, shared system prompts grouped).
        if (grpc::Status s = BuildChat(in.chat(), p + chat_field, &out->chat); !s.ok()) return s;
        if (grpc::Status s = RenderChat(engine, out->chat, p + chat_field, nullptr, &out->prompt_ids); !s.ok()) {
            return s;
        }
        r.chat = &out->chat.chat;
    } else {
        if (grpc::Status s = PromptIds(in, p, engine, &out->prompt_ids); !s.ok()) return s;
        r.prompt_tokens = out->prompt_ids.data();
        r.n_prompt_tokens = out->prompt_ids.size();
        r.add_bos = 0;   // already in prompt_ids when asked for
    }

    const auto& s = in.sampling();
    if (s.has_max_tokens()) r.max_tokens = s.max_tokens();
    const int64_t total = static_cast<int64_t>(out->prompt_ids.size()) + r.max_tokens;
    if (total > model.context_length) {
        const std::string prompt = r.chat != nullptr ? chat_field + " (rendered: " : "prompt (";
        return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                            p + prompt + std::to_string(out->prompt_ids.size()) + " tokens) plus " + p +
                                "sampling.max_tokens (" + std::to_string(r.max_tokens) +
                                ") exceed the context length (" + std::to_string(model.context_length) + ")");
    }
    if (s.has_temperature()) r.temperature = s.temperature();
    r.top_k = s.top_k();
    if (s.has_top_p()) r.top_p = s.top_p();
    r.min_p = s.min_p();
    if (s.has_repetition_penalty()) r.repetition_penalty = s.repetition_penalty();
    r.seed = s.seed();
    r.ignore_eos = s.ignore_eos() ? 1 : 0;
    out->stop.assign(s.stop().begin(), s.stop().end());
    for (const std::string& st : out->stop) out->stop_ptrs.push_back(st.c_str());
    r.stop = out->stop_ptrs.empty() ? nullptr : out->stop_ptrs.data();
    r.n_stop = out->stop_ptrs.size();
    r.logprobs = in.top_logprobs();
    r.prompt_logprobs = in.has_prompt_logprobs() ? in.prompt_logprobs() : -1;
    r.lazy = in.lazy().enabled() ? 1 : 0;
    if (in.lazy().has_keep_ratio()) r.lazy_keep_ratio = in.lazy().keep_ratio();
    out->lazy_schedule = in.lazy().schedule();
    if (!out->lazy_schedule.empty()) r.lazy_schedule = out->lazy_schedule.c_str();
    r.lazy_revive_limit = in.lazy().revive_limit();

    // The grammar is built once here, on the call's thread, so that a bad
    // one is refused before the request starts (a stream's first message);
    // the engine builds it again (or finds it cached) when it starts.
    if (in.structured_output().kind() != prepack::v1::GRAMMAR_KIND_NONE) {
        const auto kind = static_cast<prepack_grammar_kind>(in.structured_output().kind());
        out->grammar = in.structured_output().text();
        const char* text = out->grammar.empty() ? nullptr : out->grammar.c_str();
        if (const prepack_status st = prepack_grammar_check(kind, text); st != PREPACK_OK) {
            return ToGrpc(st, p + "structured_output.text: " + prepack_last_error());
        }
        r.grammar_kind = kind;
        r.grammar = text;
    }

    // Tool calling. Unset is NONE here (the C ABI's default is AUTO): a
    // client that predates tool_choice keeps its tools render-only.
    const prepack::v1::ToolChoice& tc = in.tool_choice();
    r.tool_choice = static_cast<prepack_tool_choice>(tc.mode());
    r.parallel_tool_calls = !tc.has_parallel_tool_calls() || tc.parallel_tool_calls() ? 1 : 0;
    if (tc.mode() == prepack::v1::TOOL_CHOICE_MODE_FUNCTION) {
        const std::vector<std::string>& names = out->chat.tool_names;
        if (std::find(names.begin(), names.end(), tc.function()) == names.end()) {
            std::string listed;
            for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
            return Invalid(p, "tool_choice.function",
                           "\"" + tc.function() + "\" is not one of the tools (" + listed + ")");
        }
        r.tool_choice_function = tc.function().c_str();
    }

    if (deadline != std::chrono::system_clock::time_point::max()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::system_clock::now());
        if (left.count() <= 0) return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded before start");
        r.deadline_ms = left.count();
    }
    return grpc::Status::OK;
}

}  // namespace prepackd
