#include "core/grammar/json_schema_keywords.h"

#include <utility>

namespace prepack::grammar::schema {

KeywordClass ClassifyKeyword(std::string_view keyword) {
    using K = KeywordClass;
    static constexpr std::pair<std::string_view, KeywordClass> kTable[] = {
        // Annotations of JSON Schema, OpenAPI (discriminator is only a hint
        // there: the oneOf/anyOf it sits beside carries the validation),
        // OpenAI (strict) and editors (VS Code's markdownDescription, ...).
        {"title", K::kAnnotation}, {"description", K::kAnnotation}, {"default", K::kAnnotation},
        {"examples", K::kAnnotation}, {"example", K::kAnnotation}, {"$comment", K::kAnnotation},
        {"$schema", K::kAnnotation}, {"$id", K::kAnnotation}, {"id", K::kAnnotation}, {"$anchor", K::kAnnotation},
        {"$dynamicAnchor", K::kAnnotation}, {"$vocabulary", K::kAnnotation}, {"deprecated", K::kAnnotation},
        {"readOnly", K::kAnnotation}, {"writeOnly", K::kAnnotation}, {"discriminator", K::kAnnotation},
        {"strict", K::kAnnotation}, {"externalDocs", K::kAnnotation}, {"xml", K::kAnnotation},
        {"contentEncoding", K::kAnnotation}, {"contentMediaType", K::kAnnotation},
        {"contentSchema", K::kAnnotation}, {"markdownDescription", K::kAnnotation},
        {"enumDescriptions", K::kAnnotation}, {"markdownEnumDescriptions", K::kAnnotation},
        {"deprecationMessage", K::kAnnotation}, {"errorMessage", K::kAnnotation},
        {"patternErrorMessage", K::kAnnotation}, {"defaultSnippets", K::kAnnotation},
        {"doNotSuggest", K::kAnnotation},
        {"$ref", K::kCore}, {"allOf", K::kCore}, {"anyOf", K::kCore}, {"oneOf", K::kCore}, {"type", K::kCore},
        {"enum", K::kCore}, {"const", K::kCore}, {"nullable", K::kCore}, {"$defs", K::kCore},
        {"definitions", K::kCore},
        {"properties", K::kObject}, {"required", K::kObject}, {"additionalProperties", K::kObject},
        {"patternProperties", K::kObject}, {"minProperties", K::kObject}, {"maxProperties", K::kObject},
        {"propertyNames", K::kObject}, {"dependentRequired", K::kObject}, {"dependentSchemas", K::kObject},
        {"dependencies", K::kObject}, {"unevaluatedProperties", K::kObject},
        {"items", K::kArray}, {"prefixItems", K::kArray}, {"minItems", K::kArray}, {"maxItems", K::kArray},
        {"uniqueItems", K::kArray}, {"contains", K::kArray}, {"minContains", K::kArray},
        {"maxContains", K::kArray}, {"unevaluatedItems", K::kArray}, {"additionalItems", K::kArray},
        {"minLength", K::kString}, {"maxLength", K::kString}, {"pattern", K::kString}, {"format", K::kString},
        {"minimum", K::kNumeric}, {"maximum", K::kNumeric}, {"exclusiveMinimum", K::kNumeric},
        {"exclusiveMaximum", K::kNumeric}, {"multipleOf", K::kNumeric},
    };
    for (const auto& [name, kind] : kTable) {
        if (name == keyword) return kind;
    }
    // Vendor extensions (OpenAPI's x-..., Kubernetes' x-kubernetes-...) are
    // annotations by definition.
    if (keyword.size() > 2 && keyword.substr(0, 2) == "x-") return K::kAnnotation;
    return K::kUnknown;
}

}  // namespace prepack::grammar::schema
