// `prepack eval lazy --tasks FILE` end to end: a keep-everything schedule
// answers exactly as the unpruned model does, the JSON report has its
// documented fields, bad task files and flags are refused with the line and
// the problem, and SmolLM2-135M-Instruct finds a planted fact unpruned.
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

const std::string kBotchan = std::string(PREPACK_SOURCE_DIR) + "/tests/data/lazy_eval/botchan.txt";

std::string TempFile(const std::string& name, const std::string& content) {
    const std::string path = ::testing::TempDir() + std::to_string(getpid()) + "_" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
}

// The byte where `sentence` begins in Botchan.
int64_t At(const std::string& sentence) {
    static const std::string text = testing::ReadFile(kBotchan);
    const size_t at = text.find(sentence);
    EXPECT_NE(at, std::string::npos) << sentence;
    return at == std::string::npos ? 0 : static_cast<int64_t>(at);
}

std::string Line(nlohmann::json j) {
    j["text"] = kBotchan;
    return j.dump() + "\n";
}

// Three short tasks, one of each kind, that fit stories260K's 512 tokens.
std::string SmallTasks() {
    return Line({{"id", "needle"}, {"kind", "needle"}, {"start_byte", At("One of my relatives once presented")},
                 {"tokens", 200}, {"facts", {{{"depth", 0.5}, {"sentence", "The secret number of the blue lantern is 7468."}}}},
                 {"question", "What is the secret number of the blue lantern?"}, {"answers", {"7468", "7,468"}}}) +
           Line({{"id", "multi"}, {"kind", "multi"}, {"start_byte", At("Father did not like me in the least")},
                 {"tokens", 250},
                 {"facts", {{{"depth", 0.2}, {"sentence", "The secret number of the red kettle is 2291."}},
                            {{"depth", 0.5}, {"sentence", "The secret number of the green clock is 5727."}},
                            {{"depth", 0.8}, {"sentence", "The secret number of the white drum is 1008."}}}},
                 {"question", "What are the secret numbers of the red kettle and of the white drum?"},
                 {"answers", nlohmann::json::array({nlohmann::json::array({"2291", "1008"})})}}) +
           Line({{"id", "qa"}, {"kind", "qa"}, {"start_byte", At("Because of an hereditary recklessness")},
                 {"tokens", 200}, {"question", "From which floor did the narrator jump?"},
                 {"answers", {"second", "2nd"}}, {"evidence", "jumping from the second story"}});
}

