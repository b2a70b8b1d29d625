#include "response_format.h"

#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "fields.h"

namespace prepack::openai {
namespace {

using namespace fields;
using Kind = ResponseFormat::Kind;

// OpenAI's rule for json_schema.name.
constexpr size_t kMaxSchemaNameBytes = 64;

// A constraint and the field that set it, before conflicts are checked.
struct Found {
    std::string    source;   // the field a conflict names ("guided_json", "response_format")
    ResponseFormat format;
};

// The C ABI and the engine read grammar text up to its first NUL; a NUL
// inside would silently cut it, so it is refused here.
absl::Status NoNul(const std::string& text, const std::string& field) {
    const size_t at = text.find('\0');
    if (at == std::string::npos) return absl::OkStatus();
    return Invalid(field, "contains a NUL character (byte " + std::to_string(at) + "), which a grammar cannot hold");
}

// A required non-empty string (a regex, GBNF).
absl::Status ReadText(const Json& o, const char* key, const std::string& at, std::string* out) {
    std::optional<std::string> v;
    OPENAI_TRY(GetString(o, key, &v, at));
    if (!v) return Invalid(at + key, "required");
    if (v->empty()) return Invalid(at + key, "must not be empty");
    OPENAI_TRY(NoNul(*v, at + key));
    *out = std::move(*v);
    return absl::OkStatus();
}

// A JSON Schema given as JSON (an object, or true/false as JSON Schema
// allows) or as the text of an object (vLLM's guided_json takes both): its
// JSON text on one line.
absl::Status SchemaText(const Json& v, const std::string& field, std::string* out) {
    if (v.is_string()) {
        Json parsed;
        OPENAI_TRY(ParseObject(v.get<std::string>(), field, &parsed));
        *out = Dump(parsed);
        return absl::OkStatus();
    }
    if (!v.is_object() && !v.is_boolean()) return WrongType(field, "a JSON Schema (an object)", v);
    *out = Dump(v);
    return absl::OkStatus();
}

absl::Status ReadSchema(const Json& o, const char* key, const std::string& at, Found* out) {
    const Json* schema = Get(o, key);
    if (schema == nullptr) return Invalid(at + key, "required: the JSON Schema the output must follow");
    out->format.kind = Kind::kJsonSchema;
    out->format.field = at + key;
    return SchemaText(*schema, at + key, &out->format.text);
}

absl::Status ReadChoices(const Json& o, const char* key, const std::string& at, Found* out) {
    const Json* list = Get(o, key);
    const std::string field = at + key;
    if (list == nullptr) return absl::OkStatus();
    if (!list->is_array()) return WrongType(field, "a list of strings", *list);
    if (list->empty()) return Invalid(field, "must not be empty");
    if (list->size() > kMaxGuidedChoices) {
        return Invalid(field, "at most " + std::to_string(kMaxGuidedChoices) + " choices, got " +
                                  std::to_string(list->size()));
    }
    std::vector<std::string> choices;
    for (size_t i = 0; i < list->size(); ++i) {
        const std::string item = field + "[" + std::to_string(i) + "]";
        if (!(*list)[i].is_string()) return WrongType(item, "a string", (*list)[i]);
        choices.push_back((*list)[i].get<std::string>());
        if (choices.back().empty()) return Invalid(item, "must not be empty");
    }
    out->format.kind = Kind::kGbnf;
    out->format.text = ChoiceGbnf(choices);
    out->format.field = field;
    return absl::OkStatus();
}

// json_schema.name: OpenAI's rule (letters, digits, '_' and '-', at most 64).
absl::Status CheckSchemaName(const std::string& name, const std::string& field) {
    bool ok = !name.empty() && name.size() <= kMaxSchemaNameBytes;
    for (const char c : name) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
    }
    if (ok) return absl::OkStatus();
    return Invalid(field, "must be 1 to 64 letters, digits, underscores or dashes");
}

absl::Status ParseJsonSchemaFormat(const Json& rf, Found* out) {
    const std::string at = "response_format.json_schema";
    OPENAI_TRY(OnlyKnown(rf, {"type", "json_schema"}, "response_format."));
    const Json* js = Get(rf, "json_schema");
    if (js == nullptr) return Invalid(at, "required ({\"name\", \"schema\", \"strict\"?})");
    if (!js->is_object()) return WrongType(at, "an object", *js);
    OPENAI_TRY(OnlyKnown(*js, {"name", "description", "schema", "strict"}, at + "."));
    std::optional<std::string> name, description;
    std::optional<bool> strict;
    OPENAI_TRY(GetString(*js, "name", &name, at + "."));
    if (!name) return Invalid(at + ".name", "required");
    OPENAI_TRY(CheckSchemaName(*name, at + ".name"));
    // The description tells OpenAI's model what the format is for; it is
    // accepted (clients send it) and, as by vLLM, not shown to the model.
    OPENAI_TRY(GetString(*js, "description", &description, at + "."));
    OPENAI_TRY(GetBool(*js, "strict", &strict, at + "."));
    OPENAI_TRY(ReadSchema(*js, "schema", at + ".", out));
    out->format.name = *name;
    out->format.strict = strict.value_or(false);
    return absl::OkStatus();
}

// response_format; *out stays kText for {"type": "text"}.
absl::Status ParseResponseFormatObject(const Json& rf, Found* out) {
    const std::string at = "response_format.";
    if (!rf.is_object()) return WrongType("response_format", "an object", rf);
    std::optional<std::string> type;
    OPENAI_TRY(GetString(rf, "type", &type, at));
    if (!type) return Invalid(at + "type", "required");
    out->source = "response_format";
    if (*type == "text") return OnlyKnown(rf, {"type"}, at);
    if (*type == "json_object") {
        // llama.cpp's extension: {"type": "json_object", "schema": {...}}.
        OPENAI_TRY(OnlyKnown(rf, {"type", "schema"}, at));
        if (Get(rf, "schema") != nullptr) return ReadSchema(rf, "schema", at, out);
        out->format.kind = Kind::kJsonObject;
        out->format.field = "response_format";
        return absl::OkStatus();
    }
    if (*type == "json_schema") return ParseJsonSchemaFormat(rf, out);
    if (*type == "regex" || *type == "grammar") {
        OPENAI_TRY(OnlyKnown(rf, {"type", type->c_str()}, at));
        out->format.kind = *type == "regex" ? Kind::kRegex : Kind::kGbnf;
        out->format.field = at + *type;
        return ReadText(rf, type->c_str(), at, &out->format.text);
    }
    return Invalid(at + "type", "\"" + *type +
                                    "\" is not supported (\"text\", \"json_object\", \"json_schema\", and "
                                    "prepack's \"regex\" and \"grammar\")");
}

// vLLM's structured_outputs {json | json_object | regex | grammar | choice}.
absl::Status ParseStructuredOutputs(const Json& so, std::vector<Found>* found) {
    const std::string at = "structured_outputs.";
    if (!so.is_object()) return WrongType("structured_outputs", "an object", so);
    OPENAI_TRY(OnlyKnown(so, {"json", "json_object", "regex", "grammar", "choice"}, at));
    if (Get(so, "json") != nullptr) {
        Found f{"structured_outputs.json", {}};
        OPENAI_TRY(ReadSchema(so, "json", at, &f));
        found->push_back(std::move(f));
    }
    std::optional<bool> json_object;
    OPENAI_TRY(GetBool(so, "json_object", &json_object, at));
    if (json_object.value_or(false)) {
        Found f{"structured_outputs.json_object", {}};
        f.format.kind = Kind::kJsonObject;
        f.format.field = f.source;
        found->push_back(std::move(f));
    }
    for (const auto& [key, kind] : {std::pair{"regex", Kind::kRegex}, std::pair{"grammar", Kind::kGbnf}}) {
        if (Get(so, key) == nullptr) continue;
        Found f{at + key, {}};
        f.format.kind = kind;
        f.format.field = f.source;
        OPENAI_TRY(ReadText(so, key, at, &f.format.text));
        found->push_back(std::move(f));
    }
    if (Get(so, "choice") != nullptr) {
        Found f{"structured_outputs.choice", {}};
        OPENAI_TRY(ReadChoices(so, "choice", at, &f));
        found->push_back(std::move(f));
    }
    return absl::OkStatus();
}

}  // namespace

