// The regex front end (regex_to_gbnf.h, ecma_regex.h): the GBNF it writes,
// compiled and run by the matcher, against Python's `re` (cross-checked with
// V8 when the goldens were made: scripts/make_grammar_regex_goldens.py) for
// full matches, for JSON string content in full and in search (JSON Schema
// `pattern`) semantics; each refused construct by name and offset; the
// limits; and the JSON escapes checked code point by code point against
// their definition.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/grammar_sentences.h"
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/grammar/ecma_regex.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/json_schema.h"
#include "core/grammar/matcher.h"
#include "core/grammar/regex_to_gbnf.h"

namespace prepack::grammar {
namespace {

std::string Gbnf(std::string_view regex) {
    absl::StatusOr<std::string> g = RegexToGbnf(regex);
    EXPECT_TRUE(g.ok()) << regex << ": " << g.status();
    return g.ok() ? *g : "root ::= \"\"\n";
}

// A whole JSON string (with its quotes) whose value the regex matches.
std::string JsonStringGbnf(std::string_view regex, bool search) {
    std::string rules;
    absl::StatusOr<std::string> content = RegexToJsonStringContentGbnf(regex, search, "value", &rules);
    EXPECT_TRUE(content.ok()) << regex << ": " << content.status();
    if (!content.ok()) return "root ::= \"\"\n";
    return absl::StrCat("root ::= \"\\\"\" ", *content, " \"\\\"\"\n", rules);
}

std::string Utf8(char32_t c) {
    std::string out;
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
    return out;
}

// ---- Goldens ---------------------------------------------------------------------

nlohmann::json LoadGoldens() {
    const std::string path = std::string(PREPACK_SOURCE_DIR) + "/tests/data/grammar/regex/goldens.json";
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot read " << path;
    std::stringstream s;
    s << in.rdbuf();
    return nlohmann::json::parse(s.str());
}

TEST(RegexGoldens, FullMatchAgreesWithPythonRe) {
    const nlohmann::json goldens = LoadGoldens();
    ASSERT_GE(goldens["patterns"].size(), 40u);
    for (const auto& p : goldens["patterns"]) {
        const std::string pattern = p["pattern"];
        SCOPED_TRACE(pattern);
        Sentences checker(Gbnf(pattern));
        ASSERT_TRUE(checker.ok());
        int positives = 0;
        for (const auto& c : p["cases"]) {
            const std::string text = c["text"];
            EXPECT_EQ(checker.Accepts(text), c["full"].get<bool>()) << "text " << c["text"].dump();
            positives += c["full"].get<bool>();
        }
        // Each pattern has cases on both sides.
        EXPECT_GT(positives, 0) << "no positive case for " << pattern;
        EXPECT_LT(positives, static_cast<int>(p["cases"].size())) << "no negative case for " << pattern;
    }
}

TEST(RegexGoldens, JsonStringContentAgreesWithPythonRe) {
    const nlohmann::json goldens = LoadGoldens();
    for (const bool search : {false, true}) {
        for (const auto& p : goldens["patterns"]) {
            const std::string pattern = p["pattern"];
            SCOPED_TRACE(absl::StrCat(pattern, search ? " (search)" : " (full)"));
            Sentences checker(JsonStringGbnf(pattern, search));
            ASSERT_TRUE(checker.ok());
            for (const auto& c : p["cases"]) {
                const bool expected = c[search ? "search" : "full"].get<bool>();
                for (const auto& spelling : c["json"]) {
                    const std::string json_text = absl::StrCat("\"", spelling.get<std::string>(), "\"");
                    EXPECT_EQ(checker.Accepts(json_text), expected) << "JSON " << json_text;
                }
            }
        }
    }
}

// ---- The GBNF text ---------------------------------------------------------------

TEST(RegexToGbnf, WritesLiteralsClassesAndQuantifiers) {
    EXPECT_EQ(Gbnf("abc"), "root ::= \"abc\"\n");
    EXPECT_EQ(Gbnf("^abc$"), "root ::= \"abc\"\n") << "anchors at the ends are redundant";
    EXPECT_EQ(Gbnf("a(?:bc)*?d{2,3}"), "root ::= \"a\" ( \"bc\" )* \"d\"{2,3}\n");
    EXPECT_EQ(Gbnf("[a-c_]+|x?"), "root ::= ( [_a-c]+ | \"x\"? )\n");
    EXPECT_EQ(Gbnf("(?<n>a|b){3,}"), "root ::= ( \"a\" | \"b\" ){3,}\n");
    EXPECT_EQ(Gbnf("a{0}b"), "root ::= \"b\"\n");
    // Characters GBNF gives a meaning to are escaped.
    EXPECT_EQ(Gbnf("\"\\\\"), "root ::= \"\\\"\\\\\"\n");
    EXPECT_EQ(Gbnf("[\\]\\-^\\\\\"]"), "root ::= [\\x22\\x2D\\x5C-\\x5E]\n");
    EXPECT_EQ(Gbnf("\\u00e9\\u{1F600}\\n"), "root ::= \"\\u00E9\\U0001F600\\n\"\n");
}

TEST(RegexToGbnf, EveryCharacterOfAClassRoundTrips) {
    // A class of characters GBNF escapes differently, each alone: the GBNF
    // accepts exactly that character.
    const std::vector<char32_t> chars = {0, 1, '\t', '\n', '\r', ' ', '"', '-', '[', '\\', ']', '^', '#', '|', 0x7F,
                                         0x80, 0xFF, 0x100, 0x2028, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF};
    std::string pattern = "[";
    for (char32_t c : chars) pattern += absl::StrFormat("\\u{%X}", static_cast<uint32_t>(c));
    pattern += "]";
    Sentences checker(Gbnf(pattern));
    ASSERT_TRUE(checker.ok());
    for (char32_t c : chars) EXPECT_TRUE(checker.Accepts(Utf8(c))) << std::hex << static_cast<uint32_t>(c);
    for (char32_t c : {char32_t{'a'}, char32_t{'!'}, char32_t{0x81}, char32_t{0x10FFFE}}) {
        EXPECT_FALSE(checker.Accepts(Utf8(c))) << std::hex << static_cast<uint32_t>(c);
    }
    EXPECT_FALSE(checker.Accepts("\xED\xA0\x80")) << "a surrogate's encoding is not UTF-8";
}

TEST(RegexToGbnf, NegatedClassesNeverAllowSurrogatesOrInvalidUtf8) {
    Sentences checker(Gbnf("[^a]"));
    ASSERT_TRUE(checker.ok());
    EXPECT_TRUE(checker.Accepts("b"));
    EXPECT_TRUE(checker.Accepts("\xF4\x8F\xBF\xBF"));   // U+10FFFF
    EXPECT_FALSE(checker.Accepts("a"));
    EXPECT_FALSE(checker.Accepts("\xED\xA0\x80"));      // U+D800
    EXPECT_FALSE(checker.Accepts("\xC0\x80"));          // overlong NUL
    EXPECT_FALSE(checker.Accepts("\xFF"));
}

TEST(RegexToGbnf, DeepNestingWithinTheLimitCompiles) {
    const int depth = RegexLimits{}.max_nesting;
    const std::string pattern = std::string(depth, '(') + "a|b" + std::string(depth, ')') + "c";
    Sentences checker(Gbnf(pattern));
    ASSERT_TRUE(checker.ok());
    EXPECT_TRUE(checker.Accepts("ac"));
    EXPECT_TRUE(checker.Accepts("bc"));
    EXPECT_FALSE(checker.Accepts("abc"));
}

// ---- Refusals ------------------------------------------------------------------

void ExpectRefused(std::string_view regex, std::string_view message, size_t offset) {
    absl::StatusOr<std::string> g = RegexToGbnf(regex);
    ASSERT_FALSE(g.ok()) << regex << " gave\n" << *g;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << regex;
    EXPECT_NE(std::string(g.status().message()).find(message), std::string::npos) << regex << ": " << g.status();
    EXPECT_NE(g.status().message().find(absl::StrCat("offset ", offset)), std::string_view::npos)
        << regex << ": " << g.status();
    // The JSON content form refuses the same way.
    std::string rules;
    EXPECT_FALSE(RegexToJsonStringContentGbnf(regex, true, "p", &rules).ok()) << regex;
}

TEST(RegexToGbnf, RefusesNonRegularAndUnsupportedConstructsByName) {
    ExpectRefused("(a)\\1", "backreference \\1", 3);
    ExpectRefused("(?<x>a)\\k<x>", "backreference \\k<name>", 7);
    ExpectRefused("a(?=b)", "lookahead", 1);
    ExpectRefused("a(?!b)", "lookahead", 1);
    ExpectRefused("(?<=a)b", "lookbehind", 0);
    ExpectRefused("(?<!a)b", "lookbehind", 0);
    ExpectRefused("a^b", "'^'", 1);
    ExpectRefused("(^a)", "'^'", 1);
    ExpectRefused("a$b", "'$'", 1);
    ExpectRefused("(a$)", "'$'", 2);
    ExpectRefused("a\\bc", "word boundary \\b", 1);
    ExpectRefused("\\B", "word boundary \\B", 0);
    ExpectRefused("(?i)abc", "inline flags", 0);
    ExpectRefused("(?i:abc)", "inline flags", 0);
    ExpectRefused("(?P<n>a)", "Python syntax", 0);
    ExpectRefused("\\p{L}", "Unicode property escapes", 0);
    ExpectRefused("x\\P{L}", "Unicode property escapes", 1);
    ExpectRefused("\\z", "\\z is not an escape", 0);
    ExpectRefused("ab\\A", "\\A is not an escape", 2);
    ExpectRefused("\\01", "octal", 0);
    ExpectRefused("[\\1]", "octal", 1);
    ExpectRefused("[\\d-z]", "range's end", 1);
    ExpectRefused("[z-a]", "range out of order", 1);
    ExpectRefused("a{3,2}", "out of order", 1);
    ExpectRefused("a{,3}", "'{,n}' is ambiguous", 1);
    ExpectRefused("*a", "nothing to repeat", 0);
    ExpectRefused("a|+", "nothing to repeat", 2);
    ExpectRefused("a**", "nothing to repeat", 2);
    ExpectRefused("a{2}{3}", "nothing to repeat", 4);
    ExpectRefused("a++", "possessive", 2);
    ExpectRefused("{2}", "nothing to repeat", 0);
    ExpectRefused("(ab", "unterminated group", 0);
    ExpectRefused("ab)", "unmatched ')'", 2);
    ExpectRefused("[ab", "unterminated character class", 0);
    ExpectRefused("ab\\", "at the end of the pattern", 2);
    ExpectRefused("\\x4", "\\x needs 2 hex digits", 0);
    ExpectRefused("\\u12G4", "\\u needs 4 hex digits", 0);
    ExpectRefused("\\u{110000}", "above U+10FFFF", 0);
    ExpectRefused("\\u{}", "malformed \\u{...}", 0);
    ExpectRefused("a\\uD800", "lone surrogate", 1);
    ExpectRefused("\\uDC00\\uD800", "lone surrogate", 0);
    ExpectRefused("\\c1", "\\c must be followed by a letter", 0);
    ExpectRefused("(?<>a)", "malformed group name", 0);
    ExpectRefused("é\xFF", "invalid UTF-8", 2);
}

TEST(RegexToGbnf, RefusesPatternsOverTheLimits) {
    const RegexLimits limits;
    EXPECT_TRUE(RegexToGbnf(absl::StrCat("a{", limits.max_repeat, "}")).ok());
    ExpectRefused(absl::StrCat("a{", limits.max_repeat + 1, "}"), "counted repetition over 1000", 1);
    ExpectRefused("a{99999999999999999999}", "counted repetition over", 1);
    ExpectRefused("b{0,1001}", "counted repetition over", 1);
    // (a{100}){100} is 10^4 classes, times 10 more is over 10^5.
    EXPECT_TRUE(RegexToGbnf("(a{100}){100}").ok());
    absl::StatusOr<std::string> big = RegexToGbnf("((a{100}){100}){11}");
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.status().message().find("expand to over 100000"), std::string_view::npos) << big.status();
    const std::string deep = std::string(limits.max_nesting + 1, '(') + "a" + std::string(limits.max_nesting + 1, ')');
    ExpectRefused(deep, "nested deeper than 100", limits.max_nesting);
    absl::StatusOr<std::string> long_pattern = RegexToGbnf(std::string(limits.max_pattern_bytes + 1, 'a'));
    ASSERT_FALSE(long_pattern.ok());
    EXPECT_NE(long_pattern.status().message().find("over the limit"), std::string_view::npos);
    // Limits are the caller's to choose.
    RegexLimits tight;
    tight.max_repeat = 5;
    EXPECT_FALSE(RegexToGbnfWithLimits("a{6}", tight).ok());
    EXPECT_TRUE(RegexToGbnfWithLimits("a{5}", tight).ok());
}

TEST(RegexToGbnf, EmptyLanguageIsAnErrorButAnEmptyBranchIsDropped) {
    absl::StatusOr<std::string> none = RegexToGbnf("[]");
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.status().message().find("matches no string"), std::string_view::npos);
    EXPECT_FALSE(RegexToGbnf("a[^\\s\\S]").ok());
    EXPECT_FALSE(RegexToGbnf("[]+").ok());
    Sentences checker(Gbnf("[]*x|[]"));
    ASSERT_TRUE(checker.ok());
    EXPECT_TRUE(checker.Accepts("x"));
    EXPECT_FALSE(checker.Accepts(""));
}

