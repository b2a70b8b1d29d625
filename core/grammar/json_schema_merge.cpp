#include "core/grammar/json_schema_merge.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/grammar/json_schema_keywords.h"
#include "core/grammar/json_schema_refs.h"

namespace prepack::grammar::schema {
namespace {

using Json = nlohmann::ordered_json;

// Deeper than this through $ref/allOf alone is a reference cycle.
constexpr int kMaxFlattenDepth = 32;

struct Part {
    const Json* schema;
    std::string where;
};

absl::Status Flatten(const Json& root, const Json& schema, const std::string& where, int depth, std::vector<Part>* parts) {
    if (depth > kMaxFlattenDepth) {
        return absl::InvalidArgumentError(
            absl::StrCat("allOf/$ref at ", where, " nest deeper than ", kMaxFlattenDepth, " (a reference cycle?)"));
    }
    if (schema.is_boolean()) {
        if (schema.get<bool>()) return absl::OkStatus();
        return absl::InvalidArgumentError(absl::StrCat("the schema at ", where, " is false: no value is valid"));
    }
    if (!schema.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat("the schema at ", where, " must be an object or a boolean"));
    }
    if (const auto ref = schema.find("$ref"); ref != schema.end()) {
        if (!ref->is_string()) return absl::InvalidArgumentError(absl::StrCat("$ref at ", where, " must be a string"));
        PP_ASSIGN_OR_RETURN(ResolvedRef target, ResolveRef(root, ref->get<std::string>(), where));
        PP_RETURN_IF_ERROR(Flatten(root, *target.schema, target.pointer.empty() ? "#" : target.pointer, depth + 1, parts));
    }
    if (const auto all = schema.find("allOf"); all != schema.end()) {
        if (!all->is_array() || all->empty()) {
            return absl::InvalidArgumentError(absl::StrCat("allOf at ", where, " must be a non-empty array"));
        }
        for (size_t i = 0; i < all->size(); ++i) {
            PP_RETURN_IF_ERROR(Flatten(root, (*all)[i], absl::StrCat(where, "/allOf/", i), depth + 1, parts));
        }
    }
    parts->push_back({&schema, where});
    return absl::OkStatus();
}

// Type names with OpenAPI's nullable folded in; nullopt when unconstrained.
absl::StatusOr<std::optional<std::set<std::string>>> PartTypes(const Json& schema, const std::string& where) {
    const auto it = schema.find("type");
    if (it == schema.end()) return std::optional<std::set<std::string>>();
    std::set<std::string> types;
    if (it->is_string()) {
        types.insert(it->get<std::string>());
    } else if (it->is_array()) {
        for (const Json& t : *it) {
            if (!t.is_string()) return absl::InvalidArgumentError(absl::StrCat("\"type\" at ", where, " must hold strings"));
            types.insert(t.get<std::string>());
        }
    } else {
        return absl::InvalidArgumentError(absl::StrCat("\"type\" at ", where, " must be a string or an array"));
    }
    if (const auto n = schema.find("nullable"); n != schema.end() && n->is_boolean() && n->get<bool>()) types.insert("null");
    return std::optional<std::set<std::string>>(types);
}

std::set<std::string> IntersectTypes(const std::set<std::string>& a, const std::set<std::string>& b) {
    std::set<std::string> out;
    for (const std::string& t : a) {
        if (b.count(t) || (t == "integer" && b.count("number"))) out.insert(t);
        if (t == "number" && b.count("integer")) out.insert("integer");
    }
    return out;
}

Json AllOf(const std::vector<Json>& schemas) {
    if (schemas.size() == 1) return schemas[0];
    for (const Json& s : schemas) {
        if (s.is_boolean() && !s.get<bool>()) return false;
    }
    Json out = Json::object();
    out["allOf"] = schemas;
    return out;
}

bool IsTrue(const Json& schema) { return schema.is_boolean() && schema.get<bool>(); }

}  // namespace

