#include "cli/grammar_flags.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace prepack::cli {
namespace {

// Bigger than any schema or grammar a front end takes (they stop at 1 MiB),
// so the front end names the real limit; this only keeps a wrong path (a
// model file) from being read into memory whole.
constexpr std::streamoff kMaxGrammarFileBytes = std::streamoff{16} << 20;

absl::StatusOr<std::string> ReadGrammarFile(const std::string& flag, const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        return absl::NotFoundError(absl::StrCat("cannot open ", flag, " '", path, "': not a readable file"));
    }
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", flag, " '", path, "'"));
    const std::streamoff size = in.tellg();
    if (size > kMaxGrammarFileBytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat(flag, " '", path, "' has ", size, " bytes: more than the 16 MiB a grammar file may have"));
    }
    in.seekg(0);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) return absl::NotFoundError(absl::StrCat("cannot read ", flag, " '", path, "'"));
    return text.str();
}

}  // namespace

void AddGrammarFlags(CLI::App* cmd, GrammarFlags* f) {
    cmd->add_option("--json-schema", f->json_schema_file,
                    "structured output: the output is JSON valid under this JSON Schema (a file)");
    cmd->add_flag("--json-object", f->json_object, "structured output: the output is a JSON object");
    f->regex_option = cmd->add_option("--regex", f->regex,
                                      "structured output: the whole output matches this regular expression");
    cmd->add_option("--grammar", f->grammar_file,
                    "structured output: the output is a sentence of this GBNF grammar (llama.cpp's syntax, "
                    "start rule root; a file)");
}

absl::StatusOr<grammar::GrammarSpec> GrammarSpecFromFlags(const GrammarFlags& f) {
    std::vector<std::string> given;
    if (!f.json_schema_file.empty()) given.push_back("--json-schema");
    if (f.json_object) given.push_back("--json-object");
    if (f.regex_option != nullptr && f.regex_option->count() > 0) given.push_back("--regex");
    if (!f.grammar_file.empty()) given.push_back("--grammar");
    if (given.size() > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(given[0], " and ", given[1], " conflict: the output can follow one grammar only"));
    }
    grammar::GrammarSpec spec;
    if (given.empty()) return spec;
    if (!f.json_schema_file.empty()) {
        spec.kind = grammar::GrammarSpec::Kind::kJsonSchema;
        PP_ASSIGN_OR_RETURN(spec.text, ReadGrammarFile("--json-schema", f.json_schema_file));
    } else if (f.json_object) {
        spec.kind = grammar::GrammarSpec::Kind::kJsonObject;
    } else if (!f.grammar_file.empty()) {
        spec.kind = grammar::GrammarSpec::Kind::kGbnf;
        PP_ASSIGN_OR_RETURN(spec.text, ReadGrammarFile("--grammar", f.grammar_file));
    } else {
        spec.kind = grammar::GrammarSpec::Kind::kRegex;
        spec.text = f.regex;
    }
    // Parsed here to fail fast; the engine compiles it again for the model
    // (parsing is cheap next to a model load).
    if (absl::Status s = grammar::BuildGrammar(spec).status(); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(given[0], ": ", s.message()));
    }
    return spec;
}

}  // namespace prepack::cli
