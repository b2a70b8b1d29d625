#include "core/grammar/json_schema_converter.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/grammar/json_schema_keywords.h"
#include "core/grammar/json_schema_merge.h"
#include "core/grammar/json_schema_numbers.h"
#include "core/grammar/json_schema_patterns.h"
#include "core/grammar/json_schema_primitives.h"
#include "core/grammar/json_schema_refs.h"
#include "core/grammar/json_schema_text.h"

namespace prepack::grammar::schema {
namespace {

constexpr char kQuote[] = R"("\"")";     // GBNF for one '"'
constexpr char kSep[] = R"(ws "," ws)";   // between array items / object members
constexpr int kMaxLiteralDepth = 128;               // nesting inside an enum/const value
constexpr int kMaxOneOfCheckDepth = 8;              // anyOf/$ref levels looked through for oneOf

bool IsFalse(const Json& s) { return s.is_boolean() && !s.get<bool>(); }
bool IsTrue(const Json& s) { return s.is_boolean() && s.get<bool>(); }


std::string Group(const std::string& expr) { return absl::StrCat("( ", expr, " )"); }

// `atom` repeated min..max times (max nullopt: unbounded).
std::string Repeat(const std::string& atom, int64_t min, std::optional<int64_t> max) {
    if (max && *max == 0) return "";
    if (!max) {
        if (min == 0) return atom + "*";
        if (min == 1) return atom + "+";
        return absl::StrCat(atom, "{", min, ",}");
    }
    if (min == *max) return min == 1 ? atom : absl::StrCat(atom, "{", min, "}");
    if (min == 0 && *max == 1) return atom + "?";
    return absl::StrCat(atom, "{", min, ",", *max, "}");
}

// The text of a schema's "$ref", or an error naming where it is not a string.
absl::StatusOr<std::string> RefText(const Json& s, const std::string& where) {
    const Json& ref = s.at("$ref");
    if (!ref.is_string()) return absl::InvalidArgumentError(absl::StrCat("$ref at ", where, " must be a string"));
    return ref.get<std::string>();
}

bool IsBareRef(const Json& s) {
    if (!s.is_object() || !s.contains("$ref")) return false;
    for (auto it = s.begin(); it != s.end(); ++it) {
        if (it.key() == "$ref" || it.key() == "$defs" || it.key() == "definitions") continue;
        if (ClassifyKeyword(it.key()) != KeywordClass::kAnnotation) return false;
    }
    return true;
}

bool HasValidationKeywords(const Json& s) {
    for (auto it = s.begin(); it != s.end(); ++it) {
        if (it.key() == "$defs" || it.key() == "definitions") continue;
        if (it.key() == "nullable" && !s.contains("type")) continue;  // OpenAPI: nullable needs a type
        if (ClassifyKeyword(it.key()) != KeywordClass::kAnnotation) return true;
    }
    return false;
}

uint32_t TypeOfValue(const Json& v) {
    switch (v.type()) {
        case Json::value_t::null: return kNullType;
        case Json::value_t::boolean: return kBooleanType;
        case Json::value_t::string: return kStringType;
        case Json::value_t::array: return kArrayType;
        case Json::value_t::object: return kObjectType;
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned: return kIntegerType | kNumberType;
        case Json::value_t::number_float: {
            const double d = v.get<double>();
            return std::isfinite(d) && d == std::floor(d) ? kIntegerType | kNumberType : kNumberType;
        }
        default: return 0;
    }
}

// The types a schema without "type" produces: those its keywords are
// about ({"properties": ...} is meant to be an object), else any value.
uint32_t InferTypes(const Json& schema) {
    uint32_t types = 0;
    for (auto it = schema.begin(); it != schema.end(); ++it) {
        switch (ClassifyKeyword(it.key())) {
            case KeywordClass::kObject: types |= kObjectType; break;
            case KeywordClass::kArray: types |= kArrayType; break;
            case KeywordClass::kString: types |= kStringType; break;
            case KeywordClass::kNumeric: types |= kNumberType; break;
            default: break;
        }
    }
    return types == 0 ? kAllTypes : types;
}

absl::StatusOr<std::optional<int64_t>> ReadCount(const Json& schema, const char* keyword, const std::string& pointer) {
    const auto it = schema.find(keyword);
    if (it == schema.end()) return std::optional<int64_t>();
    if (it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0)) {
        return std::optional<int64_t>(std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX));
    }
    if (it->is_number_float() && it->get<double>() >= 0 && it->get<double>() == std::floor(it->get<double>())) {
        return std::optional<int64_t>(it->get<double>() > 9e18 ? INT64_MAX : static_cast<int64_t>(it->get<double>()));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("\"", keyword, "\" at ", Where(pointer), " must be a non-negative integer"));
}

