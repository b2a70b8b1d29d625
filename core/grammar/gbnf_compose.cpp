#include "core/grammar/gbnf_compose.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/grammar/json_schema_text.h"

namespace prepack::grammar {
namespace {

bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// The end of the literal or class opened at `open` (the index just past its
// closing delimiter), honouring backslash escapes; npos when unterminated.
size_t SkipQuoted(std::string_view s, size_t open, char close) {
    for (size_t i = open + 1; i < s.size(); ++i) {
        if (s[i] == '\\') {
            ++i;
        } else if (s[i] == close) {
            return i + 1;
        }
    }
    return std::string_view::npos;
}

// Calls `on_name(begin, end)` for every name outside literals, classes,
// comments and {m,n} counts, and `on_text(begin, end)` for everything else,
// in order.
template <typename OnName, typename OnText>
absl::Status Scan(std::string_view s, OnName on_name, OnText on_text) {
    size_t i = 0;
    while (i < s.size()) {
        const char c = s[i];
        size_t end = i + 1;
        if (c == '"' || c == '[') {
            end = SkipQuoted(s, i, c == '"' ? '"' : ']');
            if (end == std::string_view::npos) {
                return absl::InvalidArgumentError(
                    absl::StrCat("GBNF: unterminated ", c == '"' ? "literal" : "character class", " at byte ", i));
            }
        } else if (c == '#') {
            end = s.find('\n', i);
            if (end == std::string_view::npos) end = s.size();
        } else if (c == '{') {
            end = s.find('}', i);
            end = end == std::string_view::npos ? s.size() : end + 1;
        } else if (IsNameChar(c)) {
            while (end < s.size() && IsNameChar(s[end])) ++end;
            on_name(i, end);
            i = end;
            continue;
        }
        on_text(i, end);
        i = end;
    }
    return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> PrefixGbnfRules(std::string_view gbnf, std::string_view prefix) {
    // First pass: the names this grammar defines (a name followed by ::=).
    std::set<std::string, std::less<>> defined;
    std::string_view pending;
    PP_RETURN_IF_ERROR(Scan(
        gbnf, [&](size_t b, size_t e) { pending = gbnf.substr(b, e - b); },
        [&](size_t b, size_t e) {
            std::string_view t = gbnf.substr(b, e - b);
            if (t == " " || t == "\t") return;
            if (t == ":" && gbnf.substr(b, 3) == "::=" && !pending.empty()) defined.emplace(pending);
            pending = {};
        }));
    std::string out;
    out.reserve(gbnf.size() + defined.size() * (prefix.size() + 1) * 4);
    PP_RETURN_IF_ERROR(Scan(
        gbnf,
        [&](size_t b, size_t e) {
            std::string_view name = gbnf.substr(b, e - b);
            if (defined.count(name)) out += prefix;
            out += name;
        },
        [&](size_t b, size_t e) { out += gbnf.substr(b, e - b); }));
    return out;
}

// One way of writing GBNF literals for the whole folder: the JSON Schema
// front end's (valid UTF-8 passes through, control bytes as escapes).
std::string GbnfLiteral(std::string_view text) { return schema::GbnfLiteral(text); }

}  // namespace prepack::grammar
