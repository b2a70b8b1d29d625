// The GBNF front end (core/grammar/gbnf.h): llama.cpp's syntax and its
// errors, code points to UTF-8 bytes, what becomes a lexeme, and the
// language of whole grammars against oracles that know nothing of the
// parser (Python's json, ast and re, run offline by
// tests/data/grammar/gbnf/make_goldens.py into goldens.json).
//
// Membership is decided by naive recognizers written here from the IR's
// definitions (grammar_ir.h): a regex's set of end positions by structural
// recursion, and a grammar's derivations as a least fixpoint over a table
// (left recursion and empty rules need no parsing strategy). Short texts
// only: positions are bits of a uint64_t.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include "core/grammar/gbnf.h"
#include "core/grammar/matcher.h"
#include "core/grammar/utf8_ranges.h"
#include "nlohmann/json.hpp"

namespace prepack::grammar {
namespace {

using Kind = RegexNode::Kind;

// ---- naive recognizers -------------------------------------------------

class NaiveRegex {
public:
    NaiveRegex(const Grammar& g, std::string_view text) : g_(g), text_(text) {}

    // Bit p set: the node matches text_[start, p).
    uint64_t Ends(int32_t node, size_t start) {
        const uint64_t key = static_cast<uint64_t>(node) * 64 + start;
        auto it = memo_.find(key);
        if (it != memo_.end()) return it->second;
        const uint64_t ends = Compute(g_.regex[node], start);
        memo_.emplace(key, ends);
        return ends;
    }

private:
    uint64_t Step(int32_t node, uint64_t from) {
        uint64_t next = 0;
        for (size_t p = 0; p <= text_.size(); ++p) {
            if ((from >> p) & 1) next |= Ends(node, p);
        }
        return next;
    }

    uint64_t Compute(const RegexNode& node, size_t start) {
        const uint64_t here = uint64_t{1} << start;
        switch (node.kind) {
            case Kind::kEmpty:
                return here;
            case Kind::kByteSet:
                return start < text_.size() && node.HasByte(static_cast<uint8_t>(text_[start])) ? here << 1 : 0;
            case Kind::kConcat: {
                uint64_t cur = here;
                for (int32_t child : node.children) cur = Step(child, cur);
                return cur;
            }
            case Kind::kAlt: {
                uint64_t ends = 0;
                for (int32_t child : node.children) ends |= Ends(child, start);
                return ends;
            }
            case Kind::kRepeat: {
                // The sets after exactly k copies; once k >= min and a set
                // adds nothing new, later ones cannot either.
                uint64_t cur = here;
                uint64_t result = node.min == 0 ? here : 0;
                for (int64_t k = 1; node.max == RegexNode::kUnbounded || k <= node.max; ++k) {
                    cur = Step(node.children[0], cur);
                    if (cur == 0) break;
                    if (k >= node.min) {
                        if (k > node.min && (cur & ~result) == 0) break;
                        result |= cur;
                    }
                }
                return result;
            }
        }
        return 0;
    }

    const Grammar&                         g_;
    std::string_view                       text_;
    std::unordered_map<uint64_t, uint64_t> memo_;
};

bool RegexMatches(const Grammar& g, int32_t node, std::string_view text) {
    EXPECT_LT(text.size(), 64u);
    NaiveRegex regex(g, text);
    return (regex.Ends(node, 0) >> text.size()) & 1;
}

bool GrammarAccepts(const Grammar& g, std::string_view text) {
    EXPECT_LT(text.size(), 64u);
    if (g.rules.empty()) return false;   // MustParse failed and said so
    const size_t n = text.size();
    NaiveRegex regex(g, text);
    std::vector<std::vector<uint64_t>> lexeme_ends(g.lexemes.size(), std::vector<uint64_t>(n + 1));
    for (size_t l = 0; l < g.lexemes.size(); ++l) {
        for (size_t p = 0; p <= n; ++p) lexeme_ends[l][p] = regex.Ends(g.lexemes[l].regex, p);
    }
    std::vector<std::vector<uint64_t>> rule_ends(g.rules.size(), std::vector<uint64_t>(n + 1, 0));
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < g.rules.size(); ++r) {
            for (size_t start = 0; start <= n; ++start) {
                uint64_t ends = 0;
                for (const auto& alternative : g.rules[r].alternatives) {
                    uint64_t cur = uint64_t{1} << start;
                    for (const Symbol& s : alternative) {
                        uint64_t next = 0;
                        for (size_t p = 0; p <= n; ++p) {
                            if (!((cur >> p) & 1)) continue;
                            next |= s.is_lexeme ? lexeme_ends[s.index][p] : rule_ends[s.index][p];
                        }
                        cur = next;
                    }
                    ends |= cur;
                }
                if (ends & ~rule_ends[r][start]) {
                    rule_ends[r][start] |= ends;
                    changed = true;
                }
            }
        }
    }
    return (rule_ends[g.start][0] >> n) & 1;
}

Grammar MustParse(std::string_view text, std::string_view root = "root") {
    absl::StatusOr<Grammar> g = ParseGbnf(text, root);
    EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
    return g.ok() ? *std::move(g) : Grammar{};
}

bool Accepts(std::string_view gbnf, std::string_view text) { return GrammarAccepts(MustParse(gbnf), text); }