// A minimum count past what a grammar repeats is refused; a maximum past it
// is lowered to it (fewer values, all still valid).
absl::Status CheckRepeatBounds(const char* min_keyword, int64_t min, std::optional<int64_t>* max, const char* max_keyword,
                               const std::string& pointer) {
    if (min > kMaxRepeat) {
        return absl::ResourceExhaustedError(absl::StrCat("\"", min_keyword, "\" ", min, " at ", Where(pointer),
                                                         " is over the supported ", kMaxRepeat));
    }
    if (*max && min > **max) {
        return absl::InvalidArgumentError(absl::StrCat("no value satisfies \"", min_keyword, "\" ", min, " and \"",
                                                       max_keyword, "\" ", **max, " at ", Where(pointer)));
    }
    if (*max && **max > kMaxRepeat) *max = kMaxRepeat;
    return absl::OkStatus();
}

// GBNF for exactly the JSON text of `v` (whitespace allowed between tokens).
absl::StatusOr<std::string> LiteralGbnf(const Json& v, const std::string& pointer, int depth) {
    if (depth > kMaxLiteralDepth) {
        return absl::ResourceExhaustedError(
            absl::StrCat("an enum/const value at ", Where(pointer), " nests deeper than ", kMaxLiteralDepth));
    }
    switch (v.type()) {
        case Json::value_t::string: return GbnfLiteral(JsonStringText(v.get_ref<const std::string&>()));
        case Json::value_t::number_float: {
            const double d = v.get<double>();
            // 3.0 also as "3": Python (the validator) compares 3 == 3.0.
            if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9007199254740992.0) {
                const std::string digits = std::to_string(static_cast<int64_t>(d));
                return Group(absl::StrCat(GbnfLiteral(digits), " | ", GbnfLiteral(digits + ".0")));
            }
            return GbnfLiteral(v.dump());
        }
        case Json::value_t::array: {
            if (v.empty()) return std::string(R"("[" ws "]")");
            std::vector<std::string> items;
            for (const Json& item : v) {
                PP_ASSIGN_OR_RETURN(std::string text, LiteralGbnf(item, pointer, depth + 1));
                items.push_back(std::move(text));
            }
            return absl::StrCat(R"("[" ws )", absl::StrJoin(items, absl::StrCat(" ", kSep, " ")), R"( ws "]")");
        }
        case Json::value_t::object: {
            if (v.empty()) return std::string(R"("{" ws "}")");
            std::vector<std::string> members;
            for (auto it = v.begin(); it != v.end(); ++it) {
                PP_ASSIGN_OR_RETURN(std::string text, LiteralGbnf(it.value(), pointer, depth + 1));
                members.push_back(absl::StrCat(GbnfLiteral(JsonStringText(it.key())), R"( ws ":" ws )", text));
            }
            return absl::StrCat(R"("{" ws )", absl::StrJoin(members, absl::StrCat(" ", kSep, " ")), R"( ws "}")");
        }
        default: return GbnfLiteral(v.dump());
    }
}

size_t CodePointCount(std::string_view s) {
    size_t n = 0;
    for (const char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    return n;
}

// The identifiers a GBNF body refers to (outside literals and classes).
void CollectReferences(std::string_view body, std::set<std::string, std::less<>>* out) {
    for (size_t i = 0; i < body.size();) {
        const char c = body[i];
        if (c == '"' || c == '[') {
            const char close = c == '"' ? '"' : ']';
            for (++i; i < body.size() && body[i] != close; ++i) {
                if (body[i] == '\\') ++i;
            }
            ++i;
        } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') {
            size_t j = i;
            while (j < body.size() && (std::isalnum(static_cast<unsigned char>(body[j])) || body[j] == '-')) ++j;
            out->emplace(body.substr(i, j - i));
            i = j;
        } else if (c == '{') {
            while (i < body.size() && body[i] != '}') ++i;
        } else {
            ++i;
        }
    }
}

}  // namespace

std::string Where(const std::string& pointer) { return pointer.empty() ? "the root" : pointer; }

absl::StatusOr<uint32_t> DeclaredTypes(const Json& schema, const std::string& pointer) {
    const auto it = schema.find("type");
    if (it == schema.end()) return static_cast<uint32_t>(kAllTypes);
    std::vector<Json> names;
    if (it->is_string()) {
        names.push_back(*it);
    } else if (it->is_array()) {
        names.assign(it->begin(), it->end());
    } else {
        return absl::InvalidArgumentError(absl::StrCat("\"type\" at ", Where(pointer), " must be a string or an array"));
    }
    uint32_t types = 0;
    for (const Json& name : names) {
        const std::string t = name.is_string() ? name.get<std::string>() : "";
        if (t == "null") {
            types |= kNullType;
        } else if (t == "boolean") {
            types |= kBooleanType;
        } else if (t == "object") {
            types |= kObjectType;
        } else if (t == "array") {
            types |= kArrayType;
        } else if (t == "string") {
            types |= kStringType;
        } else if (t == "integer") {
            types |= kIntegerType;
        } else if (t == "number") {
            types |= kNumberType | kIntegerType;
        } else {
            return absl::InvalidArgumentError(absl::StrCat("unknown type ", name.dump(), " at ", Where(pointer)));
        }
    }
    if (const auto n = schema.find("nullable"); n != schema.end() && IsTrue(*n)) types |= kNullType;
    if (types == 0) {
        return absl::InvalidArgumentError(absl::StrCat("\"type\" at ", Where(pointer), " is empty: no value is valid"));
    }
    return types;
}