TEST(EvalLazyTasksCli, KeepEverythingAnswersAsUnpruned) {
    PREPACK_REQUIRE_STORIES();
    const std::string tasks = TempFile("small_tasks.jsonl", SmallTasks());
    const std::string report = ::testing::TempDir() + std::to_string(getpid()) + "_report.json";
    int code = 0;
    // Every run below: stories260K on the three tasks, one thread.
    const std::string eval =
        "eval lazy --model " + testing::StoriesDir() + "/stories260K.gguf --threads 1 --tasks " + tasks;
    const std::string table = testing::RunCli(
        eval + " --settings '1:1.0;0:1.0,3:1.0@window=4,heads=max,pool=2,sinks=2,recent=4' --answer-tokens 8 "
               "--json-file " + report,
        &code);
    ASSERT_EQ(code, 0) << table;
    EXPECT_NE(table.find("unpruned: "), std::string::npos) << table;
    EXPECT_NE(table.find("setting 1:1.0: schedule 1:1, scoring window=32,heads=mean,pool=3,sinks=4,recent=32, "
                         "revival bound"),
              std::string::npos)
        << table;
    EXPECT_NE(table.find("identical"), std::string::npos) << table;

    const auto j = nlohmann::json::parse(testing::ReadFile(report));
    EXPECT_EQ(j["tasks"], 3);
    EXPECT_EQ(j["answer_tokens"], 8);
    EXPECT_EQ(j["prompt_format"], "plain");   // stories260K has no chat template
    ASSERT_EQ(j["settings"].size(), 2u);
    for (const auto& s : j["settings"]) {
        for (const char* key : {"name", "schedule", "scoring", "revive_limit", "summary", "by_length", "by_kind"}) {
            EXPECT_TRUE(s.contains(key)) << key;
        }
        const auto& sum = s["summary"];
        for (const char* key : {"tasks", "full_correct", "correct", "full_accuracy", "accuracy", "accuracy_ratio",
                                "identical_share", "ttft_speedup", "gen_speedup", "work_fraction", "work_fraction_end"}) {
            EXPECT_TRUE(sum.contains(key)) << key;
        }
        EXPECT_EQ(sum["tasks"], 3);
        EXPECT_EQ(sum["identical_share"].get<double>(), 1.0) << s["name"];
        EXPECT_EQ(sum["correct"], sum["full_correct"]);
        EXPECT_EQ(sum["correct"], j["full_correct"]);
        EXPECT_EQ(sum["work_fraction"].get<double>(), 1.0);
        EXPECT_GT(sum["ttft_speedup"].get<double>(), 0.0);
        ASSERT_EQ(s["by_length"].size(), 1u);
        EXPECT_EQ(s["by_length"][0]["bucket"], "<1k");
        EXPECT_EQ(s["by_kind"].size(), 3u);
    }
    EXPECT_EQ(j["settings"][1]["scoring"], "window=4,heads=max,pool=2,sinks=2,recent=4");
    ASSERT_EQ(j["per_task"].size(), 3u);
    for (const auto& t : j["per_task"]) {
        for (const char* key : {"id", "kind", "tokens", "document_tokens", "prompt_tokens", "full", "lazy"}) {
            EXPECT_TRUE(t.contains(key)) << key;
        }
        EXPECT_GE(t["document_tokens"].get<int>(), t["tokens"].get<int>());
        EXPECT_GT(t["prompt_tokens"].get<int>(), t["document_tokens"].get<int>());
        for (const char* key : {"correct", "answer", "output_tokens", "ttft_ms", "gen_ms"}) {
            EXPECT_TRUE(t["full"].contains(key)) << key;
        }
        EXPECT_GT(t["full"]["ttft_ms"].get<double>(), 0.0);
        EXPECT_GE(t["full"]["gen_ms"].get<double>(), t["full"]["ttft_ms"].get<double>());
        ASSERT_EQ(t["lazy"].size(), 2u);
        for (const auto& l : t["lazy"]) {
            for (const char* key : {"setting", "correct", "identical", "answer", "output_tokens", "ttft_ms", "gen_ms",
                                    "work_fraction", "work_fraction_end"}) {
                EXPECT_TRUE(l.contains(key)) << key;
            }
            EXPECT_TRUE(l["identical"].get<bool>());
            EXPECT_EQ(l["answer"], t["full"]["answer"]);
            EXPECT_EQ(l["correct"], t["full"]["correct"]);
        }
    }
    EXPECT_EQ(j["per_task"][0]["lazy"][1]["setting"], "0:1.0,3:1.0@window=4,heads=max,pool=2,sinks=2,recent=4");

    // --task-tokens keeps the tasks of those lengths (the needle and the qa are 200).
    const std::string subset =
        testing::RunCli(eval + " --task-tokens 200 --settings '' --answer-tokens 8 --json", &code);
    ASSERT_EQ(code, 0) << subset;
    const auto sub = nlohmann::json::parse(subset);
    ASSERT_EQ(sub["per_task"].size(), 2u);
    EXPECT_EQ(sub["per_task"][0]["id"], "needle");
    EXPECT_EQ(sub["per_task"][1]["id"], "qa");
    EXPECT_EQ(sub["per_task"][1]["full"]["answer"], j["per_task"][2]["full"]["answer"]);

    // --json prints the same report on stdout.
    const std::string out = testing::RunCli(eval + " --settings '' --answer-tokens 8 --json", &code);
    ASSERT_EQ(code, 0) << out;
    const auto k = nlohmann::json::parse(out);
    EXPECT_EQ(k["settings"].size(), 0u);   // the unpruned answers alone
    EXPECT_EQ(k["full_correct"], j["full_correct"]);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(k["per_task"][i]["full"]["answer"], j["per_task"][i]["full"]["answer"]);
}

