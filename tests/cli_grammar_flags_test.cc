// The structured-output flags of `prepack generate`, `chat` and `batch`:
// --json-schema FILE, --json-object, --regex RE, --grammar FILE. At most
// one (the error names both), a bad spec or file fails before a model
// loads, and the output follows the grammar (the synthetic model spells
// every byte; SmolLM2 answers in JSON when present).
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

// A file of this process's own (ctest runs the tests of one binary in parallel processes).
std::string TempFile(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + std::to_string(getpid()) + "_" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

std::string Quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

const char kSentence[] = "[a-z]{2,8}( [a-z]{2,8}){1,3}\\.";

TEST(GrammarFlagsCli, TwoGrammarsConflictByName) {
    const std::string gbnf = TempFile("two.gbnf", "root ::= \"a\"");
    const std::string schema = TempFile("two.json", R"({"type": "integer"})");
    // A missing model shows the check comes before loading one.
    for (const char* cmd : {"generate --prompt hi", "chat"}) {
        SCOPED_TRACE(cmd);
        const std::string base = std::string(cmd) + " --model /nonexistent.gguf ";
        testing::ExpectCliFailsSaying(base + "--json-object --regex a", "--json-object and --regex conflict");
        testing::ExpectCliFailsSaying(base + "--json-schema " + schema + " --grammar " + gbnf,
                                      "--json-schema and --grammar conflict");
        testing::ExpectCliFailsSaying(base + "--regex '' --json-object", "--json-object and --regex conflict");
    }
}

TEST(GrammarFlagsCli, ABadSpecOrFileFailsNamingItsFlag) {
    const std::string bad_gbnf = TempFile("bad.gbnf", "root ::= missing-rule");
    const std::string bad_schema = TempFile("bad.json", "{\"type\": ");
    const std::string base = "generate --prompt hi --model /nonexistent.gguf ";
    testing::ExpectCliFailsSaying(base + "--regex '(ab'", "--regex: ");
    testing::ExpectCliFailsSaying(base + "--grammar " + bad_gbnf, "--grammar: ");
    testing::ExpectCliFailsSaying(base + "--grammar /nonexistent.gbnf", "cannot open --grammar '/nonexistent.gbnf'");
    testing::ExpectCliFailsSaying(base + "--json-schema /tmp", "cannot open --json-schema '/tmp'");
    testing::ExpectCliFailsSaying(base + "--json-schema " + bad_schema, "--json-schema: ");
}

nlohmann::json GenerateJson(const std::string& args) {
    int code = 0;
    const std::string out =
        testing::RunCli("generate --model synthetic:tiny --threads 2 --max-tokens 48 --json " + args, &code);
    EXPECT_EQ(code, 0) << args << ": " << out;
    const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << out;
    return j;
}

TEST(GrammarFlagsCli, GenerateFollowsARegexOrAGbnfGrammar) {
    for (int seed = 0; seed < 3; ++seed) {
        const nlohmann::json j =
            GenerateJson("--prompt 'once upon' --seed " + std::to_string(seed) + " --regex " + Quote(kSentence));
        const std::string text = j.value("text", "");
        EXPECT_TRUE(std::regex_match(text, std::regex(kSentence))) << text;
        EXPECT_EQ(j.value("finish_reason", ""), "stop") << "nothing may follow the full stop";
    }
    const std::string gbnf = TempFile("digits.gbnf", "root ::= \"<\" num (\",\" num){0,3} \">\"\nnum ::= [0-9]{1,3}\n");
    const nlohmann::json j = GenerateJson("--prompt numbers --temperature 0 --grammar " + gbnf);
    EXPECT_TRUE(std::regex_match(j.value("text", ""), std::regex("<[0-9]{1,3}(,[0-9]{1,3}){0,3}>"))) << j.dump();
    EXPECT_EQ(j.value("finish_reason", ""), "stop");
    // Unconstrained, the same greedy request writes something else.
    const nlohmann::json free = GenerateJson("--prompt numbers --temperature 0");
    EXPECT_NE(free.value("text", ""), j.value("text", ""));
}

TEST(GrammarFlagsCli, BatchLinesCarryTheirOwnGrammarAndTheFlagsFillTheRest) {
    const std::string input = TempFile("grammar_batch.jsonl",
                                       "{\"id\": \"own\", \"prompt\": \"a\", \"max_tokens\": 48, \"regex\": \"[0-9]{3}\"}\n"
                                       "{\"id\": \"default\", \"prompt\": \"b\", \"max_tokens\": 48}\n");
    const std::string output = ::testing::TempDir() + std::to_string(getpid()) + "_grammar_batch_out.jsonl";
    std::remove(output.c_str());
    int code = 0;
    const std::string log = testing::RunCli("batch --model synthetic:tiny --threads 2 --input " + input + " --output " +
                                                output + " --regex " + Quote(kSentence),
                                            &code, true);
    ASSERT_EQ(code, 0) << log;
    std::ifstream in(output);
    std::string line;
    int seen = 0;
    while (std::getline(in, line)) {
        const nlohmann::json j = nlohmann::json::parse(line);
        const std::string text = j.value("text", "");
        if (j["id"] == "own") {
            EXPECT_TRUE(std::regex_match(text, std::regex("[0-9]{3}"))) << line;
        } else {
            EXPECT_TRUE(std::regex_match(text, std::regex(kSentence))) << line;
        }
        EXPECT_EQ(j.value("finish_reason", ""), "stop") << line;
        ++seen;
    }
    EXPECT_EQ(seen, 2);
    const std::string conflict = TempFile("grammar_batch_conflict.jsonl",
                                          "{\"prompt\": \"a\", \"regex\": \"a\", \"json_object\": true}\n");
    testing::ExpectCliFailsSaying("batch --model synthetic:tiny --input " + conflict + " --output " + output,
                                  "line 1: 'json_object' and 'regex' conflict");
}

TEST(GrammarFlagsCli, ChatAnswersInJson) {
    PREPACK_REQUIRE_CHAT_MODEL();
    const std::string model = Quote(testing::ChatModelPath());
    const std::string schema = TempFile("cat.json", R"({"type": "object",
        "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer"}},
        "required": ["name", "age"]})");
    // (This small model, asked for "a JSON object describing a cat", nests
    // objects past any max_tokens: questions it answers briefly.)
    const std::pair<std::string, std::string> runs[] = {
        {"--json-object", "Give me a JSON object with a cat's name and color."},
        {"--json-schema " + schema, "Describe a cat in JSON: its name and age."},
    };
    for (const auto& [flag, question] : runs) {
        SCOPED_TRACE(flag);
        const std::string input = TempFile("cat.txt", question + "\n");
        int code = 0;
        const std::string out = testing::RunCli("chat --model " + model + " --policy fcfs --temperature 0 "
                                                "--max-tokens 96 --threads 2 " + flag + " < " + input,
                                                &code);
        ASSERT_EQ(code, 0) << out;
        const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << out;
        ASSERT_TRUE(j.is_object()) << out;
        if (flag != runs[0].first) {
            EXPECT_TRUE(j.contains("name") && j["name"].is_string()) << out;
            EXPECT_TRUE(j.contains("age") && j["age"].is_number_integer()) << out;
        }
    }
}

}  // namespace
}  // namespace prepack