absl::StatusOr<std::string> SchemaConverter::NewRule(const std::string& hint) {
    if (static_cast<int32_t>(rule_order_.size()) >= kMaxRules) {
        return absl::ResourceExhaustedError(absl::StrCat("the schema needs more than ", kMaxRules, " grammar rules"));
    }
    std::string name = hint;
    for (int suffix = 2; rule_bodies_.count(name) || IsPrimitiveRuleName(name); ++suffix) {
        name = absl::StrCat(hint, "-", suffix);
    }
    rule_order_.push_back(name);
    rule_bodies_[name] = "";
    return name;
}

void SchemaConverter::Define(const std::string& name, std::string body) { rule_bodies_[name] = std::move(body); }

absl::StatusOr<std::string> SchemaConverter::Convert() {
    if (options_.max_indent < 0 || options_.max_indent > kMaxRepeat) {
        return absl::InvalidArgumentError(absl::StrCat("max_indent ", options_.max_indent, " is outside 0..", kMaxRepeat));
    }
    PP_ASSIGN_OR_RETURN(const std::string root, NewRule("root"));
    ref_rules_[""] = root;  // "$ref": "#"
    std::string body;
    if (IsBareRef(root_)) {
        PP_ASSIGN_OR_RETURN(const std::string ref, RefText(root_, Where("")));
        PP_ASSIGN_OR_RETURN(body, VisitRef(ref, "", 1));
    } else if (IsTrue(root_)) {
        body = "value";
    } else if (IsFalse(root_)) {
        return absl::InvalidArgumentError("the schema is false: no value is valid");
    } else if (!root_.is_object()) {
        return absl::InvalidArgumentError("the schema must be a JSON object or a boolean");
    } else {
        PP_ASSIGN_OR_RETURN(body, Body(root_, "", root, 1));
    }
    Define(root, body);

    std::string out;
    std::set<std::string, std::less<>> references;
    for (const std::string& name : rule_order_) {
        const std::string& rule_body = rule_bodies_[name];
        absl::StrAppend(&out, name, " ::= ", rule_body, "\n");
        CollectReferences(rule_body, &references);
        if (out.size() > kMaxGbnfBytes) break;
    }
    absl::StrAppend(&out, pattern_rules_);
    std::set<std::string, std::less<>> primitives;
    for (const std::string& name : references) {
        if (IsPrimitiveRuleName(name)) primitives.insert(name);
    }
    absl::StrAppend(&out, PrimitiveRules(primitives, options_.max_indent));
    if (out.size() > kMaxGbnfBytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the schema's grammar is over the supported ", kMaxGbnfBytes, " bytes"));
    }
    return out;
}

absl::StatusOr<std::string> SchemaConverter::Visit(const Json& schema, const std::string& pointer,
                                                   const std::string& name_hint, int depth) {
    if (depth > kMaxSchemaDepth) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the schema at ", Where(pointer), " nests deeper than ", kMaxSchemaDepth, " levels"));
    }
    if (IsTrue(schema)) return std::string("value");
    if (IsFalse(schema)) {
        return absl::InvalidArgumentError(absl::StrCat("the schema at ", Where(pointer), " is false: no value is valid"));
    }
    if (!schema.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat("the schema at ", Where(pointer), " must be an object or a boolean"));
    }
    if (IsBareRef(schema)) {
        PP_ASSIGN_OR_RETURN(const std::string ref, RefText(schema, Where(pointer)));
        return VisitRef(ref, pointer, depth);
    }
    PP_ASSIGN_OR_RETURN(const std::string name, NewRule(name_hint));
    PP_ASSIGN_OR_RETURN(std::string body, Body(schema, pointer, name, depth));
    Define(name, std::move(body));
    return name;
}