// ---- ECMAScript's classes ----------------------------------------------------------

TEST(EcmaRegex, ClassEscapesAreEcmaScriptsSets) {
    // \s: ECMAScript's WhiteSpace + LineTerminator, listed from the spec.
    const std::vector<char32_t> spaces = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002,
                                          0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028,
                                          0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF};
    const CodePointSet s = SpaceSet();
    size_t count = 0;
    for (char32_t c = 0; c <= 0x10FFFF; ++c) count += s.Contains(c);
    EXPECT_EQ(count, spaces.size());
    for (char32_t c : spaces) EXPECT_TRUE(s.Contains(c)) << std::hex << static_cast<uint32_t>(c);
    // `.`: everything but the four line terminators (and surrogates, never text).
    const CodePointSet dot = DotSet();
    for (char32_t c : {U'\n', U'\r', U'\u2028', U'\u2029'}) EXPECT_FALSE(dot.Contains(c));
    EXPECT_FALSE(dot.Contains(0xD800));
    EXPECT_TRUE(dot.Contains(0x85)) << "NEL is not an ECMAScript line terminator";
    // \w \d are ASCII.
    EXPECT_FALSE(WordSet().Contains(U'é'));
    EXPECT_FALSE(DigitSet().Contains(0x663)) << "Arabic-Indic three";
    EXPECT_EQ(WordSet().Complement().Complement(), WordSet());
}

