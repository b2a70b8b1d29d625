// The chat commands of the CLI:
// - `prepack chat-template render` prints exactly what Python jinja2 with
//   transformers' settings printed for golden cases of every template
//   (tests/data/chat_templates/goldens.json), and a template that raises
//   exits non-zero with its message on stderr;
// - `prepack chat` from a pipe answers each line as a user turn, with the
//   history kept, and its first answer is the greedy continuation of the
//   rendered prompt (`generate --parse-special` on the same text); /reset
//   starts over.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

using json = nlohmann::ordered_json;

const std::string kData = PREPACK_SOURCE_DIR "/tests/data/chat_templates";

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

TEST(ChatTemplateCli, RendersEveryGoldenExactly) {
    const json goldens = json::parse(testing::ReadFile(kData + "/goldens.json"));
    const std::string date = goldens["date"];
    // The engine itself meets every golden in chat_template_golden_test;
    // here the CLI's path (file, JSON input, --date, exit codes) is checked
    // on a few cases of each template, every error case included.
    std::map<std::string, int> per_template;
    int checked = 0;
    for (const json& c : goldens["cases"]) {
        const std::string tmpl = c["template"];
        if (c.contains("output") && ++per_template[tmpl] > 3) continue;
        std::string path;
        if (tmpl.rfind("repo:", 0) == 0) {
            path = kData + "/templates/" + tmpl.substr(5);
        } else if (tmpl.rfind("shared:", 0) == 0) {
            path = testing::ModelsDir() + "/chat-templates/" + tmpl.substr(7);
            if (!testing::FileExists(path)) continue;
        } else {
            continue;   // gguf: templates are checked through --model in chat_template_golden_test
        }
        const std::string input = TempFile("cli_chat_ctx.json", c["context"].dump());
        int code = 0;
        const std::string out = testing::RunCli("chat-template render --template " + Quote(path) + " --input " +
                                                    Quote(input) + " --date " + date + " --json",
                                                &code, /*merge_stderr=*/!c.contains("output"));
        const std::string where = tmpl + " / " + c["conversation"].get<std::string>();
        if (c.contains("output")) {
            ASSERT_EQ(code, 0) << where << ": " << out;
            EXPECT_EQ(json::parse(out)["text"].get<std::string>(), c["output"].get<std::string>()) << where;
        } else {
            EXPECT_NE(code, 0) << where;
            if (c.value("error_type", "") == "TemplateError") {
                EXPECT_NE(out.find(c["error"].get<std::string>()), std::string::npos) << where << ": " << out;
            }
        }
        ++checked;
    }
    EXPECT_GT(checked, 50);
}

TEST(ChatTemplateCli, RefusesBadInvocations) {
    const std::string input = TempFile("cli_chat_bad.json", R"({"messages": []})");
    testing::ExpectCliFailsSaying("chat-template render --input " + input, "exactly one of --template");
    testing::ExpectCliFailsSaying("chat-template render --template /no/such.jinja --input " + input, "/no/such.jinja");
    const std::string bad = TempFile("cli_chat_bad.jinja", "{% for x in messages %}{{ x | nosuchfilter }}{% endfor %}");
    testing::ExpectCliFailsSaying("chat-template render --template " + bad + " --input " + input, "nosuchfilter");
    const std::string raises = TempFile("cli_chat_raise.jinja", "{{ raise_exception('roles must alternate') }}");
    testing::ExpectCliFailsSaying("chat-template render --template " + raises + " --input " + input,
                                  "roles must alternate");
    const std::string tmpl = TempFile("cli_chat_ok.jinja", "{{ strftime_now('%d %B %Y') }}");
    int code = 0;
    EXPECT_EQ(testing::RunCli("chat-template render --template " + tmpl + " --input " + input + " --date 2024-02-29",
                              &code),
              "29 February 2024");
    testing::ExpectCliFailsSaying("chat-template render --template " + tmpl + " --input " + input + " --date 2024-13-01",
                                  "--date");
}