absl::StatusOr<std::string> SchemaConverter::VisitRef(const std::string& ref, const std::string& pointer, int depth) {
    PP_ASSIGN_OR_RETURN(ResolvedRef target, ResolveRef(root_, ref, Where(pointer)));
    if (const auto it = ref_rules_.find(target.pointer); it != ref_rules_.end()) return it->second;
    // A chain of bare $refs ending where it started defines nothing.
    std::set<std::string> chain = {target.pointer};
    for (const Json* s = target.schema; IsBareRef(*s);) {
        if (!(*s)["$ref"].is_string()) break;
        PP_ASSIGN_OR_RETURN(ResolvedRef next, ResolveRef(root_, (*s)["$ref"].get<std::string>(), Where(target.pointer)));
        if (!chain.insert(next.pointer).second) {
            return absl::InvalidArgumentError(
                absl::StrCat("$ref \"", ref, "\" at ", Where(pointer), " is a cycle of references that defines nothing"));
        }
        s = next.schema;
    }
    std::string hint;
    if (target.pointer.rfind("/$defs/", 0) == 0) {
        hint = "defs-" + RuleNameFragment(target.pointer.substr(7));
    } else if (target.pointer.rfind("/definitions/", 0) == 0) {
        hint = "definitions-" + RuleNameFragment(target.pointer.substr(13));
    } else {
        hint = "ref-" + RuleNameFragment(target.pointer);
    }
    PP_ASSIGN_OR_RETURN(const std::string name, NewRule(hint));
    ref_rules_[target.pointer] = name;
    const Json& schema = *target.schema;
    std::string body;
    if (IsBareRef(schema)) {
        PP_ASSIGN_OR_RETURN(const std::string next_ref, RefText(schema, Where(target.pointer)));
        PP_ASSIGN_OR_RETURN(body, VisitRef(next_ref, target.pointer, depth + 1));
    } else if (IsTrue(schema)) {
        body = "value";
    } else if (IsFalse(schema) || !schema.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat("$ref \"", ref, "\" at ", Where(pointer),
                                                       " leads to ", schema.dump(), ", which admits no value or is no schema"));
    } else {
        PP_ASSIGN_OR_RETURN(body, Body(schema, target.pointer, name, depth + 1));
    }
    Define(name, std::move(body));
    return name;
}

absl::StatusOr<std::string> SchemaConverter::Body(const Json& schema, const std::string& pointer, const std::string& name,
                                                  int depth) {
    if (depth > kMaxSchemaDepth) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the schema at ", Where(pointer), " nests deeper than ", kMaxSchemaDepth, " levels"));
    }
    if (schema.contains("$ref") || schema.contains("allOf")) {
        PP_ASSIGN_OR_RETURN(const Json merged, MergeAllOf(root_, schema, Where(pointer)));
        return Body(merged, pointer, name, depth + 1);
    }
    if (schema.contains("anyOf") || schema.contains("oneOf")) return CombinatorBody(schema, pointer, name, depth);

    std::set<std::string> consumed;
    uint32_t produced = 0;
    std::vector<std::string> alts;
    if (schema.contains("enum") || schema.contains("const")) {
        PP_ASSIGN_OR_RETURN(std::string literals, LiteralBody(schema, pointer, &consumed, &produced));
        alts.push_back(std::move(literals));
    } else {
        PP_ASSIGN_OR_RETURN(const uint32_t declared, DeclaredTypes(schema, pointer));
        produced = schema.contains("type") ? declared : InferTypes(schema);
        if (produced & kNumberType) produced |= kIntegerType;
        if (produced & kObjectType) {
            PP_ASSIGN_OR_RETURN(std::string object, ObjectBody(schema, pointer, name, depth, &consumed));
            alts.push_back(std::move(object));
        }
        if (produced & kArrayType) {
            PP_ASSIGN_OR_RETURN(std::string array, ArrayBody(schema, pointer, name, depth, &consumed));
            alts.push_back(std::move(array));
        }
        if (produced & kStringType) {
            PP_ASSIGN_OR_RETURN(std::string string, StringBody(schema, pointer, &consumed));
            alts.push_back(std::move(string));
        }
        if (produced & kNumberType) {
            PP_ASSIGN_OR_RETURN(std::string number, NumberGbnf(schema, Where(pointer), &consumed));
            alts.push_back(std::move(number));
        } else if (produced & kIntegerType) {
            PP_ASSIGN_OR_RETURN(std::string integer, IntegerGbnf(schema, Where(pointer), &consumed));
            alts.push_back(std::move(integer));
        }
        if (produced & kBooleanType) alts.push_back("boolean");
        if (produced & kNullType) alts.push_back("null");
    }
    // Refuse what was not honoured, unless it constrains a type never produced here.
    for (auto it = schema.begin(); it != schema.end(); ++it) {
        const std::string& key = it.key();
        uint32_t applies_to = 0;
        switch (ClassifyKeyword(key)) {
            case KeywordClass::kAnnotation:
            case KeywordClass::kCore: continue;
            case KeywordClass::kObject: applies_to = kObjectType; break;
            case KeywordClass::kArray: applies_to = kArrayType; break;
            case KeywordClass::kString: applies_to = kStringType; break;
            case KeywordClass::kNumeric: applies_to = kNumberType | kIntegerType; break;
            case KeywordClass::kUnknown: applies_to = kAllTypes; break;
        }
        if ((produced & applies_to) && !consumed.count(key)) {
            return absl::InvalidArgumentError(absl::StrCat("unsupported keyword \"", key, "\" at ", Where(pointer)));
        }
    }
    const std::vector<std::string> any = {"object", "array", "string", "number", "boolean", "null"};
    if (alts == any) return std::string("value");
    return absl::StrJoin(alts, " | ");
}

