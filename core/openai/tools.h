// Tool calling in a chat request body (openai/request.h: Chat::tools_json
// and ToolChoice): OpenAI's `tools`, `tool_choice` and
// `parallel_tool_calls`, checked for shape. Internal to the openai library.
//
// The engine checks the tools again where it plans the calls (core/chat's
// ParseFunctionTools and PlanToolCalls: a tool's parameters schema is only
// compiled there); here is what makes a body's mistake a 400 naming its
// JSON field before anything runs, on every surface that reads bodies
// (prepackd's HTTP API, GenerateBatch's batch lines, `prepack batch`).
#pragma once

#include "absl/status/status.h"
#include "openai/json_text.h"
#include "openai/request.h"

namespace prepack::openai {

// Reads `tools`, `tool_choice` and `parallel_tool_calls` of `body` into *chat:
//   tools: a list of at most kMaxTools {"type": "function", "function":
//     {"name": [a-zA-Z0-9_-]{1,64}, "description"?: string, "parameters"?:
//     object, "strict"?: bool}}, names unique ([] is no tools);
//   tool_choice: "none" | "auto" | "required" | {"type": "function",
//     "function": {"name": one of the tools}}; without it, "auto" when there
//     are tools (OpenAI's default); "required" and a named function need tools;
//   parallel_tool_calls: a boolean (default true).
// INVALID_ARGUMENT naming the field ("tools[1].function.name",
// "tool_choice.function.name").
absl::Status ParseTools(const Json& body, Chat* chat);

}  // namespace prepack::openai
