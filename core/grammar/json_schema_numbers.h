// `integer` and `number` schemas with bounds (minimum, maximum,
// exclusiveMinimum, exclusiveMaximum) -> GBNF over their JSON numerals.
//
// Integers are exact: the numerals of [min, max] by digit ranges, any bounds
// within ±2^126 (a bound may be a fraction: minimum 1.5 means >= 2).
// Numbers: a grammar cannot compare decimals in general, so two cases are
// supported and every other bound is refused by name:
//   - integer-valued minimum / maximum within ±2^53 (exactly representable
//     as a double, so Python's rounding of a longer decimal can never cross
//     the bound: rounding to nearest is monotonic);
//   - exclusiveMinimum / exclusiveMaximum of 0 (positive / negative numbers),
//     with exponents of at most two digits and at most 200 zeros after
//     "0." so that no accepted numeral underflows to 0.0.
// Numbers with a bounded magnitude take no exponent (a subset).
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace prepack::grammar::schema {

// The GBNF expression for the integers `schema` allows (its bounds and an
// OpenAPI format int32 / int64). Adds the keywords it honoured to
// `consumed`. INVALID_ARGUMENT naming the keyword and `pointer` for a bad or
// unsupported bound, or bounds that admit no integer.
absl::StatusOr<std::string> IntegerGbnf(const nlohmann::ordered_json& schema, const std::string& pointer,
                                        std::set<std::string>* consumed);

// The same for numbers (any JSON number).
absl::StatusOr<std::string> NumberGbnf(const nlohmann::ordered_json& schema, const std::string& pointer,
                                       std::set<std::string>* consumed);

// The decimal numerals of the integers in [min, max] (no leading zeros, no
// "-0"); exposed for tests. Requires min <= max.
std::string IntegerRangeGbnf(const __int128* min, const __int128* max);

}  // namespace prepack::grammar::schema
