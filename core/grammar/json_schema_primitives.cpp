#include "core/grammar/json_schema_primitives.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace prepack::grammar::schema {
namespace {

struct PrimitiveRule {
    std::string_view              name;
    std::string_view              body;   // "$INDENT" stands for max_indent
    std::vector<std::string_view> uses;
};

// JSON (RFC 8259). Whitespace is bounded: nothing, one space, or a newline
// and at most max_indent blanks, so a model cannot loop on blanks.
// Strings take every escape JSON has and no raw control character; U+007F
// is allowed raw, as JSON (and Python's json.dumps) allows it.
// Numbers: digits are not bounded (a string is not either); only max_tokens
// bounds them.
//
// Formats follow what Python jsonschema's format checkers accept, each a
// strict subset of its RFC so every produced value passes:
//   date       RFC 3339 full-date with the day valid for the month, 29
//              February in leap years only, year 0001..9999 (datetime.date).
//   time       RFC 3339 full-time: seconds 00..59 (no leap second), at most 9
//              fraction digits, "Z" or a +hh:mm offset; upper-case T and Z.
//   email      local-part "@" domain of dot-separated labels.
//   uri        scheme "://" host [":" port] path ["?" query] ["#" fragment]
//              from RFC 3986's characters (pchar, percent escapes).
//   ipv4       dotted quad, no leading zeros (Python's ipaddress refuses them).
//   ipv6       RFC 4291 text forms incl. "::" and a trailing dotted quad,
//              no zone index.
const std::vector<PrimitiveRule>& Table() {
    static const std::vector<PrimitiveRule> table = {
        {"ws", R"(( " " | "\n" [ \t]{0,$INDENT} )?)", {}},
        {"char", R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))", {}},
        // \uD800-\uDFFF escapes are left out: a pair decodes to one code
        // point, so counting it as two would break minLength.
        {"counted-char",
         R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) ))",
         {}},
        // Every decoded character has exactly one spelling here (no \u, no
        // \/), so "a key other than these names" is a plain complement.
        {"key-char", R"([^"\\\x00-\x1F] | "\\" ["\\bfnrt])", {}},
        {"string", R"("\"" char* "\"")", {"char"}},
        {"integer", R"("-"? ( "0" | [1-9] [0-9]* ))", {}},
        {"number", R"(integer ( "." [0-9]+ )? ( [eE] [+\x2D]? [0-9]+ )?)", {"integer"}},
        {"boolean", R"("true" | "false")", {}},
        {"null", R"("null")", {}},
        {"value", "object | array | string | number | boolean | null",
         {"object", "array", "string", "number", "boolean", "null"}},
        {"object", R"("{" ws ( member ( ws "," ws member )* ws )? "}")", {"ws", "member"}},
        {"member", R"(string ws ":" ws value)", {"string", "ws", "value"}},
        {"array", R"("[" ws ( value ( ws "," ws value )* ws )? "]")", {"ws", "value"}},

        {"format-date",
         R"(format-year "-" ( ( "01" | "03" | "05" | "07" | "08" | "10" | "12" ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "04" | "06" | "09" | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | format-leap-year "-02-29")",
         {"format-year", "format-leap-year"}},
        {"format-year", R"([1-9] [0-9]{3} | "0" ( [1-9] [0-9]{2} | "0" ( [1-9] [0-9] | "0" [1-9] ) ))", {}},
        // Divisible by 4 and not by 100, or by 400; never 0000.
        {"format-leap-year",
         R"([0-9]{2} ( "0" [48] | [2468] [048] | [13579] [26] ) | ( "0" [48] | [2468] [048] | [13579] [26] ) "00")",
         {}},
        {"format-time",
         R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+\x2D] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
         {}},
        {"format-date-time", R"(format-date "T" format-time)", {"format-date", "format-time"}},
        {"format-email",
         R"(format-email-atom ( "." format-email-atom )* "@" format-dns-label ( "." format-dns-label )+)",
         {"format-email-atom", "format-dns-label"}},
        {"format-email-atom", R"([a-zA-Z0-9_+\x25\x2D]+)", {}},
        {"format-dns-label", R"([a-zA-Z0-9] ( [a-zA-Z0-9\x2D]{0,61} [a-zA-Z0-9] )?)", {}},
        {"format-uuid",
         R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})", {}},
        {"format-uri",
         R"([a-zA-Z] [a-zA-Z0-9+.\x2D]* "://" format-dns-label ( "." format-dns-label )* ( ":" [0-9]{1,5} )? ( "/" format-uri-pchar* )* ( "?" ( format-uri-pchar | [/?] )* )? ( "#" ( format-uri-pchar | [/?] )* )?)",
         {"format-dns-label", "format-uri-pchar"}},
        {"format-uri-pchar", R"([a-zA-Z0-9._~!$&'()*+,;=:@\x2D] | "%" [0-9a-fA-F] [0-9a-fA-F])", {}},
        {"format-ipv4", R"(format-dec-octet "." format-dec-octet "." format-dec-octet "." format-dec-octet)",
         {"format-dec-octet"}},
        {"format-dec-octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])", {}},
        {"format-ipv6",
         R"(( format-h16 ":" ){6} format-ls32 | "::" ( format-h16 ":" ){5} format-ls32 | format-h16? "::" ( format-h16 ":" ){4} format-ls32 | ( ( format-h16 ":" )? format-h16 )? "::" ( format-h16 ":" ){3} format-ls32 | ( ( format-h16 ":" ){0,2} format-h16 )? "::" ( format-h16 ":" ){2} format-ls32 | ( ( format-h16 ":" ){0,3} format-h16 )? "::" format-h16 ":" format-ls32 | ( ( format-h16 ":" ){0,4} format-h16 )? "::" format-ls32 | ( ( format-h16 ":" ){0,5} format-h16 )? "::" format-h16 | ( ( format-h16 ":" ){0,6} format-h16 )? "::")",
         {"format-h16", "format-ls32"}},
        {"format-h16", R"([0-9a-fA-F]{1,4})", {}},
        {"format-ls32", R"(format-h16 ":" format-h16 | format-ipv4)", {"format-h16", "format-ipv4"}},
    };
    return table;
}

