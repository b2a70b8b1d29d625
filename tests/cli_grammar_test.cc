// `prepack grammar gbnf|check|sample`: the GBNF printed, texts checked
// (whole sentence, prefix, where a text stops being one), and random samples
// that an independent matcher (std::regex, ECMAScript grammar; nlohmann's
// JSON parser) accepts, reproducible by seed and bounded by --max-bytes.
#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

// A shell word for `s`: the CLI runs through popen.
std::string Quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string RunGrammar(const std::string& args, int expected_code = 0) {
    int code = 0;
    const std::string out = testing::RunCli("grammar " + args, &code);
    EXPECT_EQ(code, expected_code) << args << "\n" << out;
    return out;
}

nlohmann::json Check(const std::string& source, const std::string& text) {
    return nlohmann::json::parse(RunGrammar("check " + source + " --text " + Quote(text)));
}

std::vector<nlohmann::json> Samples(const std::string& args) {
    std::vector<nlohmann::json> out;
    std::istringstream lines(RunGrammar("sample " + args));
    for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
    return out;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/cli_grammar_" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

TEST(GrammarCli, GbnfPrintsTheFrontEndsGrammarOrNamesTheProblem) {
    EXPECT_EQ(RunGrammar("gbnf --regex " + Quote("a[b-d]+")), "root ::= \"a\" [b-d]+\n");
    const std::string gbnf = "root ::= \"x\" | \"y\"\n";
    EXPECT_EQ(RunGrammar("gbnf --grammar " + WriteTemp("xy.gbnf", gbnf)), gbnf);
    testing::ExpectCliFailsSaying("grammar gbnf --regex " + Quote("(a)\\1"), "backreference \\1");
    testing::ExpectCliFailsSaying("grammar gbnf --regex " + Quote("a(?=b)"), "lookahead");
    testing::ExpectCliFailsSaying("grammar gbnf", "no grammar given");
    testing::ExpectCliFailsSaying("grammar gbnf --regex a --json-object", "conflict");
    testing::ExpectCliFailsSaying("grammar gbnf --grammar /nonexistent/g.gbnf", "cannot open");
}

TEST(GrammarCli, CheckSaysSentencePrefixAndWhereATextStops) {
    const std::string digits = "--regex " + Quote("\\d{3}(-\\d{2})?");
    EXPECT_EQ(Check(digits, "123"), nlohmann::json::parse(R"({"accepted":true,"complete":true,"accepted_bytes":3})"));
    EXPECT_EQ(Check(digits, "123-4"), nlohmann::json::parse(R"({"accepted":true,"complete":false,"accepted_bytes":5})"));
    EXPECT_EQ(Check(digits, "12a"), nlohmann::json::parse(R"({"accepted":false,"complete":false,"accepted_bytes":2})"));
    EXPECT_EQ(Check(digits, ""), nlohmann::json::parse(R"({"accepted":true,"complete":false,"accepted_bytes":0})"));
    EXPECT_EQ(Check("--regex ''", ""), nlohmann::json::parse(R"({"accepted":true,"complete":true,"accepted_bytes":0})"));
    // --file: bytes as they are (a newline is part of the text).
    const std::string g = WriteTemp("ab.gbnf", "root ::= \"a\" \"\\n\"? \"b\"\n");
    const std::string file = WriteTemp("ab.txt", "a\nb");
    EXPECT_EQ(nlohmann::json::parse(RunGrammar("check --grammar " + g + " --file " + file))["complete"], true);
    testing::ExpectCliFailsSaying("grammar check --grammar " + g + " --file " + file + " --text ab",
                                  "exactly one of --text and --file");
    testing::ExpectCliFailsSaying("grammar check --grammar " + g, "exactly one of --text and --file");
}

TEST(GrammarCli, SamplesAreSentencesAnIndependentMatcherAccepts) {
    for (const std::string pattern : {"[a-c]{2,4}x?", "(ab|cd)+e*", "\\d{1,3}(\\.\\d{1,3}){3}", "-?(0|[1-9]\\d*)"}) {
        SCOPED_TRACE(pattern);
        const std::regex oracle(pattern, std::regex::ECMAScript);
        const std::vector<nlohmann::json> samples = Samples("--regex " + Quote(pattern) + " --n 40 --seed 3");
        ASSERT_EQ(samples.size(), 40u);
        std::set<std::string> distinct;
        for (const nlohmann::json& s : samples) {
            const std::string text = s["text"];
            distinct.insert(text);
            if (s["complete"].get<bool>()) {
                EXPECT_TRUE(std::regex_match(text, oracle)) << text;
            }
        }
        EXPECT_GT(distinct.size(), 5u) << "a random walk gives varied texts";
    }
}

TEST(GrammarCli, SamplesAreReproducibleAndBounded) {
    const std::string args = "--regex " + Quote("[a-z]+") + " --n 20 --max-bytes 8";
    EXPECT_EQ(RunGrammar("sample " + args + " --seed 11"), RunGrammar("sample " + args + " --seed 11"));
    EXPECT_NE(RunGrammar("sample " + args + " --seed 11"), RunGrammar("sample " + args + " --seed 12"));
    for (const nlohmann::json& s : Samples(args + " --seed 5")) {
        EXPECT_LE(s["text"].get<std::string>().size(), 8u);
        EXPECT_TRUE(s["complete"].get<bool>());
    }
    // Never stopping where it may: every sample runs to --max-bytes, and is
    // complete only if the text there happens to be a sentence.
    for (const nlohmann::json& s : Samples("--regex " + Quote("(ab)+") + " --n 3 --max-bytes 3 --stop-probability 0")) {
        EXPECT_EQ(s, nlohmann::json::parse(R"({"text":"aba","complete":false})"));
    }
    // A finite language ends by itself.
    for (const nlohmann::json& s : Samples("--regex " + Quote("ab|cd") + " --n 5 --stop-probability 0")) {
        EXPECT_TRUE(s["complete"].get<bool>());
        EXPECT_TRUE(s["text"] == "ab" || s["text"] == "cd") << s;
    }
    testing::ExpectCliFailsSaying("grammar sample --regex a --n=-1", "--n must be in");
    testing::ExpectCliFailsSaying("grammar sample --regex a --max-bytes 99999999", "--max-bytes must be in");
    testing::ExpectCliFailsSaying("grammar sample --regex a --stop-probability 2", "--stop-probability");
}

// RFC 8259's grammar, naively: the oracle for JSON samples (nlohmann's
// parser refuses numbers past a double's range, which JSON allows).
class NaiveJson {
public:
    explicit NaiveJson(std::string_view text) : t_(text) {}
    bool IsObjectText() {
        Ws();
        if (!Peek('{') || !Value()) return false;
        Ws();
        return i_ == t_.size();
    }

private:
    bool Peek(char c) const { return i_ < t_.size() && t_[i_] == c; }
    bool Eat(char c) { return Peek(c) ? (++i_, true) : false; }
    void Ws() { while (i_ < t_.size() && std::string_view(" \t\n\r").find(t_[i_]) != std::string_view::npos) ++i_; }
    bool Value() {
        if (++depth_ > 500) return false;
        bool ok = false;
        if (Eat('{')) {
            Ws();
            ok = Eat('}') || Members('}', true);
        } else if (Eat('[')) {
            Ws();
            ok = Eat(']') || Members(']', false);
        } else if (Peek('"')) {
            ok = String();
        } else {
            static const std::regex literal(R"((true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?))");
            std::match_results<std::string_view::const_iterator> m;
            ok = std::regex_search(t_.begin() + i_, t_.end(), m, literal, std::regex_constants::match_continuous);
            if (ok) i_ += m.length(0);
        }
        --depth_;
        return ok;
    }
    bool Members(char close, bool keyed) {
        while (true) {
            Ws();
            if (keyed) {
                if (!String()) return false;
                Ws();
                if (!Eat(':')) return false;
                Ws();
            }
            if (!Value()) return false;
            Ws();
            if (Eat(close)) return true;
            if (!Eat(',')) return false;
        }
    }
    bool String() {
        if (!Eat('"')) return false;
        while (i_ < t_.size()) {
            const auto c = static_cast<unsigned char>(t_[i_++]);
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c != '\\') continue;
            if (i_ >= t_.size()) return false;
            const char e = t_[i_++];
            if (e == 'u') {
                for (int k = 0; k < 4; ++k, ++i_) {
                    if (i_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[i_]))) return false;
                }
            } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
                return false;
            }
        }
        return false;
    }

    std::string_view t_;
    size_t i_ = 0;
    int depth_ = 0;
};

TEST(GrammarCli, NaiveJsonOracleSeesBothSides) {
    EXPECT_TRUE(NaiveJson(R"( {"a": [1, -2.5e+999, "x\u00e9\n"], "b": {"c": null}} )").IsObjectText());
    for (const char* bad : {"[1]", "{\"a\":01}", "{\"a\" 1}", "{\"a\":1,}", "{\"a\":\"\\x\"}", "{} x", "{\"a\n\":1}"}) {
        EXPECT_FALSE(NaiveJson(bad).IsObjectText()) << bad;
    }
}

TEST(GrammarCli, JsonObjectSamplesAreJsonObjects) {
    int complete = 0;
    for (const nlohmann::json& s : Samples("--json-object --n 30 --seed 1 --max-bytes 400 --stop-probability 0.9")) {
        if (!s["complete"].get<bool>()) continue;
        ++complete;
        const std::string text = s["text"];
        EXPECT_TRUE(NaiveJson(text).IsObjectText()) << text;
    }
    EXPECT_GT(complete, 0);
}

}  // namespace
}  // namespace prepack
