// allOf, and $ref beside other keywords (in 2020-12 both apply), turned
// into one schema without either, so the converter only ever sees plain
// schemas, anyOf/oneOf and bare $refs.
//
// Merging is keyword by keyword, which keeps each keyword's meaning
// because every keyword constrains only its own JSON type:
//   type              intersection (integer within number); OpenAPI
//                     nullable folds into it first
//   properties        union; a property in several parts gets allOf of its
//                     schemas; a part's additionalProperties applies to the
//                     properties other parts add (false forbids them)
//   required          union
//   enum / const      intersection of the values
//   minimum, min...   the tightest of each bound
//   items             allOf of the parts' items
//   format, pattern,  must agree (or appear in one part only): a
//   multipleOf        grammar cannot intersect two of them
//   prefixItems, patternProperties, anyOf, oneOf: one part only
// Anything else is copied from the first part holding it, so the converter
// still sees (and refuses) it. Annotations are dropped.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace prepack::grammar::schema {

// `schema` (an object with $ref and/or allOf) as one equivalent schema with
// neither. `where` names it in messages. INVALID_ARGUMENT for what cannot be
// merged or admits no value, naming the keyword; in the latter case (no
// common type, no common enum value, a part `false`) *unsatisfiable is set,
// so that an anyOf can drop the branch instead.
absl::StatusOr<nlohmann::ordered_json> MergeAllOf(const nlohmann::ordered_json& root, const nlohmann::ordered_json& schema,
                                                  const std::string& where, bool* unsatisfiable = nullptr);

}  // namespace prepack::grammar::schema