std::string ReadDataFile(const std::string& name) {
    std::ifstream in(std::string(PREPACK_SOURCE_DIR) + "/tests/data/grammar/gbnf/" + name, std::ios::binary);
    EXPECT_TRUE(in.good()) << name;
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// The test's own UTF-8 encoder (the library's is under test).
std::string Utf8(uint32_t cp) {
    if (cp < 0x80) return std::string(1, static_cast<char>(cp));
    const int n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    const uint8_t lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
    std::string s(n, '\0');
    s[0] = static_cast<char>(lead[n] | (cp >> (6 * (n - 1))));
    for (int i = 1; i < n; ++i) s[i] = static_cast<char>(0x80 | ((cp >> (6 * (n - 1 - i))) & 0x3F));
    return s;
}

// A byte string is one scalar's UTF-8 iff re-encoding the value its bits
// spell gives it back (which rules out overlong forms) and that value is a
// scalar.
bool IsOneScalar(std::string_view s) {
    if (s.empty() || s.size() > 4) return false;
    const uint8_t b0 = s[0];
    const size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n != s.size()) return false;
    uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) {
        if ((static_cast<uint8_t>(s[i]) & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (static_cast<uint8_t>(s[i]) & 0x3F);
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    return Utf8(cp) == s;
}

// ---- syntax --------------------------------------------------------------

TEST(GbnfSyntax, LlamaCppForms) {
    // Comments anywhere, a rule continued after `::=`, after `|` and inside
    // parentheses, CRLF line ends, spaces inside {m,n}, digits and dashes
    // in names, an empty alternative.
    const char* gbnf =
        "# leading comment\r\n"
        "root ::=   # comment after ::=\r\n"
        "   greet-1 ( \"!\"\r\n"
        "  | \"?\" # comment inside a group\n"
        "   )? tail\n"
        "\n"
        "greet-1 ::= \"hi\" |\n"
        "   \"yo\"\n"
        "tail ::= [0-9]{ 1 , 2 } |\n";
    const Grammar g = MustParse(gbnf);
    for (std::string ok : {"hi", "yo!", "hi?", "hi12", "yo?7", "hi!"}) EXPECT_TRUE(GrammarAccepts(g, ok)) << ok;
    for (std::string bad : {"", "hi!?", "hi123", "y", "hi 1", "hey"}) EXPECT_FALSE(GrammarAccepts(g, bad)) << bad;
}

TEST(GbnfSyntax, Repetitions) {
    EXPECT_TRUE(Accepts("root ::= \"ab\"*", ""));
    EXPECT_TRUE(Accepts("root ::= \"ab\"*", "ababab"));
    EXPECT_FALSE(Accepts("root ::= \"ab\"*", "aba"));   // the whole literal repeats
    EXPECT_FALSE(Accepts("root ::= \"ab\"+", ""));
    EXPECT_TRUE(Accepts("root ::= \"ab\"+", "abab"));
    EXPECT_TRUE(Accepts("root ::= \"a\"? \"b\"", "b"));
    EXPECT_FALSE(Accepts("root ::= \"a\"? \"b\"", "aab"));
    for (int n = 0; n <= 6; ++n) {
        const std::string s(n, 'x');
        EXPECT_EQ(Accepts("root ::= \"x\"{3}", s), n == 3) << n;
        EXPECT_EQ(Accepts("root ::= \"x\"{2,}", s), n >= 2) << n;
        EXPECT_EQ(Accepts("root ::= \"x\"{2,4}", s), n >= 2 && n <= 4) << n;
        EXPECT_EQ(Accepts("root ::= \"x\"{,2}", s), n <= 2) << n;
        EXPECT_EQ(Accepts("root ::= \"x\"{0}", s), n == 0) << n;
        // Stacked: (x{2})* is an even count.
        EXPECT_EQ(Accepts("root ::= \"x\"{2}*", s), n % 2 == 0) << n;
    }
}

TEST(GbnfSyntax, ClassesAndDot) {
    const Grammar g = MustParse("root ::= [a-c_-] [^0-9\\]] [-x] .");
    EXPECT_TRUE(GrammarAccepts(g, "a_-z"));
    EXPECT_TRUE(GrammarAccepts(g, "-a-\xC3\xA9"));
    EXPECT_TRUE(GrammarAccepts(g, "_[x\xF0\x9F\x98\x80"));
    EXPECT_FALSE(GrammarAccepts(g, "d__a"));        // d is not in [a-c_-]
    EXPECT_FALSE(GrammarAccepts(g, "a5xa"));        // 5 is in [0-9]
    EXPECT_FALSE(GrammarAccepts(g, "a]xa"));        // \] is excluded
    EXPECT_FALSE(GrammarAccepts(g, "a_y."));        // [-x] is '-' or 'x'
    EXPECT_FALSE(GrammarAccepts(g, "a_x\xC3"));     // '.' is a whole code point
    // `[^]` is every code point; a trailing '-' is literal.
    EXPECT_TRUE(Accepts("root ::= [^]", "\xE2\x82\xAC"));
    EXPECT_TRUE(Accepts("root ::= [a-]", "-"));
    EXPECT_FALSE(Accepts("root ::= [a-]", "b"));
}

TEST(GbnfSyntax, EscapesAreCodePoints) {
    // \xHH is a code point as in llama.cpp: \xE9 is U+00E9, two bytes.
    const Grammar g = MustParse(R"(root ::= "\x41\xE9\u00e9\U0001F600\t\n\r\"\\\[\]" [\x5D\u005b])");
    const std::string expected = "A\xC3\xA9\xC3\xA9\xF0\x9F\x98\x80\t\n\r\"\\[]";
    EXPECT_TRUE(GrammarAccepts(g, expected + "]"));
    EXPECT_TRUE(GrammarAccepts(g, expected + "["));
    EXPECT_FALSE(GrammarAccepts(g, expected));
    EXPECT_FALSE(GrammarAccepts(g, "A\xE9\xC3\xA9\xF0\x9F\x98\x80\t\n\r\"\\[]]"));   // raw byte E9 is not U+00E9
    // Raw UTF-8 in literals and classes.
    EXPECT_TRUE(Accepts("root ::= \"猫\" [α-ω]", "猫β"));
    EXPECT_FALSE(Accepts("root ::= \"猫\" [α-ω]", "猫A"));
}

TEST(GbnfSyntax, DefinitionsAndRoot) {
    // The last definition of a rule wins (llama.cpp overwrites it).
    EXPECT_TRUE(Accepts("root ::= a\na ::= \"x\"\na ::= \"y\"", "y"));
    EXPECT_FALSE(Accepts("root ::= a\na ::= \"x\"\na ::= \"y\"", "x"));
    // Unreachable rules are fine; another start rule can be named.
    EXPECT_TRUE(Accepts("root ::= \"r\"\nunused ::= \"u\"", "r"));
    const Grammar g = MustParse("top ::= \"t\" top | \"t\"", "top");
    EXPECT_TRUE(GrammarAccepts(g, "ttt"));
    EXPECT_FALSE(GrammarAccepts(g, ""));
}

struct ErrorCase {
    const char*       gbnf;
    absl::StatusCode  code;
    const char*       message_part;   // a substring of the message, with line:column
};

TEST(GbnfSyntax, ErrorsNameTheProblemAndPlace) {
    const ErrorCase cases[] = {
        {"root ::= \"a\"\nother \"b\"", absl::StatusCode::kInvalidArgument, "2:7: expecting '::=' after the rule name 'other'"},
        {"::= \"a\"", absl::StatusCode::kInvalidArgument, "1:1: expecting a rule name"},
        {"root ::= undefined-rule", absl::StatusCode::kInvalidArgument, "1:10: undefined rule 'undefined-rule'"},
        {"start ::= \"a\"", absl::StatusCode::kInvalidArgument, "no rule named 'root'"},
        {"root ::= \"abc", absl::StatusCode::kInvalidArgument, "1:10: unterminated string literal"},
        {"root ::= [abc", absl::StatusCode::kInvalidArgument, "1:10: unterminated character class"},
        {"root ::= []", absl::StatusCode::kInvalidArgument, "1:10: character class [] matches no character"},
        {"root ::= [^\\x00-\\U0010FFFF]", absl::StatusCode::kInvalidArgument, "1:10: character class"},
        {"root ::= [z-a]", absl::StatusCode::kInvalidArgument, "1:11: character range z-a ends before it starts"},
        {"root ::= (\"a\" | \"b\"", absl::StatusCode::kInvalidArgument, "1:20: expecting ')' to close the group opened at 1:10"},
        {"root ::= \"a\" )", absl::StatusCode::kInvalidArgument, "1:14: unmatched ')'"},
        {"root ::= * \"a\"", absl::StatusCode::kInvalidArgument, "1:10: '*' has nothing before it to repeat"},
        {"root ::= \"a\"{2", absl::StatusCode::kInvalidArgument, "1:15: expecting ',' or '}'"},
        {"root ::= \"a\"{x}", absl::StatusCode::kInvalidArgument, "1:14: expecting a number after '{'"},
        {"root ::= \"a\"{,}", absl::StatusCode::kInvalidArgument, "1:15: expecting the upper bound"},
        {"root ::= \"a\"{3,2}", absl::StatusCode::kInvalidArgument, "1:13: repetition {3,2} has its upper bound below"},
        {"root ::= \"\\q\"", absl::StatusCode::kInvalidArgument, "1:11: unknown escape '\\q'"},
        {"root ::= \"\\x4\"", absl::StatusCode::kInvalidArgument, "1:14: expecting 2 hex digits after '\\x'"},
        {"root ::= \"\\U00110000\"", absl::StatusCode::kInvalidArgument, "1:11: code point U+110000 is past U+10FFFF"},
        {"root ::= \"\\uD800\"", absl::StatusCode::kInvalidArgument, "1:11: surrogate U+D800 has no UTF-8 form"},
        {"root ::= <[1234]>", absl::StatusCode::kInvalidArgument, "1:10: token references like <[123]> or <name> are not supported"},
        {"root ::= !<[1234]>", absl::StatusCode::kInvalidArgument, "1:10: negated token references"},
        {"root ::= \"a\"\n\"b\"", absl::StatusCode::kInvalidArgument, "2:1: expecting a rule name"},
        // As in llama.cpp, a rule goes on to the next line only after `|`
        // or inside parentheses.
        {"root ::= \"a\"\n  | \"b\"", absl::StatusCode::kInvalidArgument, "2:3: expecting a rule name"},
        {"root ::= \"a\" ::= \"b\"", absl::StatusCode::kInvalidArgument, "1:14: expecting an item, '|' or the end of the line in rule 'root', found ':'"},
        {"root ::= \"\xC3\"", absl::StatusCode::kInvalidArgument, "1:11: invalid UTF-8"},
        {"root ::= \"a\"\n# nul \x01", absl::StatusCode::kOk, ""},
    };
    for (const ErrorCase& c : cases) {
        const absl::StatusOr<Grammar> g = ParseGbnf(c.gbnf);
        EXPECT_EQ(g.status().code(), c.code) << c.gbnf << " -> " << g.status();
        EXPECT_NE(std::string(g.status().message()).find(c.message_part), std::string::npos)
            << c.gbnf << " -> " << g.status();
    }
    // A NUL byte (llama.cpp would stop reading there).
    const std::string with_nul("root ::= \"a\0\"", 13);
    EXPECT_EQ(ParseGbnf(with_nul).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(ParseGbnf(with_nul).status().message()).find("1:12: NUL byte"), std::string::npos);
}

// ---- limits ----------------------------------------------------------------

TEST(GbnfLimits, RefusedPastEveryLimit) {
    GbnfLimits limits;
    limits.max_repeat = 50;
    EXPECT_EQ(ParseGbnf("root ::= \"a\"{51}", "root", limits).status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(ParseGbnf("root ::= \"a\"{99999999999999999999}", "root", limits).status().code(),
              absl::StatusCode::kResourceExhausted);
    EXPECT_TRUE(ParseGbnf("root ::= \"a\"{50}", "root", limits).ok());

    limits = {};
    limits.max_text_bytes = 10;
    EXPECT_EQ(ParseGbnf("root ::= \"abc\"", "root", limits).status().code(), absl::StatusCode::kResourceExhausted);

    limits = {};
    limits.max_rules = 3;
    EXPECT_EQ(ParseGbnf("root ::= a b c\na ::= \"a\"\nb ::= \"b\"\nc ::= \"c\"", "root", limits).status().code(),
              absl::StatusCode::kResourceExhausted);
    // Generated rules count too: a bounded repetition of a recursive rule
    // needs one per optional copy.
    EXPECT_EQ(ParseGbnf("root ::= r{0,5}\nr ::= \"(\" r \")\" | \"x\"", "root", limits).status().code(),
              absl::StatusCode::kResourceExhausted);

    // Deep parentheses and stacked repetitions, far past the limit: an
    // error, not a stack overflow.
    std::string deep = "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')');
    EXPECT_EQ(ParseGbnf(deep).status().code(), absl::StatusCode::kResourceExhausted);
    std::string stacked = "root ::= \"a\"" + std::string(100000, '*');
    EXPECT_EQ(ParseGbnf(stacked).status().code(), absl::StatusCode::kResourceExhausted);
    limits = {};
    limits.max_nesting = 3;
    EXPECT_TRUE(ParseGbnf("root ::= ((\"a\")*)", "root", limits).ok());
    EXPECT_EQ(ParseGbnf("root ::= (((\"a\")*))", "root", limits).status().code(), absl::StatusCode::kResourceExhausted);
}

void ExpectWellFormed(const Grammar& g, const std::string& context);   // below

// A regex node's size as GbnfLimits::max_lexeme_nodes counts it (shared
// subtrees at every use, a repetition at its largest count), recomputed
// here from the IR alone.
int64_t ExpandedSize(const Grammar& g, int32_t node, std::unordered_map<int32_t, int64_t>* memo) {
    constexpr int64_t kHuge = int64_t{1} << 40;
    auto it = memo->find(node);
    if (it != memo->end()) return it->second;
    const RegexNode& n = g.regex[node];
    int64_t children = 0;
    for (int32_t child : n.children) children = std::min(kHuge, children + ExpandedSize(g, child, memo));
    if (n.kind == Kind::kRepeat) children = std::min(kHuge, children * std::max({n.min, n.max, 1}));
    const int64_t size = std::min(kHuge, 1 + children);
    memo->emplace(node, size);
    return size;
}

int64_t LargestLexeme(const Grammar& g) {
    std::unordered_map<int32_t, int64_t> memo;
    int64_t largest = 0;
    for (const Lexeme& l : g.lexemes) largest = std::max(largest, ExpandedSize(g, l.regex, &memo));
    return largest;
}

Grammar MustParseWithLexemeCap(std::string_view text, int32_t cap) {
    GbnfLimits limits;
    limits.max_lexeme_nodes = cap;
    absl::StatusOr<Grammar> g = ParseGbnf(text, "root", limits);
    EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
    return g.ok() ? *std::move(g) : Grammar{};
}

TEST(GbnfLimits, LargeRegularPartsStayRulesPastTheLexemeCap) {
    // Each rule doubles the previous one: 2^40 bytes once expanded, though
    // the hash-consed pool holds only a few nodes. Past the lexeme cap the
    // rules stay rules (shared by the parser), so it parses.
    std::string doubling = "root ::= r40\nr0 ::= \"ab\"\n";
    for (int i = 1; i <= 40; ++i) doubling += "r" + std::to_string(i) + " ::= r" + std::to_string(i - 1) + " r" +
                                              std::to_string(i - 1) + "\n";
    const Grammar shared = MustParse(doubling);
    EXPECT_LE(LargestLexeme(shared), GbnfLimits{}.max_lexeme_nodes);
    EXPECT_GE(shared.rules.size(), 20u);   // 2^15 bytes at most per lexeme: r15 and up are rules
    EXPECT_LE(shared.rules.size(), 41u);

    // Nested counted repetitions multiply: 8 million bytes, cut into
    // chunks of the inner repetition.
    const Grammar counted = MustParse("root ::= (((\"a\"){200}){200}){200}");
    EXPECT_GT(counted.lexemes.size(), 0u);
    EXPECT_LE(LargestLexeme(counted), GbnfLimits{}.max_lexeme_nodes);
    const Grammar small = MustParse("root ::= ((\"a\"){200}){200}");
    EXPECT_EQ(small.lexemes.size(), 1u);   // 40,201 nodes: still one lexeme

    // The pool's own node count is still bounded (distinct lexemes).
    GbnfLimits limits;
    limits.max_regex_nodes = 100;
    std::string many = "root ::= \"k0\"";
    for (int i = 1; i < 200; ++i) many += " | \"k" + std::to_string(i) + "\"";
    const absl::StatusOr<Grammar> refused = ParseGbnf(many, "root", limits);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
    EXPECT_NE(std::string(refused.status().message()).find("max_regex_nodes"), std::string::npos);
}

// The same languages whatever the cap, with closed-form answers: a^32
// from doubling rules, a^12 from nested counts, (ab)^2..5, x^3 and more.
TEST(GbnfLimits, LexemeCapChangesTheCutNeverTheLanguage) {
    std::string doubling = "root ::= r5\nr0 ::= \"a\"\n";
    for (int i = 1; i <= 5; ++i) doubling += "r" + std::to_string(i) + " ::= r" + std::to_string(i - 1) + " r" +
                                             std::to_string(i - 1) + "\n";
    struct Case {
        std::string gbnf;
        std::string unit;
        std::function<bool(int)> accepts;   // of `unit` repeated n times
    };
    const std::vector<Case> cases = {
        {doubling, "a", [](int n) { return n == 32; }},
        {"root ::= ((\"a\"){3}){4}", "a", [](int n) { return n == 12; }},
        {"root ::= (\"ab\"){2,5}", "ab", [](int n) { return n >= 2 && n <= 5; }},
        {"root ::= \"x\"{3,}", "x", [](int n) { return n >= 3; }},
        {"root ::= (\"x\"{2}){0,7} \"x\"", "x", [](int n) { return n % 2 == 1 && n <= 15; }},
        {"root ::= \"aaaaaaaaaa\" (\"a\" | \"aa\")?", "a", [](int n) { return n >= 10 && n <= 12; }},
    };
    for (const Case& c : cases) {
        for (int32_t cap : {1, 2, 3, 5, 8, 13, 50000}) {
            const Grammar g = MustParseWithLexemeCap(c.gbnf, cap);
            ExpectWellFormed(g, c.gbnf);
            if (cap >= 3) {
                EXPECT_LE(LargestLexeme(g), cap) << c.gbnf << " cap " << cap;
            }
            std::string text;
            for (int n = 0; text.size() + c.unit.size() + 1 < 64; ++n, text += c.unit) {
                EXPECT_EQ(GrammarAccepts(g, text), c.accepts(n)) << c.gbnf << " cap " << cap << " n " << n;
                if (!text.empty()) {
                    EXPECT_FALSE(GrammarAccepts(g, text + "b" + c.unit)) << c.gbnf;
                }
            }
        }
    }
}

TEST(GbnfLimits, LongReferenceChainsDoNotRecurse) {
    // 9000 regular rules each using the next: built in dependency order,
    // not by recursion through references, into one lexeme.
    std::string chain = "root ::= r0\n";
    for (int i = 0; i < 9000; ++i) chain += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
    chain += "r9000 ::= \"y\"\n";
    const Grammar g = MustParse(chain);
    ASSERT_EQ(g.rules.size(), 1u);
    ASSERT_EQ(g.lexemes.size(), 1u);

    // With a choice at every level the regex nests one level per rule:
    // fine for 150 levels, refused (not a deep recursion later) for 9000.
    auto choice_chain = [](int n) {
        std::string text = "root ::= r0\n";
        for (int i = 0; i < n; ++i) text += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + " | \"y\"\n";
        return text + "r" + std::to_string(n) + " ::= \"z\"\n";
    };
    const Grammar shallow = MustParse(choice_chain(150));
    EXPECT_TRUE(GrammarAccepts(shallow, "xxy"));
    EXPECT_TRUE(GrammarAccepts(shallow, "y"));
    EXPECT_FALSE(GrammarAccepts(shallow, "xx"));
    EXPECT_FALSE(GrammarAccepts(shallow, "xxz"));   // z only after 150 x's
    const absl::StatusOr<Grammar> deep = ParseGbnf(choice_chain(9000));
    EXPECT_EQ(deep.status().code(), absl::StatusCode::kResourceExhausted) << deep.status();
    EXPECT_NE(std::string(deep.status().message()).find("nested deeper"), std::string::npos) << deep.status();
}

// Every index in the IR points inside it, and regex children come before
// their parents (so the pool has no cycle).
void ExpectWellFormed(const Grammar& g, const std::string& context) {
    ASSERT_GE(g.start, 0) << context;
    ASSERT_LT(g.start, static_cast<int32_t>(g.rules.size())) << context;
    for (size_t i = 0; i < g.regex.size(); ++i) {
        for (int32_t child : g.regex[i].children) ASSERT_TRUE(child >= 0 && child < static_cast<int32_t>(i)) << context;
    }
    for (const Lexeme& l : g.lexemes) ASSERT_TRUE(l.regex >= 0 && l.regex < static_cast<int32_t>(g.regex.size())) << context;
    for (const Rule& r : g.rules) {
        for (const auto& alternative : r.alternatives) {
            for (const Symbol& s : alternative) {
                const size_t limit = s.is_lexeme ? g.lexemes.size() : g.rules.size();
                ASSERT_TRUE(s.index >= 0 && static_cast<size_t>(s.index) < limit) << context;
            }
        }
    }
}

// Random edits of the test grammars: each parses or fails with a status,
// and what parses is well formed (meaningful under ASan in CI).
TEST(GbnfRobustness, MutatedGrammarsFailCleanly) {
    std::mt19937 rng(11);
    const std::string pieces[] = {"(", ")", "|", "*", "+", "?", "{2,3}", "{", "}", "[", "]", "^", "-", "\\", "\"",
                                  "::=", "\n", " ", "#", "x", "root", "value", ".", "\\u12", "<", "\xff"};
    int parsed = 0;
    for (const char* file : {"json.gbnf", "arithmetic.gbnf", "nested.gbnf", "japanese.gbnf"}) {
        const std::string original = ReadDataFile(file);
        for (int round = 0; round < 300; ++round) {
            std::string text = original;
            for (int edit = 0; edit < 1 + static_cast<int>(rng() % 3); ++edit) {
                const size_t at = rng() % (text.size() + 1);
                if (rng() % 2 && at < text.size()) {
                    text.erase(at, 1 + rng() % 4);
                } else {
                    text.insert(at, pieces[rng() % std::size(pieces)]);
                }
            }
            const absl::StatusOr<Grammar> g = ParseGbnf(text);
            if (g.ok()) {
                ++parsed;
                ExpectWellFormed(*g, text);
            } else {
                EXPECT_TRUE(g.status().code() == absl::StatusCode::kInvalidArgument ||
                            g.status().code() == absl::StatusCode::kResourceExhausted)
                    << g.status();
                EXPECT_EQ(std::string(g.status().message()).rfind("GBNF", 0), 0u) << g.status();
            }
        }
    }
    EXPECT_GT(parsed, 50);   // the edits leave some grammars valid
}

// ---- code points to bytes ------------------------------------------------------

TEST(Utf8Ranges, SequencesEncodeExactlyTheRange) {
    std::mt19937 rng(47);
    const uint32_t interesting[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF,
                                    0x10000, 0x3FFFF, 0x40000, 0x10FFFF};
    auto random_cp = [&] {
        if (rng() % 3 == 0) {
            const uint32_t base = interesting[rng() % std::size(interesting)];
            return std::min<uint32_t>(0x10FFFF, base + rng() % 3);
        }
        const uint32_t top[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
        return static_cast<uint32_t>(rng() % (top[rng() % 4] + 1));
    };
    for (int round = 0; round < 300; ++round) {
        uint32_t a = random_cp(), b = random_cp();
        if (a > b) std::swap(a, b);
        const std::vector<CodePointRange> ranges = NormalizeScalarRanges({{a, b}});
        std::vector<Utf8Sequence> sequences;
        for (const CodePointRange& r : ranges) {
            for (const Utf8Sequence& s : Utf8Sequences(r)) sequences.push_back(s);
        }
        for (int probe = 0; probe < 200; ++probe) {
            uint32_t cp = probe < 6 ? std::vector<uint32_t>{a, b, a - 1, b + 1, a + 1, b - 1}[probe] : random_cp();
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
            const std::string bytes = Utf8(cp);
            int matching = 0;
            for (const Utf8Sequence& s : sequences) {
                bool all = s.size() == bytes.size();
                for (size_t i = 0; all && i < s.size(); ++i) {
                    all = static_cast<uint8_t>(bytes[i]) >= s[i].lo && static_cast<uint8_t>(bytes[i]) <= s[i].hi;
                }
                matching += all;
            }
            EXPECT_EQ(matching, cp >= a && cp <= b ? 1 : 0) << std::hex << cp << " in [" << a << "," << b << "]";
        }
    }
}

TEST(Utf8Ranges, NormalizeAndComplement) {
    EXPECT_EQ(NormalizeScalarRanges({{5, 9}, {0, 3}, {4, 4}, {20, 10}}), (std::vector<CodePointRange>{{0, 9}}));
    EXPECT_EQ(NormalizeScalarRanges({{0xD000, 0xE100}}),
              (std::vector<CodePointRange>{{0xD000, 0xD7FF}, {0xE000, 0xE100}}));
    EXPECT_EQ(ComplementScalarRanges({{0x41, 0x5A}}),
              (std::vector<CodePointRange>{{0, 0x40}, {0x5B, 0xD7FF}, {0xE000, 0x10FFFF}}));
}

// A random class in GBNF syntax against membership in its ranges, through
// the whole front end (parser, UTF-8 expansion, regex pool).
TEST(Utf8Ranges, ClassesMatchTheirCodePointsOnly) {
    std::mt19937 rng(7);
    for (int round = 0; round < 40; ++round) {
        std::vector<std::pair<uint32_t, uint32_t>> ranges;
        std::string gbnf = "root ::= [";
        const bool negated = round % 3 == 0;
        if (negated) gbnf += "^";
        char buf[32];
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
            const uint32_t scale[] = {0x80, 0x800, 0x10000, 0x110000};
            uint32_t a = rng() % scale[rng() % 4], b = rng() % scale[rng() % 4];
            if (a > b) std::swap(a, b);
            if (b - a > 5000 && rng() % 2) b = a + rng() % 300;
            ranges.push_back({a, b});
            snprintf(buf, sizeof(buf), "\\U%08X-\\U%08X", a, b);
            gbnf += buf;
        }
        gbnf += "]";
        auto in_class = [&](uint32_t cp) {
            bool in = false;
            for (auto [a, b] : ranges) in = in || (cp >= a && cp <= b);
            return in != negated;
        };
        const absl::StatusOr<Grammar> g = ParseGbnf(gbnf);
        bool any_scalar = false;
        for (uint32_t cp = 0; cp <= 0x10FFFF && !any_scalar; cp += (cp < 0x11000 ? 1 : 97)) {
            any_scalar = in_class(cp) && !(cp >= 0xD800 && cp <= 0xDFFF);
        }
        if (!g.ok()) {
            EXPECT_FALSE(any_scalar) << gbnf << " " << g.status();
            continue;
        }
        ASSERT_EQ(g->lexemes.size(), 1u);
        const int32_t regex = g->lexemes[0].regex;
        for (int probe = 0; probe < 400; ++probe) {
            uint32_t cp;
            if (probe < 8 * static_cast<int>(ranges.size())) {
                const auto [a, b] = ranges[probe / 8];
                const uint32_t near[] = {a, b, a - 1, b + 1, a + 1, b - 1, (a + b) / 2, a + 2};
                cp = near[probe % 8];
            } else {
                cp = rng() % 0x110000;
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
            EXPECT_EQ(RegexMatches(*g, regex, Utf8(cp)), in_class(cp)) << gbnf << " U+" << std::hex << cp;
        }
    }
}

// `.` is one scalar value's UTF-8: every 1- and 2-byte string, and random
// 3- and 4-byte ones (biased to valid-looking lead bytes).
TEST(Utf8Ranges, DotIsExactlyOneScalar) {
    const Grammar g = MustParse("root ::= .");
    ASSERT_EQ(g.lexemes.size(), 1u);
    const int32_t dot = g.lexemes[0].regex;
    for (int a = 0; a < 256; ++a) {
        const std::string s(1, static_cast<char>(a));
        EXPECT_EQ(RegexMatches(g, dot, s), IsOneScalar(s)) << a;
        for (int b = 0; b < 256; ++b) {
            const std::string t{static_cast<char>(a), static_cast<char>(b)};
            ASSERT_EQ(RegexMatches(g, dot, t), IsOneScalar(t)) << a << " " << b;
        }
    }
    std::mt19937 rng(3);
    for (int i = 0; i < 40000; ++i) {
        std::string s(3 + i % 2, '\0');
        for (char& c : s) c = static_cast<char>(rng() % 4 ? 0x80 + rng() % 0x80 : rng() % 256);
        if (rng() % 2) s[0] = static_cast<char>((s.size() == 3 ? 0xE0 : 0xF0) + rng() % 16);
        ASSERT_EQ(RegexMatches(g, dot, s), IsOneScalar(s)) << std::hex << (int)(uint8_t)s[0];
    }
}

// ---- lexemes ----------------------------------------------------------------------

std::set<std::string> RuleNames(const Grammar& g) {
    std::set<std::string> names;
    for (const Rule& r : g.rules) names.insert(r.name);
    return names;
}

const Rule* FindRule(const Grammar& g, std::string_view name) {
    for (const Rule& r : g.rules) {
        if (r.name == name) return &r;
    }
    return nullptr;
}

TEST(GbnfLexemes, JsonKeepsOnlyTheRecursionAsRules) {
    const Grammar g = MustParse(ReadDataFile("json.gbnf"));
    const std::set<std::string> names = RuleNames(g);
    for (const char* rule : {"root", "value", "object", "array", "member"}) EXPECT_TRUE(names.count(rule)) << rule;
    for (const char* regular : {"string", "char", "number", "ws"}) EXPECT_FALSE(names.count(regular)) << regular;
    EXPECT_EQ(g.rules[g.start].name, "root");

    // value: object and array stay references, the five regular
    // alternatives are one lexeme.
    const Rule* value = FindRule(g, "value");
    ASSERT_NE(value, nullptr);
    ASSERT_EQ(value->alternatives.size(), 3u);
    int lexeme_alternatives = 0;
    for (const auto& alternative : value->alternatives) {
        ASSERT_EQ(alternative.size(), 1u);
        if (!alternative[0].is_lexeme) continue;
        ++lexeme_alternatives;
        const int32_t regex = g.lexemes[alternative[0].index].regex;
        for (std::string ok : {"\"a\\u00e9\"", "-0.5e+3", "true", "null", "\"\""}) EXPECT_TRUE(RegexMatches(g, regex, ok)) << ok;
        for (std::string bad : {"\"a", "01", "nul", "[]", "\"\x01\""}) EXPECT_FALSE(RegexMatches(g, regex, bad)) << bad;
    }
    EXPECT_EQ(lexeme_alternatives, 1);

    // member ::= string ws ":" ws value: one lexeme then the rule.
    const Rule* member = FindRule(g, "member");
    ASSERT_NE(member, nullptr);
    ASSERT_EQ(member->alternatives.size(), 1u);
    ASSERT_EQ(member->alternatives[0].size(), 2u);
    EXPECT_TRUE(member->alternatives[0][0].is_lexeme);
    EXPECT_FALSE(member->alternatives[0][1].is_lexeme);
    const int32_t key = g.lexemes[member->alternatives[0][0].index].regex;
    EXPECT_TRUE(RegexMatches(g, key, "\"k\" \n: "));
    EXPECT_FALSE(RegexMatches(g, key, "\"k\""));

    // Identical regexes are one lexeme.
    std::set<int32_t> roots;
    for (const Lexeme& l : g.lexemes) EXPECT_TRUE(roots.insert(l.regex).second) << l.name;
}

TEST(GbnfLexemes, RegularRootIsOneLexeme) {
    for (const char* file : {"list.gbnf", "chess.gbnf", "japanese.gbnf", "counted.gbnf"}) {
        const Grammar g = MustParse(ReadDataFile(file));
        ASSERT_EQ(g.rules.size(), 1u) << file;
        ASSERT_EQ(g.rules[0].alternatives.size(), 1u) << file;
        ASSERT_EQ(g.rules[0].alternatives[0].size(), 1u) << file;
        EXPECT_TRUE(g.rules[0].alternatives[0][0].is_lexeme) << file;
        EXPECT_EQ(g.lexemes.size(), 1u) << file;
        EXPECT_EQ(g.lexemes[0].name, "root") << file;
    }
}

TEST(GbnfLexemes, RunsMergeAcrossGroupsAndRepetitionsBecomeLeftRecursive) {
    // `"(" ws` and `ws ")"` are runs; `( "," e )*` becomes R ::= R X | ε.
    const Grammar g = MustParse(
        "root ::= \"(\" ws e (ws \",\" ws e)* ws \")\"\n"
        "e ::= \"x\" | root\n"
        "ws ::= \" \"*\n");
    const Rule* root = FindRule(g, "root");
    ASSERT_NE(root, nullptr);
    ASSERT_EQ(root->alternatives.size(), 1u);
    const auto& seq = root->alternatives[0];
    ASSERT_EQ(seq.size(), 4u);   // "(" ws | e | star | ws ")"
    EXPECT_TRUE(seq[0].is_lexeme);
    EXPECT_FALSE(seq[1].is_lexeme);
    EXPECT_FALSE(seq[2].is_lexeme);
    EXPECT_TRUE(seq[3].is_lexeme);
    EXPECT_TRUE(RegexMatches(g, g.lexemes[seq[0].index].regex, "(  "));
    EXPECT_TRUE(RegexMatches(g, g.lexemes[seq[3].index].regex, " )"));
    const Rule& star = g.rules[seq[2].index];
    ASSERT_EQ(star.alternatives.size(), 2u);
    ASSERT_EQ(star.alternatives[0].size(), 3u);   // star (ws "," ws) e
    EXPECT_EQ(star.alternatives[0][0], seq[2]);
    EXPECT_TRUE(star.alternatives[0][1].is_lexeme);
    EXPECT_TRUE(star.alternatives[1].empty());
    EXPECT_TRUE(GrammarAccepts(g, "( x , (x) ,x )"));
    EXPECT_FALSE(GrammarAccepts(g, "( x , )"));
}

TEST(GbnfLexemes, NoLexemeMatchesOnlyTheEmptyString) {
    // "" items and empty groups vanish instead of becoming lexemes that
    // would cost the parser a step and match nothing.
    const Grammar g = MustParse("root ::= \"\" r () \"\"{3} | \"\"\nr ::= \"x\" r \"\" | \"\" \"y\"");
    ASSERT_FALSE(g.rules.empty());
    for (const Lexeme& l : g.lexemes) EXPECT_NE(g.regex[l.regex].kind, Kind::kEmpty) << l.name;
    const Rule* root = FindRule(g, "root");
    ASSERT_NE(root, nullptr);
    ASSERT_EQ(root->alternatives.size(), 2u);
    EXPECT_EQ(root->alternatives[0].size(), 1u);   // just r
    EXPECT_TRUE(root->alternatives[1].empty());
    EXPECT_TRUE(GrammarAccepts(g, "xxy"));
    EXPECT_TRUE(GrammarAccepts(g, ""));
    EXPECT_FALSE(GrammarAccepts(g, "xx"));
}

TEST(GbnfLexemes, LexemeNamesComeFromTheSource) {
    const Grammar g = MustParse("root ::= \"[\" item \"]\" | item\nitem ::= word | root\nword ::= [a-z]+");
    std::set<std::string> names;
    for (const Lexeme& l : g.lexemes) names.insert(l.name);
    EXPECT_TRUE(names.count("\"[\"")) << *names.begin();
    EXPECT_TRUE(names.count("\"]\""));
    EXPECT_TRUE(names.count("word"));
}

// ---- whole languages against independent oracles -----------------------------------

const nlohmann::json& Goldens() {
    static const nlohmann::json goldens = nlohmann::json::parse(ReadDataFile("goldens.json"));
    return goldens;
}

class GbnfLanguage : public ::testing::TestWithParam<std::string> {};

TEST_P(GbnfLanguage, AcceptsExactlyWhatTheOracleAccepts) {
    const Grammar g = MustParse(ReadDataFile(GetParam()));
    ExpectWellFormed(g, GetParam());
    const nlohmann::json& rows = Goldens().at(GetParam());
    ASSERT_GT(rows.size(), 100u);
    int accepted = 0;
    for (const auto& row : rows) {
        const std::string text = row[0].get<std::string>();
        const bool expected = row[1].get<bool>();
        accepted += expected;
        EXPECT_EQ(GrammarAccepts(g, text), expected) << GetParam() << ": \"" << text << "\"";
    }
    EXPECT_GT(accepted, 30);   // the candidates hold both verdicts
    EXPECT_LT(accepted, static_cast<int>(rows.size()) - 30);
}

INSTANTIATE_TEST_SUITE_P(Files, GbnfLanguage,
                         ::testing::Values("json.gbnf", "arithmetic.gbnf", "list.gbnf", "chess.gbnf", "japanese.gbnf",
                                           "nested.gbnf"),
                         [](const auto& info) { return info.param.substr(0, info.param.find('.')); });

// The same goldens with lexemes cut small (1: every item its own lexeme
// or rule; 40: the test grammars' classes still fit whole).
TEST_P(GbnfLanguage, SmallLexemeCapsKeepTheLanguage) {
    const std::string text = ReadDataFile(GetParam());
    for (int32_t cap : {1, 6, 40}) {
        const Grammar g = MustParseWithLexemeCap(text, cap);
        ExpectWellFormed(g, GetParam());
        if (cap == 40) {
            EXPECT_LE(LargestLexeme(g), cap) << GetParam();
        }
        for (const auto& row : Goldens().at(GetParam())) {
            const std::string candidate = row[0].get<std::string>();
            EXPECT_EQ(GrammarAccepts(g, candidate), row[1].get<bool>())
                << GetParam() << " cap " << cap << ": \"" << candidate << "\"";
        }
    }
}

TEST(GbnfLanguageExhaustive, CountedRepetitionsOverAllShortStrings) {
    const Grammar g = MustParse(ReadDataFile("counted.gbnf"));
    std::set<std::string> expected;
    for (const auto& s : Goldens().at("counted.gbnf accepted, of all strings over abc up to length 9")) {
        expected.insert(s.get<std::string>());
    }
    ASSERT_GT(expected.size(), 10u);
    std::vector<std::string> level{""};
    size_t seen = 0;
    for (int length = 0; length <= 9; ++length) {
        std::vector<std::string> next;
        for (const std::string& s : level) {
            ASSERT_EQ(RegexMatches(g, g.lexemes[0].regex, s), expected.count(s) == 1) << s;
            seen += expected.count(s);
            for (char c : {'a', 'b', 'c'}) next.push_back(s + c);
        }
        level = std::move(next);
    }
    EXPECT_EQ(seen, expected.size());
}

TEST(GbnfLanguage, ArithmeticIsLeftRecursive) {
    const Grammar g = MustParse(ReadDataFile("arithmetic.gbnf"));
    const Rule* expr = FindRule(g, "expr");
    ASSERT_NE(expr, nullptr);
    bool left_recursive = false;
    for (const auto& alternative : expr->alternatives) {
        left_recursive = left_recursive || (!alternative.empty() && !alternative[0].is_lexeme &&
                                            g.rules[alternative[0].index].name == "expr");
    }
    EXPECT_TRUE(left_recursive);
    EXPECT_EQ(FindRule(g, "number"), nullptr);   // regular, so a lexeme
}

// ---- the engine, where it is built: same verdicts through Compile + Matcher ----------

TEST(GbnfWithEngine, MatcherAgreesOnTheGoldens) {
    const std::shared_ptr<const TokenVocabulary> vocab = ByteVocabulary();
    for (const char* file : {"json.gbnf", "arithmetic.gbnf", "nested.gbnf", "japanese.gbnf"}) {
        absl::StatusOr<std::shared_ptr<const CompiledGrammar>> compiled = Compile(MustParse(ReadDataFile(file)), vocab);
        ASSERT_TRUE(compiled.ok()) << file << ": " << compiled.status();
        for (const auto& row : Goldens().at(file)) {
            const std::string text = row[0].get<std::string>();
            Matcher matcher(*compiled);
            const bool accepted = matcher.AcceptBytes(text) && matcher.CanEnd();
            EXPECT_EQ(accepted, row[1].get<bool>()) << file << ": \"" << text << "\"";
        }
    }
}

std::string FieldsGrammar(int fields) {
    std::string gbnf = "root ::=";
    for (int i = 0; i < fields; ++i) gbnf += " \"f" + std::to_string(i) + "=\" [a-z]{0,200} \";\"";
    return gbnf;
}

// A regular root far past the old single-lexeme limit (5000 fields: about
// 1.1 million nodes as one regex, refused before) now parses into lexemes
// within the cap. Matching it would pass CompileLimits::max_nfa_states
// (its lexemes are all different), so the engine check below uses 1500
// fields (still cut: over 300,000 nodes).
TEST(GbnfWithEngine, HugeRegularRootIsCutIntoBoundedLexemes) {
    const Grammar huge = MustParse(FieldsGrammar(5000));
    ExpectWellFormed(huge, "5000 fields");
    EXPECT_GT(huge.lexemes.size(), 20u);
    EXPECT_LE(LargestLexeme(huge), GbnfLimits{}.max_lexeme_nodes);

    constexpr int kFields = 1500;
    const Grammar g = MustParse(FieldsGrammar(kFields));
    EXPECT_GT(g.lexemes.size(), 5u);
    EXPECT_LE(LargestLexeme(g), GbnfLimits{}.max_lexeme_nodes);

    const std::shared_ptr<const TokenVocabulary> vocab = ByteVocabulary();
    absl::StatusOr<std::shared_ptr<const CompiledGrammar>> compiled = Compile(g, vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    std::mt19937 rng(5);
    auto record = [&](int long_field) {
        std::string text;
        for (int i = 0; i < kFields; ++i) {
            text += "f" + std::to_string(i) + "=";
            const int length = i == long_field ? 201 : static_cast<int>(rng() % 4) * (i % 97 == 0 ? 50 : 1);
            for (int k = 0; k < length; ++k) text.push_back(static_cast<char>('a' + rng() % 26));
            text += ";";
        }
        return text;
    };
    auto accepts = [&](const std::string& text) {
        Matcher matcher(*compiled);
        return matcher.AcceptBytes(text) && matcher.CanEnd();
    };
    const std::string valid = record(-1);
    EXPECT_TRUE(accepts(valid));
    EXPECT_FALSE(accepts(record(kFields / 2)));                 // one value of 201 letters
    EXPECT_FALSE(accepts(valid.substr(0, valid.size() - 1)));   // the last ';' missing
    std::string swapped = valid;
    const size_t at = swapped.find("f1200=") + 3;
    swapped[at] = '9';                                           // f1290= where f1200= belongs
    EXPECT_FALSE(accepts(swapped));
}

}  // namespace
}  // namespace prepack::grammar
