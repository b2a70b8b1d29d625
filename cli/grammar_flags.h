// The structured-output flags `prepack generate`, `chat` and `batch` share:
// --json-schema FILE, --json-object, --regex RE, --grammar FILE (GBNF), at
// most one of them.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/base/status.h"
#include "core/grammar/grammar_spec.h"

namespace prepack::cli {

struct GrammarFlags {
    std::string json_schema_file;
    bool        json_object = false;
    std::string regex;
    std::string grammar_file;
    // Whether --regex was given: "" is a regex too (it matches "" only).
    const CLI::Option* regex_option = nullptr;
};

// Registers the four flags on `cmd`; `flags` must outlive parsing.
void AddGrammarFlags(CLI::App* cmd, GrammarFlags* flags);

// The grammar the flags ask for (kind kNone when none was given), checked
// through its front end, so a bad schema, regex or grammar fails before a
// model is loaded. INVALID_ARGUMENT naming both flags when more than one is
// given, or the front end's message naming the problem; NOT_FOUND for a
// file that cannot be read; RESOURCE_EXHAUSTED for a file over 16 MiB.
absl::StatusOr<grammar::GrammarSpec> GrammarSpecFromFlags(const GrammarFlags& flags);

}  // namespace prepack::cli
