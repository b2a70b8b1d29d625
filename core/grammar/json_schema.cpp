// JSON Schema -> GBNF entry points (json_schema.h); the work is in
// json_schema_converter.h.
#include "core/grammar/json_schema.h"

#include "absl/strings/str_cat.h"
#include "core/grammar/json_schema_converter.h"
#include "core/grammar/json_schema_primitives.h"

namespace prepack::grammar {
namespace {

// Schema documents past this are refused before parsing.
constexpr size_t kMaxSchemaTextBytes = 4 << 20;
// nlohmann::json -> ordered_json; the depth bound keeps the recursion (and
// the converter's) off the end of the stack.
constexpr int kMaxJsonDepth = 512;

absl::StatusOr<schema::Json> ToOrdered(const nlohmann::json& in, int depth) {
    if (depth > kMaxJsonDepth) {
        return absl::InvalidArgumentError(absl::StrCat("the schema nests deeper than ", kMaxJsonDepth, " levels"));
    }
    if (in.is_object()) {
        schema::Json out = schema::Json::object();
        for (auto it = in.begin(); it != in.end(); ++it) {
            PP_ASSIGN_OR_RETURN(out[it.key()], ToOrdered(it.value(), depth + 1));
        }
        return out;
    }
    if (in.is_array()) {
        schema::Json out = schema::Json::array();
        for (const nlohmann::json& item : in) {
            PP_ASSIGN_OR_RETURN(schema::Json converted, ToOrdered(item, depth + 1));
            out.push_back(std::move(converted));
        }
        return out;
    }
    switch (in.type()) {
        case nlohmann::json::value_t::null: return schema::Json(nullptr);
        case nlohmann::json::value_t::boolean: return schema::Json(in.get<bool>());
        case nlohmann::json::value_t::string: return schema::Json(in.get<std::string>());
        case nlohmann::json::value_t::number_integer: return schema::Json(in.get<int64_t>());
        case nlohmann::json::value_t::number_unsigned: return schema::Json(in.get<uint64_t>());
        case nlohmann::json::value_t::number_float: return schema::Json(in.get<double>());
        default: return absl::InvalidArgumentError("the schema holds a value that is not JSON");
    }
}

// The converter checks every value's type before reading it; should one
// read slip through, nlohmann throws. A server must not die of a request, so
// that becomes INTERNAL here (which the fuzzer, fuzz/fuzz_grammar.cc, still
// reports as a failure).
absl::StatusOr<std::string> ConvertCatching(const schema::Json& schema, const JsonSchemaOptions& options) {
    try {
        return schema::SchemaConverter(schema, options).Convert();
    } catch (const nlohmann::json::exception& e) {
        return absl::InternalError(absl::StrCat("JSON Schema front end: unchecked value in the schema (", e.what(), ")"));
    }
}

}  // namespace

// nlohmann::json keeps object keys sorted, so properties come out in
// alphabetical order here; the text overload keeps the schema's order.
absl::StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::json& schema, const JsonSchemaOptions& options) {
    PP_ASSIGN_OR_RETURN(const schema::Json ordered, ToOrdered(schema, 0));
    return ConvertCatching(ordered, options);
}

absl::StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_json, const JsonSchemaOptions& options) {
    if (schema_json.size() > kMaxSchemaTextBytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the schema is ", schema_json.size(), " bytes, over the supported ", kMaxSchemaTextBytes));
    }
    const schema::Json parsed = schema::Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return absl::InvalidArgumentError("the schema is not valid JSON");
    return ConvertCatching(parsed, options);
}

std::string JsonObjectGbnf(const JsonSchemaOptions& options) {
    // Whitespace is bounded; a negative or huge indent is clamped rather than refused (no error channel here).
    const int32_t indent = std::clamp<int32_t>(options.max_indent, 0, static_cast<int32_t>(schema::kMaxRepeat));
    return "root ::= object\n" + schema::PrimitiveRules({"object"}, indent);
}

}  // namespace prepack::grammar
