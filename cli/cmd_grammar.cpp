// `prepack grammar gbnf|check|sample`: a structured-output grammar (JSON
// Schema, regex, any JSON object, GBNF) looked at without a model, so its
// front ends and the matcher can be checked from scripts:
//   gbnf    prints the GBNF the front end writes;
//   check   says whether a text is a sentence (or a prefix of one);
//   sample  prints random sentences: a walk over the bytes the matcher
//           allows next, which the oracle scripts validate (e.g. with
//           Python's jsonschema), so every byte the grammar lets through is
//           one some schema-valid text can hold.
// The matcher runs over a vocabulary of the 256 single bytes plus an end
// token, so the byte mask is exactly the token mask a model would get.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/grammar_flags.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/grammar_spec.h"
#include "core/grammar/matcher.h"

namespace prepack::cli {
namespace {

// Bounds so a typo cannot ask for hours of sampling or gigabytes of output.
constexpr int32_t kMaxSamples = 100000;
constexpr int64_t kMaxSampleBytes = 1 << 20;
constexpr std::streamoff kMaxTextFileBytes = std::streamoff{16} << 20;

struct CheckOptions {
    GrammarFlags       source;
    std::string        text;
    const CLI::Option* text_option = nullptr;   // "" is a text too
    std::string        file;
};

struct SampleOptions {
    GrammarFlags source;
    int32_t      n = 1;
    uint64_t     seed = 0;
    int64_t      max_bytes = 256;
    double       stop_probability = 0.5;
};

absl::StatusOr<grammar::GrammarSpec> RequiredSpec(const GrammarFlags& flags) {
    PP_ASSIGN_OR_RETURN(grammar::GrammarSpec spec, GrammarSpecFromFlags(flags));
    if (!spec.active()) {
        return absl::InvalidArgumentError(
            "no grammar given: pass one of --json-schema FILE, --regex RE, --json-object, --grammar FILE");
    }
    return spec;
}

absl::StatusOr<grammar::Matcher> MatcherFor(const GrammarFlags& flags) {
    PP_ASSIGN_OR_RETURN(grammar::GrammarSpec spec, RequiredSpec(flags));
    PP_ASSIGN_OR_RETURN(grammar::Grammar g, grammar::BuildGrammar(spec));
    PP_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> compiled,
                        grammar::Compile(std::move(g), grammar::ByteVocabulary()));
    return grammar::Matcher(std::move(compiled));
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        return absl::NotFoundError(absl::StrCat("cannot open --file '", path, "': not a readable file"));
    }
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot open --file '", path, "'"));
    if (in.tellg() > kMaxTextFileBytes) {
        return absl::ResourceExhaustedError(absl::StrCat("--file '", path, "' is over 16 MiB"));
    }
    in.seekg(0);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void PrintJson(const nlohmann::ordered_json& j) {
    // Replace, not throw: an incomplete sample may stop inside a UTF-8 sequence.
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

int RunGbnf(const GrammarFlags& flags) {
    absl::StatusOr<grammar::GrammarSpec> spec = RequiredSpec(flags);
    if (!spec.ok()) return Fail(spec.status());
    absl::StatusOr<std::string> gbnf = grammar::SpecToGbnf(*spec);
    if (!gbnf.ok()) return Fail(gbnf.status());
    std::fwrite(gbnf->data(), 1, gbnf->size(), stdout);
    if (!gbnf->empty() && gbnf->back() != '\n') std::fputc('\n', stdout);
    return 0;
}

int RunCheck(const CheckOptions& o) {
    const bool has_text = o.text_option != nullptr && o.text_option->count() > 0;
    if (has_text == !o.file.empty()) return Fail(absl::InvalidArgumentError("give exactly one of --text and --file"));
    absl::StatusOr<std::string> text = has_text ? absl::StatusOr<std::string>(o.text) : ReadTextFile(o.file);
    if (!text.ok()) return Fail(text.status());
    absl::StatusOr<grammar::Matcher> m = MatcherFor(o.source);
    if (!m.ok()) return Fail(m.status());
    // Byte by byte, so a rejection says where the text stops being a prefix.
    size_t accepted = 0;
    while (accepted < text->size() && m->AcceptBytes(std::string_view(*text).substr(accepted, 1))) ++accepted;
    if (!m->status().ok()) return Fail(m->status());
    const bool all = accepted == text->size();
    nlohmann::ordered_json j;
    j["accepted"] = all;
    j["complete"] = all && m->CanEnd();
    j["accepted_bytes"] = accepted;
    PrintJson(j);
    return 0;
}

int RunSample(const SampleOptions& o) {
    if (o.n < 0 || o.n > kMaxSamples) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--n must be in 0..", kMaxSamples)));
    }
    if (o.max_bytes < 0 || o.max_bytes > kMaxSampleBytes) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--max-bytes must be in 0..", kMaxSampleBytes)));
    }
    if (!(o.stop_probability >= 0 && o.stop_probability <= 1)) {
        return Fail(absl::InvalidArgumentError("--stop-probability must be in [0, 1]"));
    }
    absl::StatusOr<grammar::Matcher> m = MatcherFor(o.source);
    if (!m.ok()) return Fail(m.status());
    std::mt19937_64 rng(o.seed);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    grammar::TokenMask mask;
    std::vector<int32_t> allowed;
    for (int32_t i = 0; i < o.n; ++i) {
        std::string text;
        bool complete = false;
        while (true) {
            if (m->CanEnd() && coin(rng) < o.stop_probability) {
                complete = true;
                break;
            }
            if (static_cast<int64_t>(text.size()) >= o.max_bytes) {
                complete = m->CanEnd();
                break;
            }
            m->FillNextTokenMask(&mask);
            if (!m->status().ok()) return Fail(m->status());
            allowed.clear();
            for (int32_t b = 0; b < 256; ++b) {
                if (mask.Test(b)) allowed.push_back(b);
            }
            if (allowed.empty()) {
                // Only the end may follow (or, for a broken grammar, nothing).
                complete = m->CanEnd();
                break;
            }
            const int32_t b = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
            if (!m->AcceptToken(b)) {
                return Fail(absl::InternalError(absl::StrCat("the mask allowed byte ", b, " after ", text.size(),
                                                             " bytes but AcceptToken refused it")));
            }
            text.push_back(static_cast<char>(b));
        }
        nlohmann::ordered_json j;
        j["text"] = text;
        j["complete"] = complete;
        PrintJson(j);
        m->Rollback(m->num_accepted());
    }
    return 0;
}

}  // namespace

