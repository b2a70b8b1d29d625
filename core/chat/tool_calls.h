// Tool calls (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`): how
// a model family writes a call, the grammar that makes the call well formed
// (the family's wrapper around each tool's `parameters` schema), and the
// calls read back out of the generated text.
//
// The family is read from the chat template that renders the conversation
// (the markup it writes for an assistant's tool_calls), never from the
// model's name. A template with no tool section gets the generic format:
// the tools are described in a system message and the answer is one JSON
// object, either {"tool_calls": [...]} or {"response": "..."}.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/status.h"
#include "core/chat/conversation.h"
#include "core/grammar/grammar_spec.h"

namespace prepack {

enum class ToolCallFormat {
    kHermes,    // Qwen 2.5/3, Hermes, SmolLM3: <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>
    kLlama3,    // Llama 3.1-3.3: {"name": N, "parameters": {...}} as the whole answer
    kMistral,   // Mistral: [TOOL_CALLS] then [{"name": N, "arguments": {...}}, ...]
    kGeneric,   // no tool section in the template: {"tool_calls": [{"name", "arguments"}]} | {"response": "..."}
};
const char* ToolCallFormatName(ToolCallFormat format);

// The format the template writes tool calls in (from its source text).
ToolCallFormat DetectToolCallFormat(std::string_view template_source);

struct FunctionTool {
    std::string            name;
    std::string            description;  // shown to the model where the format lists tools itself (generic)
    nlohmann::ordered_json parameters;   // a JSON Schema for the arguments object ({} = any object)
};

// OpenAI's tools list, checked: each {"type": "function", "function":
// {"name": [a-zA-Z0-9_-]{1,64}, "description"?, "parameters"?: object,
// "strict"?: bool}}, names unique. INVALID_ARGUMENT naming the field.
absl::StatusOr<std::vector<FunctionTool>> ParseFunctionTools(const nlohmann::ordered_json& tools);

struct ToolChoice {
    enum class Mode { kNone, kAuto, kRequired, kFunction };
    Mode        mode = Mode::kAuto;
    std::string function;        // kFunction: the tool to call
    bool        parallel = true; // more than one call in an answer
};

// What a request with tools generates under.
struct ToolCallPlan {
    ToolCallFormat       format = ToolCallFormat::kGeneric;
    // GBNF for the answer (kNone: free text). With a trigger it applies from
    // the trigger on: the output is free until it contains `trigger` (text)
    // or samples `trigger_token`, and from there the grammar reads the
    // output starting with the trigger's text.
    grammar::GrammarSpec grammar;
    std::string          trigger;
    // kGeneric: the system message describing the tools and the answer's
    // shape, merged in front of the conversation's own system message.
    std::string          system_prompt;
};

// INVALID_ARGUMENT: tool_choice names a tool that is not in `tools`, or a
// tool's parameters schema cannot be compiled (the message names the tool
// and the keyword's JSON pointer).
absl::StatusOr<ToolCallPlan> PlanToolCalls(ToolCallFormat format, const std::vector<FunctionTool>& tools,
                                           const ToolChoice& choice);

// What a chat request with tools generates under: its tools, checked; the
// plan for the format `template_source` (the source of the template that
// renders the conversation) writes calls in; and the conversation to render:
// `conversation` itself, or for the generic format a copy with the plan's
// system prompt in front of its own system message ("\n\n" between; a new
// first message when it has none). nullopt when the conversation has no
// tools or the choice is kNone (the tools are then only rendered for the
// model to see). ParseFunctionTools' and PlanToolCalls' errors.
struct ToolCallSetup {
    std::vector<FunctionTool>           tools;
    ToolCallPlan                        plan;
    std::shared_ptr<const Conversation> conversation;
};
absl::StatusOr<std::optional<ToolCallSetup>> PrepareToolCalls(std::string_view template_source,
                                                              std::shared_ptr<const Conversation> conversation,
                                                              const ToolChoice& choice);

struct ParsedToolCall {
    std::string id;          // "call_..." where the stream gave it one; ParseToolCalls leaves it ""
    std::string name;
    std::string arguments;   // JSON object text
};

struct ParsedAnswer {
    std::string                 content;   // the text that is not a call
    std::vector<ParsedToolCall> calls;
};

// The calls in a generated answer, in order; text around them is content.
// Calls naming no known tool, or whose JSON does not parse, stay content
// (an unconstrained or cut-off answer can hold anything).
ParsedAnswer ParseToolCalls(ToolCallFormat format, std::string_view text, const std::vector<FunctionTool>& tools);

}  // namespace prepack
