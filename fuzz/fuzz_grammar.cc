// libFuzzer target: the grammar engine (core/grammar) from text to masks.
// The first input byte picks the front end (GBNF, JSON Schema, ECMAScript
// regex); the bytes up to the first 0xFF are that grammar's text and the
// bytes after it are fed to a matcher one at a time. Checked:
//  - the front ends and Compile never crash, hang or throw, and fail only
//    with INVALID_ARGUMENT or RESOURCE_EXHAUSTED;
//  - at every step the mask equals its definition on a small vocabulary
//    (a token is in it exactly when AcceptToken takes it; Rollback(1) then
//    restores the state), and end tokens are in it exactly when CanEnd();
//  - a byte the matcher refuses leaves the state as it was.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "core/grammar/gbnf.h"
#include "core/grammar/grammar_spec.h"
#include "core/grammar/matcher.h"

namespace {

using namespace prepack::grammar;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
    std::fprintf(stderr, "fuzz_grammar: %s %s\n", what, detail.c_str());
    std::abort();
}

void CheckStatus(const absl::Status& s, const char* where) {
    if (s.ok() || s.code() == absl::StatusCode::kInvalidArgument || s.code() == absl::StatusCode::kResourceExhausted) return;
    Fail(where, s.ToString());
}

// Single bytes of JSON and regex punctuation, a few multi-byte tokens
// (some crossing lexemes), a non-ASCII one and an end token.
std::shared_ptr<const TokenVocabulary> Vocabulary() {
    static const std::shared_ptr<const TokenVocabulary> v = [] {
        VocabularyInfo info;
        for (const char* t : {"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "a", "b", "0", "1", "-", ".", "e",
                              "true", "null", "\":", "\",\"", "{\"", "ab", "10", "\\", "\\u00", "é", "x", "ba"}) {
            info.token_bytes.emplace_back(t);
        }
        info.token_bytes.emplace_back("");   // the end token
        info.end_tokens.push_back(static_cast<int32_t>(info.token_bytes.size()) - 1);
        return std::make_shared<const TokenVocabulary>(std::move(info));
    }();
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
    const size_t split = in.find('\xff');
    GrammarSpec spec;
    spec.kind = data[0] % 3 == 0 ? GrammarSpec::Kind::kGbnf
                : data[0] % 3 == 1 ? GrammarSpec::Kind::kJsonSchema
                                   : GrammarSpec::Kind::kRegex;
    spec.text = std::string(in.substr(0, split));
    const std::string_view feed = split == std::string_view::npos ? std::string_view() : in.substr(split + 1);

    absl::StatusOr<Grammar> g = BuildGrammar(spec);
    if (!g.ok()) {
        CheckStatus(g.status(), "front end");
        return 0;
    }
    CompileLimits limits;
    limits.max_dfa_states_per_lexeme = 2000;
    absl::StatusOr<std::shared_ptr<const CompiledGrammar>> cg = Compile(*std::move(g), Vocabulary(), limits);
    if (!cg.ok()) {
        CheckStatus(cg.status(), "Compile");
        return 0;
    }
    Matcher m(*cg);
    TokenMask mask;
    const int32_t vocab = (*cg)->vocabulary().size();
    for (size_t i = 0; i <= feed.size(); ++i) {
        m.FillNextTokenMask(&mask);
        if (!m.status().ok()) {
            CheckStatus(m.status(), "mask");
            return 0;
        }
        for (int32_t id = 0; id < vocab; ++id) {
            const bool took = m.AcceptToken(id);
            if (took) m.Rollback(1);
            if (!m.status().ok()) {
                CheckStatus(m.status(), "AcceptToken");
                return 0;
            }
            if (took != mask.Test(id)) Fail("mask differs from AcceptToken for token", std::to_string(id));
        }
        if (i == feed.size()) break;
        const bool could_end = m.CanEnd();
        const int32_t accepted = m.num_accepted();
        if (!m.AcceptBytes(feed.substr(i, 1)) && (m.CanEnd() != could_end || m.num_accepted() != accepted)) {
            Fail("a refused byte changed the state");
        }
    }
    return 0;
}
