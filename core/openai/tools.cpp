#include "tools.h"

#include <map>
#include <optional>
#include <string>

#include "fields.h"

namespace prepack::openai {
namespace {

using namespace fields;

// OpenAI's rule for function names (the engine's ParseFunctionTools has the
// same one).
bool ValidToolName(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '-';
        if (!ok) return false;
    }
    return true;
}

// One entry of `tools`; its function's name into *name.
absl::Status ParseTool(const Json& tool, const std::string& at, std::string* name) {
    if (!tool.is_object()) return WrongType(at, "an object", tool);
    std::optional<std::string> type;
    OPENAI_TRY(GetString(tool, "type", &type, at + "."));
    if (!type) return Invalid(at + ".type", "required (\"function\")");
    if (*type != "function") {
        return Invalid(at + ".type", "\"" + *type + "\" tools are not supported (only \"function\")");
    }
    OPENAI_TRY(OnlyKnown(tool, {"type", "function"}, at + "."));
    const Json* f = Get(tool, "function");
    if (f == nullptr) return Invalid(at + ".function", "required");
    if (!f->is_object()) return WrongType(at + ".function", "an object", *f);
    OPENAI_TRY(OnlyKnown(*f, {"name", "description", "parameters", "strict"}, at + ".function."));
    std::optional<std::string> fname, description;
    OPENAI_TRY(GetString(*f, "name", &fname, at + ".function."));
    if (!fname) return Invalid(at + ".function.name", "required");
    if (!ValidToolName(*fname)) {
        return Invalid(at + ".function.name",
                       "\"" + *fname + "\" is not a function name (1 to 64 of a-z, A-Z, 0-9, _ and -)");
    }
    OPENAI_TRY(GetString(*f, "description", &description, at + ".function."));
    if (const Json* p = Get(*f, "parameters"); p != nullptr && !p->is_object()) {
        return WrongType(at + ".function.parameters", "an object (a JSON Schema)", *p);
    }
    std::optional<bool> strict;
    OPENAI_TRY(GetBool(*f, "strict", &strict, at + ".function."));
    *name = *fname;
    return absl::OkStatus();
}

// `tool_choice` into *choice (its mode and function; the tools are not looked at).
absl::Status ParseToolChoice(const Json& tc, ToolChoice* choice) {
    using Mode = ToolChoice::Mode;
    if (tc.is_string()) {
        const std::string s = tc.get<std::string>();
        if (s == "none") {
            choice->mode = Mode::kNone;
        } else if (s == "auto") {
            choice->mode = Mode::kAuto;
        } else if (s == "required") {
            choice->mode = Mode::kRequired;
        } else {
            return Invalid("tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                                          "\"function\": {\"name\": ...}}, got \"" + s + "\"");
        }
        return absl::OkStatus();
    }
    if (!tc.is_object()) return WrongType("tool_choice", "a string or an object", tc);
    std::optional<std::string> type, name;
    OPENAI_TRY(GetString(tc, "type", &type, "tool_choice."));
    if (!type) return Invalid("tool_choice.type", "required (\"function\")");
    if (*type != "function") {
        return Invalid("tool_choice.type", "\"" + *type + "\" is not supported (only \"function\")");
    }
    OPENAI_TRY(OnlyKnown(tc, {"type", "function"}, "tool_choice."));
    const Json* f = Get(tc, "function");
    if (f == nullptr) return Invalid("tool_choice.function", "required");
    if (!f->is_object()) return WrongType("tool_choice.function", "an object", *f);
    OPENAI_TRY(OnlyKnown(*f, {"name"}, "tool_choice.function."));
    OPENAI_TRY(GetString(*f, "name", &name, "tool_choice.function."));
    if (!name) return Invalid("tool_choice.function.name", "required");
    choice->mode = Mode::kFunction;
    choice->function = *name;
    return absl::OkStatus();
}

}  // namespace

absl::Status ParseTools(const Json& b, Chat* c) {
    using Mode = ToolChoice::Mode;
    // The tools, by name (for tool_choice), in order.
    std::map<std::string, size_t> names;
    std::string listed;   // "a, b, c" for messages
    if (const Json* tools = Get(b, "tools")) {
        if (!tools->is_array()) return WrongType("tools", "a list", *tools);
        if (tools->size() > kMaxTools) {
            return Invalid("tools", "at most " + std::to_string(kMaxTools) + " tools, got " +
                                        std::to_string(tools->size()));
        }
        for (size_t k = 0; k < tools->size(); ++k) {
            const std::string at = "tools[" + std::to_string(k) + "]";
            std::string name;
            OPENAI_TRY(ParseTool((*tools)[k], at, &name));
            if (const auto it = names.find(name); it != names.end()) {
                return Invalid(at + ".function.name", "\"" + name + "\" is already the name of tools[" +
                                                          std::to_string(it->second) + "] (names must be unique)");
            }
            names.emplace(name, k);
            listed += (listed.empty() ? "" : ", ") + name;
        }
        if (!tools->empty()) c->tools_json = Dump(*tools);
    }
    ToolChoice& choice = c->tool_choice;
    choice = ToolChoice();
    // OpenAI's default: "auto" when there are tools, "none" when there are none.
    choice.mode = names.empty() ? Mode::kNone : Mode::kAuto;
    if (const Json* tc = Get(b, "tool_choice")) OPENAI_TRY(ParseToolChoice(*tc, &choice));
    if (names.empty() && choice.mode == Mode::kAuto) choice.mode = Mode::kNone;   // nothing to call
    if (names.empty() && choice.mode != Mode::kNone) {
        return Invalid("tool_choice", std::string(choice.mode == Mode::kRequired ? "\"required\"" : "a named function") +
                                          " needs tools (none are given)");
    }
    if (choice.mode == Mode::kFunction && names.count(choice.function) == 0) {
        return Invalid("tool_choice.function.name",
                       "\"" + choice.function + "\" is not one of the tools (" + listed + ")");
    }
    std::optional<bool> parallel;
    OPENAI_TRY(GetBool(b, "parallel_tool_calls", &parallel));
    choice.parallel = parallel.value_or(true);
    return absl::OkStatus();
}

}  // namespace prepack::openai