absl::StatusOr<Json> MergeAllOf(const Json& root, const Json& schema, const std::string& where, bool* unsatisfiable) {
    bool ignored = false;
    if (unsatisfiable == nullptr) unsatisfiable = &ignored;
    *unsatisfiable = false;
    std::vector<Part> parts;
    if (absl::Status flat = Flatten(root, schema, where, 0, &parts); !flat.ok()) {
        *unsatisfiable = absl::StrContains(flat.message(), "no value is valid");
        return flat;
    }
    const auto refuse = [&](std::string_view keyword, std::string_view why) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot combine \"", std::string(keyword), "\" in the allOf/$ref at ", where, ": ", std::string(why)));
    };

    Json out = Json::object();
    std::optional<std::set<std::string>> types;
    std::optional<std::vector<Json>> values;  // enum/const
    std::vector<std::string> property_order;
    std::map<std::string, std::vector<Json>> property_schemas;
    std::vector<std::string> required;
    std::vector<Json> items;
    // Each part's properties and additionalProperties, for the cross rule.
    struct ObjectPart {
        std::set<std::string> names;
        const Json*           additional = nullptr;
    };
    std::vector<ObjectPart> object_parts;
    bool any_pattern_properties = false;

    for (const Part& part : parts) {
        const Json& s = *part.schema;
        PP_ASSIGN_OR_RETURN(std::optional<std::set<std::string>> part_types, PartTypes(s, part.where));
        if (part_types) types = types ? IntersectTypes(*types, *part_types) : *part_types;
        ObjectPart object_part;
        for (auto it = s.begin(); it != s.end(); ++it) {
            const std::string& key = it.key();
            const Json& v = it.value();
            const KeywordClass kind = ClassifyKeyword(key);
            if (kind == KeywordClass::kAnnotation || key == "$ref" || key == "allOf" || key == "type" ||
                key == "nullable" || key == "$defs" || key == "definitions") {
                continue;
            }
            if (key == "enum" || key == "const") {
                std::vector<Json> these;
                if (key == "const") {
                    these.push_back(v);
                } else if (v.is_array()) {
                    these.assign(v.begin(), v.end());
                } else {
                    return absl::InvalidArgumentError(absl::StrCat("\"enum\" at ", part.where, " must be an array"));
                }
                if (values) {
                    std::vector<Json> kept;
                    for (const Json& x : *values) {
                        if (std::find(these.begin(), these.end(), x) != these.end()) kept.push_back(x);
                    }
                    values = kept;
                } else {
                    values = these;
                }
            } else if (key == "properties") {
                if (!v.is_object()) {
                    return absl::InvalidArgumentError(absl::StrCat("\"properties\" at ", part.where, " must be an object"));
                }
                for (auto p = v.begin(); p != v.end(); ++p) {
                    if (!property_schemas.count(p.key())) property_order.push_back(p.key());
                    property_schemas[p.key()].push_back(p.value());
                    object_part.names.insert(p.key());
                }
            } else if (key == "required") {
                if (!v.is_array()) {
                    return absl::InvalidArgumentError(absl::StrCat("\"required\" at ", part.where, " must be an array"));
                }
                for (const Json& name : v) {
                    if (!name.is_string()) {
                        return absl::InvalidArgumentError(absl::StrCat("\"required\" at ", part.where, " must hold strings"));
                    }
                    if (std::find(required.begin(), required.end(), name.get<std::string>()) == required.end()) {
                        required.push_back(name.get<std::string>());
                    }
                }
            } else if (key == "additionalProperties") {
                object_part.additional = &v;
            } else if (key == "items") {
                items.push_back(v);
            } else if (key == "minimum" || key == "exclusiveMinimum" || key == "maximum" || key == "exclusiveMaximum" ||
                       key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems" ||
                       key == "minProperties" || key == "maxProperties") {
                if (!v.is_number()) {
                    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" at ", part.where, " must be a number"));
                }
                const bool keep_larger = key.rfind("min", 0) == 0 || key == "exclusiveMinimum";
                if (!out.contains(key) || (keep_larger ? v.get<double>() > out[key].get<double>()
                                                       : v.get<double>() < out[key].get<double>())) {
                    out[key] = v;
                }
            } else if (key == "uniqueItems") {
                out[key] = (out.contains(key) && IsTrue(out[key])) || IsTrue(v);
            } else if (key == "format" || key == "pattern" || key == "multipleOf") {
                if (out.contains(key) && out[key] != v) return refuse(key, "the parts give different values");
                out[key] = v;
            } else if (key == "prefixItems" || key == "patternProperties" || key == "anyOf" || key == "oneOf") {
                if (out.contains(key)) return refuse(key, "more than one part has it");
                if (key == "patternProperties") any_pattern_properties = true;
                out[key] = v;
            } else if (!out.contains(key)) {
                out[key] = v;  // unsupported here: the converter refuses it by name
            }
        }
        object_parts.push_back(std::move(object_part));
    }

    if (types) {
        if (types->empty()) {
            *unsatisfiable = true;
            return absl::InvalidArgumentError(absl::StrCat("the allOf/$ref at ", where, " admits no value: its parts allow no common \"type\""));
        }
        Json list = Json::array();
        for (const std::string& t : *types) list.push_back(t);
        out["type"] = list.size() == 1 ? list[0] : list;
    }
    if (values && values->empty()) {
        *unsatisfiable = true;
        return absl::InvalidArgumentError(
            absl::StrCat("the allOf/$ref at ", where, " admits no value: its parts' enum/const share no value"));
    }
    if (values) out["enum"] = *values;
    if (!items.empty()) out["items"] = AllOf(items);

    bool any_additional = false;
    for (const ObjectPart& p : object_parts) any_additional |= p.additional != nullptr && !IsTrue(*p.additional);
    if (any_pattern_properties && any_additional) {
        return refuse("additionalProperties", "it cannot be combined with another part's patternProperties");
    }
    if (!property_order.empty()) {
        Json properties = Json::object();
        for (const std::string& name : property_order) {
            std::vector<Json> schemas = property_schemas[name];
            // A part that does not list `name` constrains it through its
            // additionalProperties.
            for (const ObjectPart& p : object_parts) {
                if (p.names.count(name) || p.additional == nullptr || IsTrue(*p.additional)) continue;
                schemas.push_back(*p.additional);
            }
            properties[name] = AllOf(schemas);
        }
        out["properties"] = properties;
    }
    if (!required.empty()) out["required"] = required;
    std::vector<Json> additional;
    for (const ObjectPart& p : object_parts) {
        if (p.additional != nullptr && !IsTrue(*p.additional)) additional.push_back(*p.additional);
    }
    if (!additional.empty()) {
        out["additionalProperties"] = AllOf(additional);
    } else if (std::any_of(object_parts.begin(), object_parts.end(),
                           [](const ObjectPart& p) { return p.additional != nullptr; })) {
        out["additionalProperties"] = true;  // said explicitly: keep the objects open
    }
    return out;
}

}  // namespace prepack::grammar::schema