TEST(ChatCli, PipedTurnsKeepHistoryAndMatchGreedyGeneration) {
    PREPACK_REQUIRE_CHAT_MODEL();
    const std::string model = Quote(testing::ChatModelPath());
    const std::string input = TempFile("cli_chat_turns.txt", "What is the capital of France?\nAnd of Italy?\n/reset\nWhat is the capital of France?\n");
    int code = 0;
    // fcfs: every turn computes its prompt whole, so the answer after /reset
    // is the first one again exactly (under lru the cached history changes
    // the rounding of the few new tokens: see `prepack chat --help`).
    const std::string out = testing::RunCli(
        "chat --model " + model + " --policy fcfs --temperature 0 --max-tokens 24 --threads 2 < " + input, &code);
    ASSERT_EQ(code, 0) << out;
    // Three answers, one per line read (an answer is one line here or more).
    // The first equals generate on the rendered prompt.
    const std::string conv = TempFile("cli_chat_conv.json",
        R"({"messages": [{"role": "user", "content": "What is the capital of France?"}], "add_generation_prompt": true})");
    const std::string rendered = testing::RunCli("chat-template render --model " + model + " --input " + conv, &code);
    ASSERT_EQ(code, 0);
    const std::string first = testing::RunCli("generate --model " + model + " --parse-special --temperature 0 "
                                              "--max-tokens 24 --threads 2 --prompt " + Quote(rendered),
                                              &code);
    ASSERT_EQ(code, 0) << first;
    ASSERT_FALSE(first.empty());
    EXPECT_EQ(out.rfind(first, 0), 0u) << "chat printed:\n" << out << "\ngenerate printed:\n" << first;
    // After /reset the same question gets the same answer; the second turn,
    // asked with the first in its history, is a different answer.
    EXPECT_NE(out.find(first, first.size()), std::string::npos) << out;
}

// --tools with --tool-choice required: each answer is calls, printed as
// one JSON line in OpenAI's shape, whose arguments parse as the tool's
// schema asks; "/tool TEXT" answers the call and the model answers again.
TEST(ChatCli, ToolCallsPrintAsOpenAiJson) {
    PREPACK_REQUIRE_CHAT_MODEL();
    const std::string tools = TempFile("cli_chat_tools.json", R"([{"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 32}},
                       "required": ["city"], "additionalProperties": false}}}])");
    const std::string input = TempFile("cli_chat_tools.txt", "What is the weather in Paris?\n/tool {\"sky\": \"cloudy\"}\n");
    int code = 0;
    const std::string out = testing::RunCli("chat --model " + Quote(testing::ChatModelPath()) + " --tools " + tools +
                                                " --tool-choice required --no-parallel-tool-calls --policy fcfs "
                                                "--temperature 0 --max-tokens 64 --threads 2 < " + input,
                                            &code);
    ASSERT_EQ(code, 0) << out;
    int answers = 0;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        const json j = json::parse(line, nullptr, false);
        ASSERT_TRUE(j.is_object() && j.contains("tool_calls")) << "a forced call has no text: " << line;
        ASSERT_EQ(j["tool_calls"].size(), 1u) << line;   // --no-parallel-tool-calls
        const json& call = j["tool_calls"][0];
        EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << line;
        EXPECT_EQ(call["type"], "function");
        EXPECT_EQ(call["function"]["name"], "get_weather");
        const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
        ASSERT_TRUE(args.is_object()) << line;
        ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << line;
        EXPECT_EQ(args.size(), 1u) << line;
        ++answers;
    }
    EXPECT_EQ(answers, 2) << out;
    testing::ExpectCliFailsSaying("chat --model " + Quote(testing::ChatModelPath()) + " --tools " + tools +
                                      " --tool-choice nope --max-tokens 4 --threads 2 < " + input,
                                  "\"nope\", which is not in tools");
    const std::string bad = TempFile("cli_chat_bad_tools.json", R"([{"type": "function", "function": {"name": "a b"}}])");
    testing::ExpectCliFailsSaying("chat --model " + Quote(testing::ChatModelPath()) + " --tools " + bad + " < " + input,
                                  "tools[0].function.name");
}

TEST(ChatCli, ModelWithoutTemplateNamesTheWayOut) {
    PREPACK_REQUIRE_STORIES();
    testing::ExpectCliFailsSaying("chat --model " + testing::StoriesDir() + "/stories260K.gguf < /dev/null",
                                  "--chat-template-file");
}

}  // namespace
}  // namespace prepack