void AddGrammar(CLI::App& app, int* exit_code) {
    CLI::App* group = app.add_subcommand(
        "grammar", "Structured-output grammars without a model: print the GBNF, check a text, sample sentences");
    group->require_subcommand(1);

    auto* gbnf = new GrammarFlags();   // lives as long as the process: CLI11 binds to it
    CLI::App* gbnf_cmd = group->add_subcommand("gbnf", "Print the GBNF the grammar's front end writes");
    AddGrammarFlags(gbnf_cmd, gbnf);
    gbnf_cmd->callback([gbnf, exit_code]() { *exit_code = RunGbnf(*gbnf); });

    auto* check = new CheckOptions();
    CLI::App* check_cmd = group->add_subcommand(
        "check", "Print {\"accepted\", \"complete\", \"accepted_bytes\"}: whether a text is a prefix of a "
                 "sentence, a whole sentence, and how many bytes of it were accepted");
    AddGrammarFlags(check_cmd, &check->source);
    check->text_option = check_cmd->add_option("--text", check->text, "the text to check");
    check_cmd->add_option("--file", check->file, "a file holding the text to check (bytes as they are)");
    check_cmd->callback([check, exit_code]() { *exit_code = RunCheck(*check); });

    auto* sample = new SampleOptions();
    CLI::App* sample_cmd = group->add_subcommand(
        "sample", "Print random sentences, one JSON object {\"text\", \"complete\"} a line: a uniform walk over "
                  "the bytes allowed next");
    AddGrammarFlags(sample_cmd, &sample->source);
    sample_cmd->add_option("--n", sample->n, "how many samples")->capture_default_str();
    sample_cmd->add_option("--seed", sample->seed, "random seed")->capture_default_str();
    sample_cmd->add_option("--max-bytes", sample->max_bytes,
                           "stop a sample here (complete is then whether it happens to be a sentence)")
        ->capture_default_str();
    sample_cmd->add_option("--stop-probability", sample->stop_probability,
                           "where the text may end, the chance of ending it there")
        ->capture_default_str();
    sample_cmd->callback([sample, exit_code]() { *exit_code = RunSample(*sample); });
}

}  // namespace prepack::cli