absl::StatusOr<std::string> SchemaConverter::CombinatorBody(const Json& schema, const std::string& pointer,
                                                            const std::string& name, int depth) {
    if (schema.contains("anyOf") && schema.contains("oneOf")) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"anyOf\" together with \"oneOf\" at ", Where(pointer), " is not supported"));
    }
    const std::string keyword = schema.contains("anyOf") ? "anyOf" : "oneOf";
    const Json& branches = schema[keyword];
    if (!branches.is_array() || branches.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("\"", keyword, "\" at ", Where(pointer), " must be a non-empty array"));
    }
    Json siblings = schema;
    siblings.erase(keyword);
    const bool constrained = HasValidationKeywords(siblings);
    // The schema each branch is converted from: the branch itself, or
    // merged with the keywords beside anyOf (A and (B or C) is (A and B) or
    // (A and C)).
    std::vector<Json> effective;
    std::vector<size_t> index;
    for (size_t i = 0; i < branches.size(); ++i) {
        const Json& branch = branches[i];
        const std::string branch_pointer = absl::StrCat(pointer, "/", keyword, "/", i);
        if (IsFalse(branch)) continue;  // never valid: it adds nothing
        if (!constrained) {
            effective.push_back(branch);
            index.push_back(i);
            continue;
        }
        Json both = Json::object();
        both["allOf"] = Json::array({siblings, branch});
        bool unsatisfiable = false;
        absl::StatusOr<Json> merged = MergeAllOf(root_, both, Where(branch_pointer), &unsatisfiable);
        if (!merged.ok() && unsatisfiable) continue;  // a branch no value satisfies adds nothing
        PP_RETURN_IF_ERROR(merged.status());
        effective.push_back(*std::move(merged));
        index.push_back(i);
    }
    std::vector<uint32_t> allowed(effective.size(), kAllTypes);
    if (keyword == "oneOf" && !effective.empty()) {
        PP_ASSIGN_OR_RETURN(allowed, OneOfExclusiveTypes(effective, pointer));
    }
    std::vector<std::string> alts;
    for (size_t k = 0; k < effective.size(); ++k) {
        const std::string branch_pointer = absl::StrCat(pointer, "/", keyword, "/", index[k]);
        const std::string hint = absl::StrCat(name, "-", index[k]);
        if (allowed[k] == 0) continue;
        Json schema_k = effective[k];
        if (allowed[k] != kAllTypes) {
            // Only the types no other branch accepts: exactly this branch validates.
            Json types = Json::array();
            for (const auto& [bit, type_name] : {std::pair{kNullType, "null"}, {kBooleanType, "boolean"},
                                                 {kObjectType, "object"}, {kArrayType, "array"},
                                                 {kStringType, "string"}, {kNumberType, "number"}}) {
                if (allowed[k] & bit) types.push_back(type_name);
            }
            Json both = Json::object();
            both["allOf"] = Json::array({schema_k, Json{{"type", types}}});
            bool unsatisfiable = false;
            absl::StatusOr<Json> merged = MergeAllOf(root_, both, Where(branch_pointer), &unsatisfiable);
            if (!merged.ok() && unsatisfiable) continue;
            PP_RETURN_IF_ERROR(merged.status());
            schema_k = *std::move(merged);
        }
        PP_ASSIGN_OR_RETURN(std::string rule, Visit(schema_k, branch_pointer, hint, depth + 1));
        alts.push_back(std::move(rule));
    }
    if (alts.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("no branch of \"", keyword, "\" at ", Where(pointer), " admits a value"));
    }
    return absl::StrJoin(alts, " | ");
}

