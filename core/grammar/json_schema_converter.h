// The JSON Schema -> GBNF converter behind JsonSchemaToGbnf (json_schema.h).
//
// One GBNF rule per schema node, named after its path (root, root-name,
// root-items, defs-Address, ...), plus the fixed rules of
// json_schema_primitives.h. A $ref gets one rule per target, defined on
// first use, so recursive schemas become recursive rules.
//
// Soundness first: every keyword is honoured, ignored because it cannot
// matter (an annotation, or a keyword of a JSON type the rule never
// produces), or refused with INVALID_ARGUMENT naming it and its JSON
// pointer. The grammar may accept a subset of the valid values (fixed
// property order, closed objects per JsonSchemaOptions, type inference for
// untyped schemas: {"properties": ...} produces objects only), never
// anything invalid.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/status.h"
#include "core/grammar/json_schema.h"

namespace prepack::grammar::schema {

using Json = nlohmann::ordered_json;

// Documented limits: past them a schema is refused (RESOURCE_EXHAUSTED).
inline constexpr int32_t kMaxSchemaDepth = 128;        // nested subschemas
inline constexpr int32_t kMaxRules = 5000;             // rules written
inline constexpr size_t kMaxGbnfBytes = 1 << 20;       // GBNF text (the GBNF parser's own limit)
inline constexpr int64_t kMaxRepeat = 10000;           // minLength/maxLength/minItems/maxItems (GbnfLimits::max_repeat)

// JSON types as a bit set.
enum TypeBit : uint32_t {
    kNullType = 1, kBooleanType = 2, kObjectType = 4, kArrayType = 8, kStringType = 16, kIntegerType = 32,
    kNumberType = 64,  // includes the integers
    kAllTypes = 127,
};

class SchemaConverter {
public:
    SchemaConverter(const Json& root, const JsonSchemaOptions& options) : root_(root), options_(options) {}
    absl::StatusOr<std::string> Convert();

private:
    // A rule name for `schema` at `pointer` (a new rule named after
    // `name_hint`, the rule of a $ref target, or a fixed rule).
    absl::StatusOr<std::string> Visit(const Json& schema, const std::string& pointer, const std::string& name_hint, int depth);
    absl::StatusOr<std::string> VisitRef(const std::string& ref, const std::string& pointer, int depth);
    // The GBNF expression for a schema object (no bare $ref).
    absl::StatusOr<std::string> Body(const Json& schema, const std::string& pointer, const std::string& name, int depth);
    absl::StatusOr<std::string> CombinatorBody(const Json& schema, const std::string& pointer, const std::string& name, int depth);
    absl::StatusOr<std::string> LiteralBody(const Json& schema, const std::string& pointer, std::set<std::string>* consumed,
                                            uint32_t* produced_types);
    absl::StatusOr<std::string> StringBody(const Json& schema, const std::string& pointer, std::set<std::string>* consumed);
    absl::StatusOr<std::string> ArrayBody(const Json& schema, const std::string& pointer, const std::string& name, int depth,
                                          std::set<std::string>* consumed);
    absl::StatusOr<std::string> ObjectBody(const Json& schema, const std::string& pointer, const std::string& name, int depth,
                                           std::set<std::string>* consumed);
    // "a JSON string whose value is none of `names`" (json_schema_objects.cpp).
    std::string KeyNotIn(const std::vector<std::string>& names, const std::string& name);
    // For each oneOf branch, the JSON types it may produce so that no other
    // branch also validates the value: kAllTypes when the branches are
    // disjoint (by type, or by a discriminating required property), else
    // the types only that branch accepts (0: drop it). Refuses when no
    // branch keeps a type.
    absl::StatusOr<std::vector<uint32_t>> OneOfExclusiveTypes(const std::vector<Json>& branches, const std::string& pointer);

    // Reserves a unique rule name based on `hint`; Define gives its body.
    absl::StatusOr<std::string> NewRule(const std::string& hint);
    void Define(const std::string& name, std::string body);

    const Json&                         root_;
    JsonSchemaOptions                   options_;
    std::vector<std::string>            rule_order_;
    std::map<std::string, std::string>  rule_bodies_;
    std::map<std::string, std::string>  ref_rules_;   // target pointer -> rule
    std::string                         pattern_rules_;  // written by the regex front end
    int                                 pattern_count_ = 0;
};

// "the root" for "", else the pointer itself: for messages.
std::string Where(const std::string& pointer);

// The JSON types `schema` (a plain object schema) declares through
// "type" (+ OpenAPI nullable); kAllTypes when it declares none.
absl::StatusOr<uint32_t> DeclaredTypes(const Json& schema, const std::string& pointer);

}  // namespace prepack::grammar::schema
