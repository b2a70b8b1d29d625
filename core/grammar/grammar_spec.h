// What a request asks its output to be, as every surface passes it down (the
// C ABI, gRPC, OpenAI's response_format / tools, the CLI's flags), and the
// front ends that turn it into a Grammar (grammar_ir.h).
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "core/grammar/grammar_ir.h"

namespace prepack::grammar {

struct GrammarSpec {
    enum class Kind : int32_t {
        kNone = 0,         // unconstrained
        kJsonObject = 1,   // any JSON object (OpenAI's {"type": "json_object"})
        kJsonSchema = 2,   // `text` is a JSON Schema (JSON text)
        kRegex = 3,        // `text` is a regular expression the whole output must match
        kGbnf = 4,         // `text` is llama.cpp's GBNF, start rule "root"
    };
    Kind        kind = Kind::kNone;
    std::string text;

    bool active() const { return kind != Kind::kNone; }
    // A cache key: kind and text.
    std::string Key() const;
};

// The spec's GBNF (the JSON Schema and regex front ends write GBNF), then
// its Grammar. INVALID_ARGUMENT naming the problem (for a schema, the
// keyword and its JSON pointer; for GBNF, the line and column).
absl::StatusOr<std::string> SpecToGbnf(const GrammarSpec& spec);
absl::StatusOr<Grammar> BuildGrammar(const GrammarSpec& spec);

}  // namespace prepack::grammar
