#include "core/chat/tool_calls.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/grammar/gbnf_compose.h"
#include "core/grammar/json_schema.h"

namespace prepack {
namespace {

using Json = nlohmann::ordered_json;
using grammar::GbnfLiteral;

bool ValidToolName(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

// Each tool's arguments grammar under the prefix "tool{i}-"; its root is
// "tool{i}-root".
absl::StatusOr<std::string> ArgumentRules(const std::vector<FunctionTool>& tools, const std::vector<size_t>& which) {
    std::string rules;
    for (size_t i : which) {
        const FunctionTool& t = tools[i];
        std::string gbnf;
        if (t.parameters.is_null() || (t.parameters.is_object() && t.parameters.empty())) {
            gbnf = grammar::JsonObjectGbnf();
        } else {
            // The text overload keeps the schema's property order (the call is
            // written in the order the tool lists its parameters).
            const std::string schema = t.parameters.dump();
            absl::StatusOr<std::string> g = grammar::JsonSchemaToGbnf(std::string_view(schema));
            if (!g.ok()) {
                return absl::InvalidArgumentError(
                    absl::StrCat("tools[", i, "].function.parameters (tool \"", t.name, "\"): ", g.status().message()));
            }
            gbnf = *std::move(g);
        }
        PP_ASSIGN_OR_RETURN(std::string prefixed, grammar::PrefixGbnfRules(gbnf, absl::StrCat("tool", i, "-")));
        absl::StrAppend(&rules, prefixed, "\n");
    }
    return rules;
}

// call ::= call-i | ...: one alternative per tool, each `open` + the name +
// `between` + the tool's arguments + `close`.
std::string CallRules(const std::vector<FunctionTool>& tools, const std::vector<size_t>& which, const std::string& open,
                      const std::string& between, const std::string& close) {
    std::string alts;
    std::string defs;
    for (size_t i : which) {
        absl::StrAppend(&alts, alts.empty() ? "" : " | ", "call-", i);
        absl::StrAppend(&defs, "call-", i, " ::= ", GbnfLiteral(absl::StrCat(open, tools[i].name, between)), " tool", i,
                        "-root ", GbnfLiteral(close), "\n");
    }
    return absl::StrCat("call ::= ", alts, "\n", defs);
}

// The JSON whitespace the generic format allows between its own tokens.
constexpr const char* kGenericSpace = "space ::= \" \"?\n";
constexpr const char* kJsonString =
    "json-string ::= \"\\\"\" ( [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} ) )* \"\\\"\"\n";

// Worded with examples rather than placeholders: small models copy a
// placeholder such as "YOUR ANSWER" into their answer verbatim.
std::string GenericSystemPrompt(const ToolChoice& choice, const Json& listed) {
    std::string p = "You can use the tools listed below. Reply with one JSON object and nothing else.\n";
    absl::StrAppend(&p, "To call a tool, reply like this: {\"tool_calls\": [{\"name\": \"",
                    listed.empty() ? "" : listed[0]["name"].get<std::string>(),
                    "\", \"arguments\": {...}}]} (with the name of one of the tools below and arguments that "
                    "follow its parameters).\n");
    if (choice.mode == ToolChoice::Mode::kAuto) {
        absl::StrAppend(&p, "To answer without a tool, reply like this: {\"response\": \"The capital of France is "
                            "Paris.\"} (with your own answer).\n");
    }
    if (!choice.parallel) absl::StrAppend(&p, "Call one tool at a time.\n");
    if (choice.mode == ToolChoice::Mode::kFunction) absl::StrAppend(&p, "Call the tool \"", choice.function, "\".\n");
    absl::StrAppend(&p, "\nTools:\n", listed.dump(2));
    return p;
}

}  // namespace

const char* ToolCallFormatName(ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::kHermes:  return "hermes";
        case ToolCallFormat::kLlama3:  return "llama3";
        case ToolCallFormat::kMistral: return "mistral";
        case ToolCallFormat::kGeneric: return "generic";
    }
    return "generic";
}

ToolCallFormat DetectToolCallFormat(std::string_view source) {
    // The markup each family's template writes for an assistant's calls.
    if (source.find("<tool_call>") != std::string_view::npos) return ToolCallFormat::kHermes;
    if (source.find("[TOOL_CALLS]") != std::string_view::npos) return ToolCallFormat::kMistral;
    if (source.find("\"parameters\": ") != std::string_view::npos && source.find("tool_calls") != std::string_view::npos) {
        return ToolCallFormat::kLlama3;
    }
    return ToolCallFormat::kGeneric;
}

absl::StatusOr<std::vector<FunctionTool>> ParseFunctionTools(const Json& tools) {
    std::vector<FunctionTool> out;
    if (tools.is_null()) return out;
    if (!tools.is_array()) return absl::InvalidArgumentError("tools: must be a list");
    std::set<std::string> names;
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string at = absl::StrCat("tools[", i, "]");
        const Json& t = tools[i];
        if (!t.is_object()) return absl::InvalidArgumentError(at + ": must be an object");
        auto type = t.find("type");
        if (type == t.end() || !type->is_string() || *type != "function") {
            return absl::InvalidArgumentError(at + ".type: must be \"function\"");
        }
        auto fn = t.find("function");
        if (fn == t.end() || !fn->is_object()) return absl::InvalidArgumentError(at + ".function: must be an object");
        auto name = fn->find("name");
        if (name == fn->end() || !name->is_string() || !ValidToolName(name->get<std::string>())) {
            return absl::InvalidArgumentError(at + ".function.name: must be 1-64 characters of a-z, A-Z, 0-9, _ and -");
        }
        FunctionTool tool;
        tool.name = name->get<std::string>();
        if (!names.insert(tool.name).second) {
            return absl::InvalidArgumentError(absl::StrCat(at, ".function.name: \"", tool.name, "\" is listed twice"));
        }
        if (auto d = fn->find("description"); d != fn->end() && !d->is_null()) {
            if (!d->is_string()) return absl::InvalidArgumentError(at + ".function.description: must be a string");
            tool.description = d->get<std::string>();
        }
        if (auto p = fn->find("parameters"); p != fn->end() && !p->is_null()) {
            if (!p->is_object()) return absl::InvalidArgumentError(at + ".function.parameters: must be an object");
            tool.parameters = *p;
        }
        out.push_back(std::move(tool));
    }
    return out;
}

