// A conversation as callers send it (OpenAI's chat message shape), the one
// type every surface (CLI, C ABI, gRPC, HTTP, bindings) converts to, and the
// variables a chat template renders it with.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace prepack {

struct Conversation {
    // [{"role": "system"|"user"|"assistant"|"tool"|..., "content": "..." or
    //   [{"type": "text", "text": "..."}, ...] or null, optional "name",
    //   "tool_calls": [...], "tool_call_id", "reasoning_content"}, ...]
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    // null, or the tools the model may call: [{"type": "function",
    // "function": {"name", "description", "parameters": JSON schema}}, ...].
    nlohmann::ordered_json tools;
    // Further template variables (e.g. {"enable_thinking": false}).
    nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
    // End the prompt with the assistant's opening markup, so the model answers.
    bool add_generation_prompt = true;
    // Which of the model's templates: "" = the default one ("tool_use" when
    // tools are given and the model has such a template).
    std::string template_name;
};

// JSON nesting a conversation may have (messages, tools, kwargs each).
constexpr int kMaxConversationDepth = 64;

// Checks the shape, naming the first bad field ("messages[2].role must be a
// string"): at least one message; each an object with a non-empty string
// role; content a string, null, or a list of text parts; tool_calls a list
// of objects; tools null or a list of objects; kwargs an object that does
// not redefine messages, tools or add_generation_prompt; nothing nested
// deeper than kMaxConversationDepth. INVALID_ARGUMENT.
absl::Status ValidateConversation(const Conversation& conversation);

// A conversation from JSON: either an object {"messages": [...], "tools":
// [...], "add_generation_prompt": bool, "chat_template_kwargs": {...},
// other keys become kwargs too} or a bare list of messages. Validated.
absl::StatusOr<Conversation> ConversationFromJson(const nlohmann::ordered_json& json);

// The template's variables, as transformers' apply_chat_template passes them:
// messages (null-valued keys left out and the reasoning given as both
// `thinking` and `reasoning_content`, as transformers 5 does; text parts joined by "\n" into one
// string, as vLLM does for templates that expect string content), tools
// (null when none), documents (null), add_generation_prompt, bos_token,
// eos_token, then the kwargs.
nlohmann::ordered_json TemplateContext(const Conversation& conversation, const std::string& bos_token,
                                       const std::string& eos_token);

}  // namespace prepack