const PrimitiveRule* Find(std::string_view name) {
    for (const PrimitiveRule& rule : Table()) {
        if (rule.name == name) return &rule;
    }
    return nullptr;
}

}  // namespace

std::string_view FormatRule(std::string_view format) {
    static constexpr std::string_view kFormats[] = {"date", "time", "date-time", "email", "uuid", "uri", "ipv4", "ipv6"};
    for (const std::string_view f : kFormats) {
        if (f == format) return Find(absl::StrCat("format-", std::string(f)))->name;
    }
    return "";
}

bool IsPrimitiveRuleName(std::string_view name) { return Find(name) != nullptr; }

std::string PrimitiveRules(const std::set<std::string, std::less<>>& used, int32_t max_indent) {
    // The closure of `used`, written in table order so the text is stable.
    std::set<std::string_view> needed;
    std::vector<std::string_view> pending(used.begin(), used.end());
    while (!pending.empty()) {
        const std::string_view name = pending.back();
        pending.pop_back();
        const PrimitiveRule* rule = Find(name);
        if (rule == nullptr || !needed.insert(rule->name).second) continue;
        for (const std::string_view dep : rule->uses) pending.push_back(dep);
    }
    std::string out;
    for (const PrimitiveRule& rule : Table()) {
        if (!needed.count(rule.name)) continue;
        std::string body(rule.body);
        if (const size_t at = body.find("$INDENT"); at != std::string::npos) {
            body.replace(at, 7, std::to_string(max_indent));
        }
        absl::StrAppend(&out, std::string(rule.name), " ::= ", body, "\n");
    }
    return out;
}

}  // namespace prepack::grammar::schema