absl::StatusOr<ToolCallPlan> PlanToolCalls(ToolCallFormat format, const std::vector<FunctionTool>& tools,
                                           const ToolChoice& choice) {
    ToolCallPlan plan;
    plan.format = format;
    if (choice.mode == ToolChoice::Mode::kNone || tools.empty()) return plan;
    std::vector<size_t> which;
    for (size_t i = 0; i < tools.size(); ++i) {
        if (choice.mode != ToolChoice::Mode::kFunction || tools[i].name == choice.function) which.push_back(i);
    }
    if (which.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tool_choice: names the function \"", choice.function, "\", which is not in tools"));
    }
    PP_ASSIGN_OR_RETURN(std::string args, ArgumentRules(tools, which));
    const bool free_first = choice.mode == ToolChoice::Mode::kAuto;
    std::string root;
    switch (format) {
        case ToolCallFormat::kHermes:
            root = choice.parallel ? "root ::= tc ( \"\\n\" tc )*\n" : "root ::= tc\n";
            absl::StrAppend(&root, "tc ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n",
                            CallRules(tools, which, "{\"name\": \"", "\", \"arguments\": ", "}"));
            if (free_first) plan.trigger = "<tool_call>";
            break;
        case ToolCallFormat::kLlama3:
            // The template renders (and the model was taught) one call per turn.
            root = absl::StrCat("root ::= call\n", CallRules(tools, which, "{\"name\": \"", "\", \"parameters\": ", "}"));
            if (free_first) plan.trigger = "{\"name\"";
            break;
        case ToolCallFormat::kMistral:
            root = choice.parallel ? "root ::= \"[\" call ( \", \" call )* \"]\"\n" : "root ::= \"[\" call \"]\"\n";
            absl::StrAppend(&root, CallRules(tools, which, "{\"name\": \"", "\", \"arguments\": ", "}"));
            if (free_first) plan.trigger = "[{\"name\"";
            break;
        case ToolCallFormat::kGeneric: {
            const std::string calls = choice.parallel ? "call ( space \",\" space call )*" : "call";
            root = absl::StrCat("calls ::= \"{\" space \"\\\"tool_calls\\\"\" space \":\" space \"[\" space ", calls,
                                " space \"]\" space \"}\"\n");
            if (free_first) {
                absl::StrAppend(&root, "root ::= calls | \"{\" space \"\\\"response\\\"\" space \":\" space json-string space \"}\"\n",
                                kJsonString);
            } else {
                absl::StrAppend(&root, "root ::= calls\n");
            }
            absl::StrAppend(&root, kGenericSpace);
            std::string alts, defs;
            for (size_t i : which) {
                absl::StrAppend(&alts, alts.empty() ? "" : " | ", "call-", i);
                absl::StrAppend(&defs, "call-", i, " ::= \"{\" space \"\\\"name\\\"\" space \":\" space ",
                                GbnfLiteral(absl::StrCat("\"", tools[i].name, "\"")),
                                " space \",\" space \"\\\"arguments\\\"\" space \":\" space tool", i, "-root space \"}\"\n");
            }
            absl::StrAppend(&root, "call ::= ", alts, "\n", defs);
            Json listed = Json::array();
            for (size_t i : which) {
                Json t = {{"name", tools[i].name}};
                if (!tools[i].description.empty()) t["description"] = tools[i].description;
                t["parameters"] = tools[i].parameters.is_null() ? Json::object() : tools[i].parameters;
                listed.push_back(std::move(t));
            }
            plan.system_prompt = GenericSystemPrompt(choice, listed);
            break;
        }
    }
    plan.grammar.kind = grammar::GrammarSpec::Kind::kGbnf;
    plan.grammar.text = absl::StrCat(root, args);
    return plan;
}

