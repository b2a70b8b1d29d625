// Which JSON Schema keywords the front end knows and what each applies to.
// A keyword is honoured, ignored as an annotation, or refused: the
// converter (json_schema_converter.h) refuses every keyword it did not
// honour unless it cannot matter (it constrains only a JSON type the
// grammar never produces at that point, e.g. "minLength" beside
// "type": "integer").
#pragma once

#include <string_view>

namespace prepack::grammar::schema {

enum class KeywordClass {
    kAnnotation,  // no effect on validity: title, description, default, examples, x-..., ...
    kCore,        // handled for every type: $ref, allOf, anyOf, oneOf, type, enum, const, nullable, $defs
    kObject,      // constrains objects only
    kArray,       // constrains arrays only
    kString,      // constrains strings only
    kNumeric,     // constrains numbers only
    kUnknown,     // not, if/then/else, $dynamicRef, ... and names no draft has: always refused
};

KeywordClass ClassifyKeyword(std::string_view keyword);

}  // namespace prepack::grammar::schema