absl::StatusOr<std::string> SchemaConverter::LiteralBody(const Json& schema, const std::string& pointer,
                                                         std::set<std::string>* consumed, uint32_t* produced_types) {
    std::vector<Json> values;
    if (const auto c = schema.find("const"); c != schema.end()) values.push_back(*c);
    if (const auto e = schema.find("enum"); e != schema.end()) {
        if (!e->is_array()) return absl::InvalidArgumentError(absl::StrCat("\"enum\" at ", Where(pointer), " must be an array"));
        if (e->empty()) {
            return absl::InvalidArgumentError(absl::StrCat("\"enum\" at ", Where(pointer), " is empty: no value is valid"));
        }
        if (values.empty()) {
            values.assign(e->begin(), e->end());
        } else if (std::find(e->begin(), e->end(), values[0]) == e->end()) {
            values.clear();
        }
    }
    PP_ASSIGN_OR_RETURN(const uint32_t declared, DeclaredTypes(schema, pointer));
    // The few keywords a literal is checked against here; any other
    // keyword for the literals' types is refused by the caller.
    const auto bound = [&](const char* keyword) -> std::optional<long double> {
        const auto it = schema.find(keyword);
        if (it == schema.end() || !it->is_number()) return std::nullopt;
        consumed->insert(keyword);
        return it->is_number_float() ? static_cast<long double>(it->get<double>())
               : it->is_number_unsigned() ? static_cast<long double>(it->get<uint64_t>())
                                          : static_cast<long double>(it->get<int64_t>());
    };
    const std::optional<long double> min_length = bound("minLength"), max_length = bound("maxLength");
    const std::optional<long double> minimum = bound("minimum"), maximum = bound("maximum");
    const std::optional<long double> exclusive_minimum = bound("exclusiveMinimum");
    const std::optional<long double> exclusive_maximum = bound("exclusiveMaximum");
    std::vector<std::string> alts;
    *produced_types = 0;
    for (const Json& v : values) {
        const uint32_t type = TypeOfValue(v);
        if (!(type & declared)) continue;
        if (v.is_string()) {
            const auto length = static_cast<long double>(CodePointCount(v.get_ref<const std::string&>()));
            if ((min_length && length < *min_length) || (max_length && length > *max_length)) continue;
        }
        if (v.is_number()) {
            const long double x = v.is_number_float() ? static_cast<long double>(v.get<double>())
                                  : v.is_number_unsigned() ? static_cast<long double>(v.get<uint64_t>())
                                                           : static_cast<long double>(v.get<int64_t>());
            if ((minimum && x < *minimum) || (maximum && x > *maximum) || (exclusive_minimum && x <= *exclusive_minimum) ||
                (exclusive_maximum && x >= *exclusive_maximum)) {
                continue;
            }
        }
        PP_ASSIGN_OR_RETURN(std::string text, LiteralGbnf(v, pointer, 0));
        if (std::find(alts.begin(), alts.end(), text) == alts.end()) alts.push_back(std::move(text));
        *produced_types |= type;
    }
    if (alts.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("no value of \"enum\"/\"const\" at ", Where(pointer),
                                                       " satisfies the schema's other keywords"));
    }
    return absl::StrJoin(alts, " | ");
}

absl::StatusOr<std::string> SchemaConverter::StringBody(const Json& schema, const std::string& pointer,
                                                        std::set<std::string>* consumed) {
    if (const auto f = schema.find("format"); f != schema.end()) {
        if (!f->is_string()) return absl::InvalidArgumentError(absl::StrCat("\"format\" at ", Where(pointer), " must be a string"));
        const std::string_view rule = FormatRule(f->get_ref<const std::string&>());
        if (rule.empty()) {
            return absl::InvalidArgumentError(absl::StrCat("unsupported format ", f->dump(), " at ", Where(pointer)));
        }
        for (const char* other : {"minLength", "maxLength", "pattern"}) {
            if (schema.contains(other)) {
                return absl::InvalidArgumentError(
                    absl::StrCat("\"", other, "\" together with \"format\" at ", Where(pointer), " is not supported"));
            }
        }
        consumed->insert("format");
        return Seq({kQuote, rule, kQuote});
    }
    if (const auto p = schema.find("pattern"); p != schema.end()) {
        if (!p->is_string()) return absl::InvalidArgumentError(absl::StrCat("\"pattern\" at ", Where(pointer), " must be a string"));
        for (const char* other : {"minLength", "maxLength"}) {
            if (schema.contains(other)) {
                return absl::InvalidArgumentError(
                    absl::StrCat("\"", other, "\" together with \"pattern\" at ", Where(pointer), " is not supported"));
            }
        }
        PP_ASSIGN_OR_RETURN(PatternGbnf g, PatternStringGbnf(p->get_ref<const std::string&>(), ++pattern_count_, "pattern",
                                                             Where(pointer)));
        pattern_rules_ += g.rules;
        consumed->insert("pattern");
        return g.expression;
    }
    PP_ASSIGN_OR_RETURN(const std::optional<int64_t> min_length, ReadCount(schema, "minLength", pointer));
    PP_ASSIGN_OR_RETURN(std::optional<int64_t> max_length, ReadCount(schema, "maxLength", pointer));
    consumed->insert("minLength");
    consumed->insert("maxLength");
    if (!min_length && !max_length) return std::string("string");
    const int64_t min = min_length.value_or(0);
    PP_RETURN_IF_ERROR(CheckRepeatBounds("minLength", min, &max_length, "maxLength", pointer));
    // Each counted-char decodes to exactly one code point (Python's len);
    // a plain char may be half a surrogate pair, which is fine for a maximum.
    const std::string ch(min > 0 ? kCountedChar : kChar);
    return Seq({kQuote, Repeat(ch, min, max_length), kQuote});
}