namespace {

// `conversation` with `prompt` in front of its system message (or as one).
std::shared_ptr<const Conversation> WithSystemPrompt(const Conversation& conversation, const std::string& prompt) {
    auto out = std::make_shared<Conversation>(conversation);
    Json& messages = out->messages;
    const bool has_system = !messages.empty() && messages[0].is_object() && messages[0].value("role", "") == "system";
    if (!has_system) {
        messages.insert(messages.begin(), Json{{"role", "system"}, {"content", prompt}});
        return out;
    }
    Json& content = messages[0]["content"];
    if (content.is_string() && !content.get<std::string>().empty()) {
        content = prompt + "\n\n" + content.get<std::string>();
    } else if (content.is_array() && !content.empty()) {
        // Text parts: the template context joins them with "\n", so the
        // prompt goes in as a part of its own, ending in a blank line.
        content.insert(content.begin(), Json{{"type", "text"}, {"text", prompt + "\n"}});
    } else {
        content = prompt;
    }
    return out;
}

}  // namespace

absl::StatusOr<std::optional<ToolCallSetup>> PrepareToolCalls(std::string_view template_source,
                                                              std::shared_ptr<const Conversation> conversation,
                                                              const ToolChoice& choice) {
    if (!conversation || choice.mode == ToolChoice::Mode::kNone || !conversation->tools.is_array() ||
        conversation->tools.empty()) {
        return std::optional<ToolCallSetup>();
    }
    ToolCallSetup setup;
    PP_ASSIGN_OR_RETURN(setup.tools, ParseFunctionTools(conversation->tools));
    PP_ASSIGN_OR_RETURN(setup.plan, PlanToolCalls(DetectToolCallFormat(template_source), setup.tools, choice));
    setup.conversation = setup.plan.system_prompt.empty() ? std::move(conversation)
                                                          : WithSystemPrompt(*conversation, setup.plan.system_prompt);
    return std::optional<ToolCallSetup>(std::move(setup));
}

