#include "core/chat/conversation.h"

#include "absl/strings/str_cat.h"

namespace prepack {
namespace {

using json = nlohmann::ordered_json;

absl::Status Bad(const std::string& where, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(where, " ", what));
}

absl::Status ValidateContent(const json& content, const std::string& where) {
    if (content.is_null() || content.is_string()) return absl::OkStatus();
    if (!content.is_array()) return Bad(where, "must be a string, null or a list of text parts");
    for (size_t j = 0; j < content.size(); ++j) {
        const json& part = content[j];
        const std::string at = absl::StrCat(where, "[", j, "]");
        if (!part.is_object()) return Bad(at, "must be an object {\"type\": \"text\", \"text\": ...}");
        const auto type = part.find("type");
        if (type == part.end() || !type->is_string()) return Bad(at, "needs a string \"type\"");
        if (*type != "text") {
            return Bad(at, absl::StrCat("has type '", type->get<std::string>(),
                                        "': only text parts are supported (this model reads text)"));
        }
        const auto text = part.find("text");
        if (text == part.end() || !text->is_string()) return Bad(at, "needs a string \"text\"");
    }
    return absl::OkStatus();
}

// Whether `j` nests arrays and objects deeper than `limit` levels; recursion
// stops at the limit, so a hostile depth costs nothing to find.
bool DeeperThan(const json& j, int limit) {
    if (!j.is_structured()) return false;
    if (limit <= 0) return true;
    for (const json& child : j) {
        if (DeeperThan(child, limit - 1)) return true;
    }
    return false;
}

// Text parts joined as vLLM's "string" content format does.
json FlattenContent(const json& content) {
    if (!content.is_array()) return content;
    std::string text;
    for (size_t j = 0; j < content.size(); ++j) {
        if (j > 0) text += "\n";
        text += content[j]["text"].get<std::string>();
    }
    return text;
}

}  // namespace

absl::Status ValidateConversation(const Conversation& c) {
    if (!c.messages.is_array()) return Bad("messages", "must be a list");
    // Templates walk these recursively (tojson); no real conversation nests this deep.
    for (const auto& [field, value] : {std::pair<const char*, const json*>{"messages", &c.messages},
                                       {"tools", &c.tools}, {"chat_template_kwargs", &c.kwargs}}) {
        if (DeeperThan(*value, kMaxConversationDepth)) {
            return Bad(field, absl::StrCat("nests deeper than ", kMaxConversationDepth, " levels"));
        }
    }
    if (c.messages.empty()) return Bad("messages", "is empty: a conversation needs at least one message");
    for (size_t i = 0; i < c.messages.size(); ++i) {
        const json& m = c.messages[i];
        const std::string at = absl::StrCat("messages[", i, "]");
        if (!m.is_object()) return Bad(at, "must be an object with a role and content");
        const auto role = m.find("role");
        if (role == m.end() || !role->is_string() || role->get_ref<const std::string&>().empty()) {
            return Bad(at + ".role", "must be a non-empty string");
        }
        if (const auto content = m.find("content"); content != m.end()) {
            PP_RETURN_IF_ERROR(ValidateContent(*content, at + ".content"));
        }
        for (const char* key : {"name", "tool_call_id", "reasoning_content"}) {
            if (const auto v = m.find(key); v != m.end() && !v->is_string() && !v->is_null()) {
                return Bad(absl::StrCat(at, ".", key), "must be a string");
            }
        }
        if (const auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
            if (!calls->is_array()) return Bad(at + ".tool_calls", "must be a list");
            for (size_t j = 0; j < calls->size(); ++j) {
                if (!(*calls)[j].is_object()) return Bad(absl::StrCat(at, ".tool_calls[", j, "]"), "must be an object");
            }
        }
    }
    if (!c.tools.is_null()) {
        if (!c.tools.is_array()) return Bad("tools", "must be a list of tool definitions");
        for (size_t i = 0; i < c.tools.size(); ++i) {
            if (!c.tools[i].is_object()) return Bad(absl::StrCat("tools[", i, "]"), "must be an object");
        }
    }
    if (!c.kwargs.is_object()) return Bad("chat_template_kwargs", "must be an object");
    for (const char* reserved : {"messages", "tools", "add_generation_prompt"}) {
        if (c.kwargs.contains(reserved)) {
            return Bad(absl::StrCat("chat_template_kwargs.", reserved), "is set by the conversation itself");
        }
    }
    return absl::OkStatus();
}

absl::StatusOr<Conversation> ConversationFromJson(const json& j) {
    Conversation c;
    if (j.is_array()) {
        c.messages = j;
    } else if (j.is_object()) {
        for (const auto& [key, value] : j.items()) {
            if (key == "messages") {
                c.messages = value;
            } else if (key == "tools") {
                c.tools = value;
            } else if (key == "add_generation_prompt") {
                if (!value.is_boolean()) return Bad("add_generation_prompt", "must be true or false");
                c.add_generation_prompt = value.get<bool>();
            } else if (key == "chat_template") {
                if (!value.is_string()) return Bad("chat_template", "must be a template name");
                c.template_name = value.get<std::string>();
            } else if (key == "chat_template_kwargs") {
                if (!value.is_object()) return Bad("chat_template_kwargs", "must be an object");
                for (const auto& [k, v] : value.items()) c.kwargs[k] = v;
            } else {
                c.kwargs[key] = value;
            }
        }
        if (!j.contains("messages")) return Bad("messages", "is missing");
    } else {
        return absl::InvalidArgumentError("a conversation is a list of messages or an object with \"messages\"");
    }
    PP_RETURN_IF_ERROR(ValidateConversation(c));
    return c;
}

json TemplateContext(const Conversation& c, const std::string& bos_token, const std::string& eos_token) {
    json messages = json::array();
    for (const json& m : c.messages) {
        // As transformers 5 prepares messages: keys whose value is null are
        // left out (a template's `is defined` sees them absent), and the
        // reasoning (reasoning_content, thinking or reasoning, the first
        // set) is given as both `thinking` (first) and `reasoning_content`.
        const json* reasoning = nullptr;
        for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
            if (const auto r = m.find(key); r != m.end() && !r->is_null()) {
                reasoning = &*r;
                break;
            }
        }
        json copy = json::object();
        if (reasoning != nullptr) copy["thinking"] = *reasoning;
        for (const auto& [key, value] : m.items()) {
            if (value.is_null()) continue;
            copy[key] = key == "content" ? FlattenContent(value) : value;
        }
        if (reasoning != nullptr) copy["reasoning_content"] = *reasoning;
        messages.push_back(std::move(copy));
    }
    json context = json::object();
    context["messages"] = std::move(messages);
    context["tools"] = c.tools.is_array() && !c.tools.empty() ? c.tools : json();
    context["documents"] = json();
    context["add_generation_prompt"] = c.add_generation_prompt;
    context["bos_token"] = bos_token;
    context["eos_token"] = eos_token;
    for (const auto& [key, value] : c.kwargs.items()) context[key] = value;
    return context;
}

}  // namespace prepack
