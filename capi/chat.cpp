// Conversations: a caller's prepack_chat to the engine's Conversation (the
// one type every surface converts to), and rendering one to see the prompt
// a chat request would get.
#include "capi/capi_internal.h"

namespace prepack::capi {
namespace {

using json = nlohmann::ordered_json;

absl::StatusOr<json> ParseJson(const char* text, const std::string& field) {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(field, " is not valid JSON"));
    return j;
}

absl::StatusOr<json> ToMessage(const prepack_chat_message* in, size_t i) {
    const std::string at = absl::StrCat("chat.messages[", i, "]");
    prepack_chat_message m;
    prepack_chat_message_init(&m);
    if (!CopySized(in, &m)) {
        return absl::InvalidArgumentError(at + ".struct_size is not set (call prepack_chat_message_init)");
    }
    if (m.role == nullptr) return absl::InvalidArgumentError(at + ".role is NULL");
    json out = json::object();
    out["role"] = m.role;
    if (m.content != nullptr && m.content_parts != nullptr) {
        return absl::InvalidArgumentError(at + " has both content and content_parts");
    }
    if (m.content != nullptr) {
        out["content"] = m.content;
    } else if (m.content_parts != nullptr || m.n_content_parts > 0) {
        if (m.content_parts == nullptr) return absl::InvalidArgumentError(at + ".content_parts is NULL but n_content_parts > 0");
        json parts = json::array();
        for (size_t j = 0; j < m.n_content_parts; ++j) {
            if (m.content_parts[j] == nullptr) {
                return absl::InvalidArgumentError(absl::StrCat(at, ".content_parts[", j, "] is NULL"));
            }
            parts.push_back(json{{"type", "text"}, {"text", m.content_parts[j]}});
        }
        out["content"] = std::move(parts);
    } else {
        out["content"] = nullptr;
    }
    if (m.name != nullptr) out["name"] = m.name;
    if (m.tool_calls_json != nullptr) {
        PP_ASSIGN_OR_RETURN(out["tool_calls"], ParseJson(m.tool_calls_json, at + ".tool_calls_json"));
    }
    if (m.tool_call_id != nullptr) out["tool_call_id"] = m.tool_call_id;
    return out;
}

}  // namespace

absl::StatusOr<Conversation> ToConversation(const prepack_chat* in) {
    if (in == nullptr) return absl::InvalidArgumentError("chat is NULL");
    prepack_chat c;
    prepack_chat_init(&c);
    if (!CopySized(in, &c)) return absl::InvalidArgumentError("chat.struct_size is not set (call prepack_chat_init)");
    if (c.messages == nullptr || c.n_messages == 0) {
        return absl::InvalidArgumentError("chat.messages is empty: a conversation needs at least one message");
    }
    Conversation out;
    for (size_t i = 0; i < c.n_messages; ++i) {
        PP_ASSIGN_OR_RETURN(json m, ToMessage(&c.messages[i], i));
        out.messages.push_back(std::move(m));
    }
    if (c.tools_json != nullptr) {
        PP_ASSIGN_OR_RETURN(out.tools, ParseJson(c.tools_json, "chat.tools_json"));
    }
    if (c.kwargs_json != nullptr) {
        PP_ASSIGN_OR_RETURN(out.kwargs, ParseJson(c.kwargs_json, "chat.kwargs_json"));
    }
    out.add_generation_prompt = c.add_generation_prompt != 0;
    if (c.template_name != nullptr) out.template_name = c.template_name;
    return out;   // its shape is checked where it is rendered (ChatTemplates::Apply), once
}

}  // namespace prepack::capi

using namespace prepack::capi;

extern "C" {

void prepack_chat_init(prepack_chat* c) {
    if (c == nullptr) return;
    std::memset(static_cast<void*>(c), 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->add_generation_prompt = 1;
}

void prepack_chat_message_init(prepack_chat_message* m) {
    if (m == nullptr) return;
    std::memset(static_cast<void*>(m), 0, sizeof *m);
    m->struct_size = sizeof *m;
}

prepack_status prepack_chat_render(const prepack_engine* engine, const prepack_chat* chat,
                                   prepack_chat_prompt** prompt) {
    return Guard([&]() -> prepack_status {
        if (engine == nullptr || prompt == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "engine or prompt is NULL");
        absl::StatusOr<prepack::Conversation> c = ToConversation(chat);
        if (!c.ok()) return FromStatus(c.status());
        absl::StatusOr<prepack::ChatPrompt> p = engine->engine->RenderChat(*c);
        if (!p.ok()) return FromStatus(p.status());
        auto out = static_cast<prepack_chat_prompt*>(std::calloc(1, sizeof(prepack_chat_prompt)));
        if (out == nullptr) return Fail(PREPACK_RESOURCE_EXHAUSTED, "out of memory");
        out->text = CopyString(p->text);
        out->tokens = static_cast<int32_t*>(std::malloc(std::max<size_t>(1, p->ids.size()) * sizeof(int32_t)));
        if (out->text == nullptr || out->tokens == nullptr) {
            prepack_chat_prompt_free(out);
            return Fail(PREPACK_RESOURCE_EXHAUSTED, "out of memory");
        }
        out->text_len = p->text.size();
        std::copy(p->ids.begin(), p->ids.end(), out->tokens);
        out->n_tokens = p->ids.size();
        *prompt = out;
        return PREPACK_OK;
    });
}

void prepack_chat_prompt_free(prepack_chat_prompt* prompt) {
    if (prompt == nullptr) return;
    std::free(prompt->text);
    std::free(prompt->tokens);
    std::free(prompt);
}

}  // extern "C"