absl::StatusOr<std::string> SchemaConverter::ArrayBody(const Json& schema, const std::string& pointer,
                                                       const std::string& name, int depth, std::set<std::string>* consumed) {
    std::vector<Json> prefix;
    if (const auto p = schema.find("prefixItems"); p != schema.end()) {
        if (!p->is_array()) {
            return absl::InvalidArgumentError(absl::StrCat("\"prefixItems\" at ", Where(pointer), " must be an array"));
        }
        prefix.assign(p->begin(), p->end());
        consumed->insert("prefixItems");
    }
    const Json* items = nullptr;
    if (const auto it = schema.find("items"); it != schema.end()) {
        if (it->is_array()) {
            return absl::InvalidArgumentError(absl::StrCat("\"items\" as an array at ", Where(pointer),
                                                           " (draft 2019-09 and earlier) is not supported: use prefixItems"));
        }
        items = &*it;
        consumed->insert("items");
    }
    PP_ASSIGN_OR_RETURN(const std::optional<int64_t> min_items, ReadCount(schema, "minItems", pointer));
    PP_ASSIGN_OR_RETURN(std::optional<int64_t> max_items, ReadCount(schema, "maxItems", pointer));
    consumed->insert("minItems");
    consumed->insert("maxItems");
    const int64_t min = min_items.value_or(0);
    // A `false` prefix item, or `items: false`, ends the array there.
    std::optional<int64_t> max = max_items;
    const auto lower_max = [&](int64_t m) { max = max ? std::min(*max, m) : m; };
    for (size_t i = 0; i < prefix.size(); ++i) {
        if (IsFalse(prefix[i])) {
            lower_max(static_cast<int64_t>(i));
            break;
        }
    }
    if (items != nullptr && IsFalse(*items)) lower_max(static_cast<int64_t>(prefix.size()));
    PP_RETURN_IF_ERROR(CheckRepeatBounds("minItems", min, &max, "maxItems", pointer));
    if (const auto u = schema.find("uniqueItems"); u != schema.end()) {
        // Items of a list of at most one are unique; more cannot be promised.
        if (!u->is_boolean() || !u->get<bool>() || (max && *max <= 1)) consumed->insert("uniqueItems");
    }

    const size_t prefix_count = max ? std::min<size_t>(prefix.size(), static_cast<size_t>(*max)) : prefix.size();
    std::vector<std::string> prefix_rules;
    for (size_t i = 0; i < prefix_count; ++i) {
        PP_ASSIGN_OR_RETURN(std::string rule, Visit(prefix[i], absl::StrCat(pointer, "/prefixItems/", i),
                                                    absl::StrCat(name, "-", i), depth + 1));
        prefix_rules.push_back(std::move(rule));
    }
    const auto k = static_cast<int64_t>(prefix_count);
    const int64_t tail_min = std::max<int64_t>(0, min - k);
    const std::optional<int64_t> tail_max = max ? std::optional<int64_t>(*max - k) : std::nullopt;
    std::string content;
    if (!tail_max || *tail_max > 0) {
        std::string item = "value";
        if (items != nullptr) {
            PP_ASSIGN_OR_RETURN(item, Visit(*items, pointer + "/items", name + "-items", depth + 1));
        }
        const std::string next = Group(Seq({kSep, item}));
        if (k > 0) {
            content = Repeat(next, tail_min, tail_max);
        } else {
            content = Seq({item, Repeat(next, std::max<int64_t>(tail_min - 1, 0),
                                        tail_max ? std::optional<int64_t>(*tail_max - 1) : std::nullopt)});
        }
    }
    for (int64_t i = k - 1; i >= 0; --i) {
        std::string piece = Seq({i > 0 ? kSep : "", prefix_rules[i], content});
        if (i > 0 && i >= min) piece = Group(piece) + "?";
        content = std::move(piece);
    }
    if (content.empty()) return std::string(R"("[" ws "]")");
    if (min == 0) return absl::StrCat(R"("[" ws ( )", content, R"( ws )? "]")");
    return absl::StrCat(R"("[" ws )", content, R"( ws "]")");
}