namespace {

// A call object as the families write it: {"name": N, "arguments" |
// "parameters": {...} or a JSON string holding one}.
bool ReadCall(const nlohmann::json& obj, const std::set<std::string>& known, ParsedToolCall* out) {
    if (!obj.is_object()) return false;
    auto name = obj.find("name");
    if (name == obj.end() || !name->is_string() || !known.count(name->get<std::string>())) return false;
    auto args = obj.find("arguments");
    if (args == obj.end()) args = obj.find("parameters");
    nlohmann::json value = nlohmann::json::object();
    if (args != obj.end()) {
        value = *args;
        if (value.is_string()) {
            value = nlohmann::json::parse(value.get<std::string>(), nullptr, false);
        }
        if (!value.is_object()) return false;
    }
    out->name = name->get<std::string>();
    out->arguments = value.dump();
    return true;
}

std::string_view Trim(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

nlohmann::json ParseJson(std::string_view text) { return nlohmann::json::parse(text, nullptr, false); }

}  // namespace

ParsedAnswer ParseToolCalls(ToolCallFormat format, std::string_view text, const std::vector<FunctionTool>& tools) {
    std::set<std::string> known;
    for (const FunctionTool& t : tools) known.insert(t.name);
    ParsedAnswer out;
    switch (format) {
        case ToolCallFormat::kHermes: {
            constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
            size_t at = 0;
            while (at < text.size()) {
                const size_t open = text.find(kOpen, at);
                if (open == std::string_view::npos) break;
                const size_t close = text.find(kClose, open + kOpen.size());
                if (close == std::string_view::npos) break;
                ParsedToolCall call;
                if (!ReadCall(ParseJson(text.substr(open + kOpen.size(), close - open - kOpen.size())), known, &call)) {
                    break;
                }
                out.content += text.substr(at, open - at);
                out.calls.push_back(std::move(call));
                at = close + kClose.size();
            }
            out.content += text.substr(at);
            out.content = std::string(Trim(out.content));
            return out;
        }
        case ToolCallFormat::kLlama3: {
            std::string_view body = Trim(text);
            if (body.substr(0, 14) == "<|python_tag|>") body = Trim(body.substr(14));
            ParsedToolCall call;
            if (!body.empty() && body[0] == '{' && ReadCall(ParseJson(body), known, &call)) {
                out.calls.push_back(std::move(call));
                return out;
            }
            break;
        }
        case ToolCallFormat::kMistral: {
            std::string_view body = Trim(text);
            const size_t tag = body.find("[TOOL_CALLS]");
            std::string_view before;
            if (tag != std::string_view::npos) {
                before = body.substr(0, tag);
                body = Trim(body.substr(tag + 12));
            } else if (body.empty() || body[0] != '[') {
                break;
            }
            const nlohmann::json list = ParseJson(body);
            if (!list.is_array() || list.empty()) break;
            std::vector<ParsedToolCall> calls;
            for (const auto& item : list) {
                ParsedToolCall call;
                if (!ReadCall(item, known, &call)) return ParsedAnswer{std::string(text), {}};
                calls.push_back(std::move(call));
            }
            out.content = std::string(Trim(before));
            out.calls = std::move(calls);
            return out;
        }
        case ToolCallFormat::kGeneric: {
            const nlohmann::json obj = ParseJson(Trim(text));
            if (!obj.is_object()) break;
            if (auto list = obj.find("tool_calls"); list != obj.end() && list->is_array() && !list->empty()) {
                std::vector<ParsedToolCall> calls;
                for (const auto& item : *list) {
                    ParsedToolCall call;
                    if (!ReadCall(item, known, &call)) return ParsedAnswer{std::string(text), {}};
                    calls.push_back(std::move(call));
                }
                out.calls = std::move(calls);
                return out;
            }
            if (auto r = obj.find("response"); r != obj.end() && r->is_string() && obj.size() == 1) {
                out.content = r->get<std::string>();
                return out;
            }
            break;
        }
    }
    out.content = std::string(text);
    return out;
}

}  // namespace prepack