TEST(EvalLazyTasksCli, RefusesBadTasksAndFlagsByName) {
    PREPACK_REQUIRE_STORIES();
    const std::string model = "eval lazy --model " + testing::StoriesDir() + "/stories260K.gguf --threads 1 ";
    nlohmann::json no_question = nlohmann::json::parse(SmallTasks().substr(0, SmallTasks().find('\n')));
    no_question.erase("question");
    no_question["id"] = "other";
    const std::string bad = TempFile("bad_tasks.jsonl", SmallTasks().substr(0, SmallTasks().find('\n') + 1) +
                                                            no_question.dump() + "\n");
    testing::ExpectCliFailsSaying(model + "--tasks " + bad, bad + ":2: missing field 'question'");
    const std::string garbled = TempFile("garbled_tasks.jsonl", "{\"id\": \n");
    testing::ExpectCliFailsSaying(model + "--tasks " + garbled, garbled + ":1: malformed JSON");
    testing::ExpectCliFailsSaying(model + "--tasks /nonexistent/tasks.jsonl", "cannot read the tasks file");

    nlohmann::json missing_text = nlohmann::json::parse(SmallTasks().substr(0, SmallTasks().find('\n')));
    missing_text["text"] = "no_such_text.txt";
    const std::string no_text = TempFile("no_text_tasks.jsonl", missing_text.dump() + "\n");
    testing::ExpectCliFailsSaying(model + "--tasks " + no_text, no_text + ":1: cannot read the text file");

    // Longer than stories260K's context of 512 tokens.
    nlohmann::json long_task = nlohmann::json::parse(SmallTasks().substr(0, SmallTasks().find('\n')));
    long_task["tokens"] = 600;
    const std::string too_long = TempFile("long_tasks.jsonl", long_task.dump() + "\n");
    testing::ExpectCliFailsSaying(model + "--tasks " + too_long, too_long + ":1: task 'needle' has a prompt of ");
    testing::ExpectCliFailsSaying(model + "--tasks " + too_long, "exceeds the model's context of 512");

    const std::string tasks = TempFile("ok_tasks.jsonl", SmallTasks());
    testing::ExpectCliFailsSaying(model + "--tasks " + tasks + " --settings '1:0.5;9:0.5'", "--settings: item 2 (9:0.5)");
    testing::ExpectCliFailsSaying(model + "--tasks " + tasks + " --settings '1:0.5;;'", "--settings: item 2 is empty");
    testing::ExpectCliFailsSaying(model + "--settings default", "--settings requires --tasks");
    testing::ExpectCliFailsSaying(model + "--tasks " + tasks + " --task-tokens 300,400",
                                  "--task-tokens: no task of " + tasks + " has one of those lengths (it has: 200, 250)");
    testing::ExpectCliFailsSaying(model + "--tasks " + tasks + " --count 3", "excludes");
}

TEST(EvalLazyTasksCli, SmolLM2FindsAPlantedFactUnpruned) {
    PREPACK_REQUIRE_CHAT_MODEL();
    const std::string tasks = TempFile(
        "needle_1k.jsonl",
        Line({{"id", "needle-1k"}, {"kind", "needle"}, {"start_byte", At("Because of an hereditary recklessness")},
              {"tokens", 1000}, {"facts", {{{"depth", 0.5}, {"sentence", "The secret number of the blue lantern is 7468."}}}},
              {"question", "What is the secret number of the blue lantern?"}, {"answers", {"7468", "7,468"}}}));
    int code = 0;
    const std::string out = testing::RunCli("eval lazy --model " + testing::ChatModelPath() + " --threads 1 --tasks " +
                                                tasks + " --settings '' --answer-tokens 16 --json",
                                            &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["prompt_format"], "chat_template");
    const auto& t = j["per_task"][0];
    EXPECT_GE(t["document_tokens"].get<int>(), 1000);
    EXPECT_LE(t["document_tokens"].get<int>(), 1100);
    EXPECT_TRUE(t["full"]["correct"].get<bool>()) << t["full"]["answer"];
    EXPECT_EQ(j["full_correct"], 1);
}

}  // namespace
}  // namespace prepack