// ---- JSON string content ---------------------------------------------------------

TEST(RegexToJsonStringContent, EscapesFollowJsonsGrammar) {
    Sentences nl(JsonStringGbnf("\\n", false));
    ASSERT_TRUE(nl.ok());
    EXPECT_TRUE(nl.Accepts("\"\\n\""));
    EXPECT_TRUE(nl.Accepts("\"\\u000a\""));
    EXPECT_TRUE(nl.Accepts("\"\\u000A\""));
    EXPECT_FALSE(nl.Accepts("\"\n\"")) << "JSON forbids a raw newline in a string";
    EXPECT_FALSE(nl.Accepts("\"\\U000A\"")) << "the u is lower-case";
    EXPECT_FALSE(nl.Accepts("\"\\x0a\""));

    Sentences quote(JsonStringGbnf("\"/\\\\", false));
    ASSERT_TRUE(quote.ok());
    EXPECT_TRUE(quote.Accepts(R"("\"/\\")"));
    EXPECT_TRUE(quote.Accepts(R"("\"\/\\")"));
    EXPECT_TRUE(quote.Accepts(R"("\u0022\u002F\u005c")"));
    EXPECT_FALSE(quote.Accepts(R"(""/\\")"));
    EXPECT_FALSE(quote.Accepts(R"("\"/")"));

    // Supplementary characters: raw or a surrogate pair, never half of one.
    Sentences any(JsonStringGbnf(".", false));
    ASSERT_TRUE(any.ok());
    EXPECT_TRUE(any.Accepts("\"\xF0\x9F\x98\x80\""));
    EXPECT_TRUE(any.Accepts("\"\\ud83d\\ude00\""));
    EXPECT_TRUE(any.Accepts("\"\\uD83D\\uDE00\""));
    EXPECT_FALSE(any.Accepts("\"\\ud83d\""));
    EXPECT_FALSE(any.Accepts("\"\\ude00\""));
    EXPECT_FALSE(any.Accepts("\"\\ude00\\ud83d\""));
    EXPECT_FALSE(any.Accepts("\"\\u2028\"")) << "a line terminator, which . excludes";
    EXPECT_TRUE(any.Accepts("\"\\u0085\""));
}

// Every BMP code point's \uXXXX spelling, upper and lower case, sampled with
// a stride plus each range's edges, against the set itself.
TEST(RegexToJsonStringContent, UnicodeEscapesMatchTheClassExactly) {
    const std::string pattern = "[\\u0000-\\u0009\\u0100-\\u0FFE\\u1234\\uABCD-\\uD7FF\\uE000-\\uE0FF\\uFFF0-\\uFFFF]";
    absl::StatusOr<ParsedRegex> parsed = ParseEcmaRegex(pattern);
    ASSERT_TRUE(parsed.ok());
    const CodePointSet& set = parsed->branches[0].tree.set;
    Sentences checker(JsonStringGbnf(pattern, false));
    ASSERT_TRUE(checker.ok());
    std::vector<uint32_t> probes;
    for (uint32_t v = 0; v <= 0xFFFF; v += 61) probes.push_back(v);
    for (const CodePointSet::Range& r : set.ranges()) {
        for (const uint32_t v : std::vector<uint32_t>{r.lo - 1u, r.lo, r.lo + 1u, r.hi - 1u, r.hi, r.hi + 1u}) {
            if (v <= 0xFFFF) probes.push_back(v);
        }
    }
    for (uint32_t v : probes) {
        const bool expected = set.Contains(v);
        EXPECT_EQ(checker.Accepts(absl::StrFormat("\"\\u%04X\"", v)), expected) << std::hex << v;
        EXPECT_EQ(checker.Accepts(absl::StrFormat("\"\\u%04x\"", v)), expected) << std::hex << v;
    }
}

TEST(RegexToJsonStringContent, SurrogatePairsMatchTheClassExactly) {
    const std::string pattern = "[\\u{10000}-\\u{103FF}\\u{1F600}-\\u{1F64F}\\u{10FC00}-\\u{10FFFF}\\u{20000}-\\u{2A6DF}]";
    absl::StatusOr<ParsedRegex> parsed = ParseEcmaRegex(pattern);
    ASSERT_TRUE(parsed.ok());
    const CodePointSet& set = parsed->branches[0].tree.set;
    Sentences checker(JsonStringGbnf(pattern, false));
    ASSERT_TRUE(checker.ok());
    std::vector<uint32_t> probes;
    for (uint32_t v = 0x10000; v <= 0x10FFFF; v += 4099) probes.push_back(v);
    for (const CodePointSet::Range& r : set.ranges()) {
        for (const uint32_t v : std::vector<uint32_t>{r.lo - 1u, r.lo, r.lo + 1u, r.hi - 1u, r.hi, r.hi + 1u}) {
            if (v >= 0x10000 && v <= 0x10FFFF) probes.push_back(v);
        }
    }
    for (uint32_t v : probes) {
        const uint32_t high = 0xD800 + ((v - 0x10000) >> 10), low = 0xDC00 + ((v - 0x10000) & 0x3FF);
        const bool expected = set.Contains(v);
        EXPECT_EQ(checker.Accepts(absl::StrFormat("\"\\u%04X\\u%04x\"", high, low)), expected) << std::hex << v;
        EXPECT_EQ(checker.Accepts(absl::StrCat("\"", Utf8(v), "\"")), expected) << std::hex << v;
    }
}

TEST(RegexToJsonStringContent, RulesAreNamedByThePrefixAndComposeInOneGrammar) {
    std::string rules;
    absl::StatusOr<std::string> a = RegexToJsonStringContentGbnf("[a-c]+", false, "first", &rules);
    absl::StatusOr<std::string> b = RegexToJsonStringContentGbnf("^x", true, "second-2", &rules);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, "first");
    EXPECT_EQ(*b, "second-2");
    std::istringstream lines(rules);
    for (std::string line; std::getline(lines, line);) {
        EXPECT_TRUE(line.rfind("first", 0) == 0 || line.rfind("second-2", 0) == 0) << line;
    }
    // [a-c] is written once however often it appears.
    std::string repeated;
    ASSERT_TRUE(RegexToJsonStringContentGbnf("[a-c]x[a-c]+y[a-c]", false, "r", &repeated).ok());
    EXPECT_EQ(repeated.find("::= [a-c]"), repeated.rfind("::= [a-c]"));

    Sentences checker(absl::StrCat("root ::= \"[\\\"\" first \"\\\",\\\"\" second-2 \"\\\"]\"\n", rules));
    ASSERT_TRUE(checker.ok());
    EXPECT_TRUE(checker.Accepts(R"(["abc","xyz"])"));
    EXPECT_TRUE(checker.Accepts(R"(["\u0061","x"])"));
    EXPECT_FALSE(checker.Accepts(R"(["abd","xyz"])"));
    EXPECT_FALSE(checker.Accepts(R"(["abc","yx"])"));

    std::string unused;
    for (std::string_view bad : {"", "a_b", "a b", "é"}) {
        absl::StatusOr<std::string> r = RegexToJsonStringContentGbnf("a", false, bad, &unused);
        EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    }
    EXPECT_EQ(unused, "") << "nothing is written on error";
}

}  // namespace
}  // namespace prepack::grammar