const std::set<std::string_view>& StructuredOutputFields() {
    static const std::set<std::string_view> kFields = {"response_format", "guided_json",        "guided_regex",
                                                       "guided_grammar",  "guided_choice",      "structured_outputs",
                                                       "grammar"};
    return kFields;
}

std::string ChoiceGbnf(const std::vector<std::string>& choices) {
    std::string out = "root ::= ";
    for (size_t i = 0; i < choices.size(); ++i) {
        if (i > 0) out += " | ";
        out += '"';
        for (const unsigned char c : choices[i]) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                default:
                    if (c < 0x20 || c == 0x7f) {
                        char hex[8];
                        std::snprintf(hex, sizeof hex, "\\x%02X", c);
                        out += hex;
                    } else {
                        out += static_cast<char>(c);
                    }
            }
        }
        out += '"';
    }
    return out;
}

absl::Status ParseResponseFormat(const Json& b, ResponseFormat* out) {
    std::vector<Found> found;
    if (const Json* rf = Get(b, "response_format")) {
        Found f;
        OPENAI_TRY(ParseResponseFormatObject(*rf, &f));
        if (f.format.active()) found.push_back(std::move(f));
    }
    if (const Json* schema = Get(b, "guided_json")) {
        Found f{"guided_json", {}};
        f.format.kind = Kind::kJsonSchema;
        f.format.field = "guided_json";
        OPENAI_TRY(SchemaText(*schema, "guided_json", &f.format.text));
        found.push_back(std::move(f));
    }
    // Top-level GBNF: vLLM's guided_grammar and llama.cpp's grammar.
    for (const auto& [key, kind] : {std::pair{"guided_regex", Kind::kRegex}, std::pair{"guided_grammar", Kind::kGbnf},
                                    std::pair{"grammar", Kind::kGbnf}}) {
        if (Get(b, key) == nullptr) continue;
        Found f{key, {}};
        f.format.kind = kind;
        f.format.field = key;
        OPENAI_TRY(ReadText(b, key, "", &f.format.text));
        found.push_back(std::move(f));
    }
    if (Get(b, "guided_choice") != nullptr) {
        Found f{"guided_choice", {}};
        OPENAI_TRY(ReadChoices(b, "guided_choice", "", &f));
        found.push_back(std::move(f));
    }
    if (const Json* so = Get(b, "structured_outputs")) OPENAI_TRY(ParseStructuredOutputs(*so, &found));
    if (found.size() > 1) {
        return Invalid(found[1].source, "conflicts with " + found[0].source +
                                            ": a request takes one structured-output constraint");
    }
    *out = found.empty() ? ResponseFormat{} : std::move(found[0].format);
    return absl::OkStatus();
}

}  // namespace prepack::openai