absl::StatusOr<std::vector<uint32_t>> SchemaConverter::OneOfExclusiveTypes(const std::vector<Json>& branches,
                                                                           const std::string& pointer) {
    // The JSON types a branch can validate at all (not only those it
    // produces: an untyped {"minLength": 2} also validates 5).
    const std::function<absl::StatusOr<uint32_t>(const Json&, int)> semantic_types =
        [&](const Json& s, int depth) -> absl::StatusOr<uint32_t> {
        if (s.is_boolean()) return s.get<bool>() ? static_cast<uint32_t>(kAllTypes) : 0u;
        if (depth > kMaxOneOfCheckDepth || !s.is_object()) return static_cast<uint32_t>(kAllTypes);
        Json flat = s;
        if (s.contains("$ref") || s.contains("allOf")) {
            PP_ASSIGN_OR_RETURN(flat, MergeAllOf(root_, s, Where(pointer)));
        }
        PP_ASSIGN_OR_RETURN(uint32_t types, DeclaredTypes(flat, pointer));
        std::vector<Json> values;
        if (flat.contains("const")) values.push_back(flat["const"]);
        if (flat.contains("enum") && flat["enum"].is_array()) values.assign(flat["enum"].begin(), flat["enum"].end());
        if (!values.empty()) {
            uint32_t of_values = 0;
            for (const Json& v : values) of_values |= TypeOfValue(v);
            types &= of_values;
        }
        for (const char* keyword : {"anyOf", "oneOf"}) {
            if (!flat.contains(keyword) || !flat[keyword].is_array()) continue;
            uint32_t any = 0;
            for (const Json& b : flat[keyword]) {
                PP_ASSIGN_OR_RETURN(const uint32_t t, semantic_types(b, depth + 1));
                any |= t;
            }
            types &= any;
        }
        // integer and number overlap.
        if (types & (kIntegerType | kNumberType)) types |= kIntegerType | kNumberType;
        return types;
    };
    std::vector<uint32_t> types;
    for (const Json& b : branches) {
        PP_ASSIGN_OR_RETURN(const uint32_t t, semantic_types(b, 0));
        types.push_back(t);
    }
    bool disjoint = true;
    for (size_t i = 0; i < types.size(); ++i) {
        for (size_t j = i + 1; j < types.size(); ++j) disjoint &= (types[i] & types[j]) == 0;
    }
    const std::vector<uint32_t> unrestricted(branches.size(), kAllTypes);
    if (disjoint) return unrestricted;

    // A discriminated union: every branch an object (and nothing else) with
    // a required property whose const/enum values no other branch allows.
    std::vector<Json> flats;
    for (const Json& b : branches) {
        if (!b.is_object()) {
            flats.push_back(Json::object());  // true: validates everything, discriminates nothing
            continue;
        }
        Json flat = b;
        if (b.contains("$ref") || b.contains("allOf")) {
            PP_ASSIGN_OR_RETURN(flat, MergeAllOf(root_, b, Where(pointer)));
        }
        flats.push_back(std::move(flat));
    }
    const auto values_of = [&](const Json& flat, const std::string& property) -> std::optional<std::vector<Json>> {
        const auto produces_objects_only = [&]() {
            if (flat.contains("anyOf") || flat.contains("oneOf") || flat.contains("enum") || flat.contains("const")) return false;
            const absl::StatusOr<uint32_t> declared = DeclaredTypes(flat, pointer);
            if (!declared.ok()) return false;
            return flat.contains("type") ? *declared == kObjectType : InferTypes(flat) == kObjectType;
        };
        if (!produces_objects_only() || !flat.contains("required") || !flat["required"].is_array() ||
            std::find(flat["required"].begin(), flat["required"].end(), property) == flat["required"].end() ||
            !flat.contains("properties") || !flat["properties"].is_object() || !flat["properties"].contains(property)) {
            return std::nullopt;
        }
        Json p = flat["properties"][property];
        if (p.is_object() && (p.contains("$ref") || p.contains("allOf"))) {
            absl::StatusOr<Json> merged = MergeAllOf(root_, p, Where(pointer));
            if (!merged.ok()) return std::nullopt;
            p = *std::move(merged);
        }
        if (!p.is_object()) return std::nullopt;
        if (p.contains("const")) return std::vector<Json>{p["const"]};
        if (p.contains("enum") && p["enum"].is_array()) return std::vector<Json>(p["enum"].begin(), p["enum"].end());
        return std::nullopt;
    };
    if (flats[0].contains("required") && flats[0]["required"].is_array()) {
        for (const Json& candidate : flats[0]["required"]) {
            if (!candidate.is_string()) continue;
            const std::string property = candidate.get<std::string>();
            std::vector<Json> seen;
            bool ok = true;
            for (const Json& flat : flats) {
                const std::optional<std::vector<Json>> values = values_of(flat, property);
                if (!values) {
                    ok = false;
                    break;
                }
                for (const Json& v : *values) {
                    if (std::find(seen.begin(), seen.end(), v) != seen.end()) ok = false;
                }
                seen.insert(seen.end(), values->begin(), values->end());
                if (!ok) break;
            }
            if (ok) return unrestricted;
        }
    }
    // Else each branch keeps the types no other branch accepts, e.g.
    // oneOf [string|null, number|null]: strings, numbers, and no null
    // (valid under both, so invalid under oneOf).
    std::vector<uint32_t> exclusive(branches.size(), 0);
    bool any = false;
    for (size_t i = 0; i < types.size(); ++i) {
        uint32_t others = 0;
        for (size_t j = 0; j < types.size(); ++j) {
            if (j != i) others |= types[j];
        }
        exclusive[i] = types[i] & ~others;
        any |= exclusive[i] != 0;
    }
    if (any) return exclusive;
    return absl::InvalidArgumentError(absl::StrCat(
        "\"oneOf\" at ", Where(pointer),
        " is not supported: its branches are not provably disjoint (a value valid under two branches would be invalid); "
        "give the branches different types or a required property with different const/enum values, or use anyOf"));
}

}  // namespace prepack::grammar::schema
