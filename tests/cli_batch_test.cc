// `prepack batch` end to end: results carry their ids, every policy gives the
// same tokens, a killed run resumes without losing or repeating a request,
// and bad input lines are named.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <map>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

std::string TempPath(const std::string& name) {
    return (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()))).string();
}

void WriteInput(const std::string& path) {
    std::ofstream f(path);
    // Three requests share a long prefix; ids of both JSON kinds.
    const std::string shared = "The little robot walked along the river bank and looked at the stars above the quiet town";
    f << R"({"id": "q1", "prompt": ")" << shared << R"( and then", "max_tokens": 12, "temperature": 0})" << "\n";
    f << R"({"id": 2, "prompt": ")" << shared << R"( while the cat", "max_tokens": 9, "temperature": 0})" << "\n";
    f << "\n";
    f << R"({"id": "q3", "prompt_tokens": [1, 40, 41, 42, 43], "max_tokens": 7, "temperature": 0.7, "seed": 3})" << "\n";
    f << R"({"id": "q4", "prompt": ")" << shared << R"( so", "max_tokens": 5, "temperature": 0, "stop": ["zzz"]})" << "\n";
    f << R"({"id": "bad", "prompt": "x", "top_p": 9})" << "\n";
}

std::map<std::string, nlohmann::json> ReadResults(const std::string& path, int* lines) {
    std::map<std::string, nlohmann::json> by_id;
    std::ifstream f(path);
    std::string line;
    *lines = 0;
    while (std::getline(f, line)) {
        if (line.empty()) continue;
        ++*lines;
        auto j = nlohmann::json::parse(line);
        by_id[j["id"].dump()] = j;
    }
    return by_id;
}

TEST(BatchCli, PoliciesAgreeAndKilledRunsResume) {
    const std::string in = TempPath("batch_in.jsonl");
    WriteInput(in);
    std::map<std::string, nlohmann::json> first;
    for (const char* policy : {"fcfs", "lru", "batchllm"}) {
        const std::string out = TempPath(std::string("batch_out_") + policy + ".jsonl");
        std::remove(out.c_str());
        int code = 0;
        testing::RunCli("batch --model synthetic:tiny --threads 1 --policy " + std::string(policy) + " --input " + in +
                            " --output " + out,
                        &code);
        EXPECT_EQ(code, 1) << "one request is invalid, so the run reports a failure";
        int lines = 0;
        auto results = ReadResults(out, &lines);
        EXPECT_EQ(lines, 5);
        ASSERT_EQ(results.size(), 5u);
        EXPECT_EQ(results["\"q1\""]["tokens"].size(), 12u);
        EXPECT_EQ(results["2"]["tokens"].size(), 9u);
        EXPECT_EQ(results["\"q1\""]["finish_reason"], "length");
        EXPECT_NE(results["\"bad\""]["error"].get<std::string>().find("top_p"), std::string::npos);
        if (first.empty()) {
            first = results;
        } else {
            for (const char* id : {"\"q1\"", "2", "\"q3\"", "\"q4\""}) {
                EXPECT_EQ(results[id]["tokens"], first[id]["tokens"]) << policy << " " << id;
                EXPECT_EQ(results[id]["text"], first[id]["text"]) << policy << " " << id;
            }
        }
        std::remove(out.c_str());
    }
    // A run killed after two results, halfway through writing the third.
    const std::string out = TempPath("batch_resume.jsonl");
    {
        std::ofstream f(out);
        f << first["\"q1\""].dump() << "\n" << first["2"].dump() << "\n" << R"({"id": "q3", "tok)";
    }
    int code = 0;
    const std::string log = testing::RunCli("batch --model synthetic:tiny --threads 1 --input " + in + " --output " + out,
                                            &code, /*merge_stderr=*/true);
    EXPECT_NE(log.find("3 requests to run, 2 already"), std::string::npos) << log;
    std::ifstream f(out);
    std::string line;
    std::map<std::string, int> seen;
    while (std::getline(f, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;   // the cut line stays as it was
        ++seen[j["id"].dump()];
        EXPECT_EQ(j["tokens"], first[j["id"].dump()]["tokens"]);
    }
    EXPECT_EQ(seen.size(), 5u);
    for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id << " written twice";
    std::remove(out.c_str());
    std::remove(in.c_str());
}

// A real SIGTERM in the middle of a run (the test above fakes a cut file):
// every result written before the signal is a complete JSON line, and a
// rerun finishes the rest, each id exactly once, with the tokens an
// uninterrupted run gives.
TEST(BatchCli, SigtermMidRunLeavesValidResumableOutput) {
    const std::string in = TempPath("batch_term_in.jsonl");
    constexpr int kRequests = 40;
    {
        std::ofstream f(in);
        for (int i = 0; i < kRequests; ++i) {
            f << R"({"id": "r)" << i << R"(", "prompt": "Request number )" << i << R"( tells a story", "max_tokens": )"
              << 24 + i % 9 << R"(, "temperature": 0.5, "seed": )" << i << R"(, "ignore_eos": true})" << "\n";
        }
    }
    const std::string clean = TempPath("batch_term_clean.jsonl"), out = TempPath("batch_term_out.jsonl");
    std::remove(clean.c_str());
    std::remove(out.c_str());
    const std::string args = "batch --model synthetic:tiny --threads 1 --policy fcfs --input " + in + " --output ";
    int code = 0;
    testing::RunCli(args + clean, &code);
    ASSERT_EQ(code, 0);
    int clean_lines = 0;
    auto expected = ReadResults(clean, &clean_lines);
    ASSERT_EQ(expected.size(), static_cast<size_t>(kRequests));

    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const std::string cmd = "exec " + std::string(PREPACK_CLI) + " " + args + out + " 2>/dev/null";
        execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    // Wait for a few results, then SIGTERM.
    int before = 0;
    for (int i = 0; i < 3000 && before < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::ifstream f(out);
        std::string line;
        before = 0;
        while (std::getline(f, line)) before += !line.empty();
    }
    ASSERT_GE(before, 3) << "the batch wrote no results";
    kill(pid, SIGTERM);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    {
        std::ifstream f(out);
        std::string line;
        int complete = 0;
        while (std::getline(f, line)) {
            if (f.eof()) break;   // a last line without its newline may be cut
            auto j = nlohmann::json::parse(line, nullptr, false);
            ASSERT_FALSE(j.is_discarded()) << "a written result is not valid JSON: " << line;
            EXPECT_EQ(j["tokens"], expected[j["id"].dump()]["tokens"]) << line;
            ++complete;
        }
        EXPECT_GE(complete, before) << "results flushed before the signal were lost";
        EXPECT_LT(complete, kRequests) << "the signal came too late to test anything";
    }
    testing::RunCli(args + out, &code);
    EXPECT_EQ(code, 0);
    std::ifstream f(out);
    std::string line;
    std::map<std::string, int> seen;
    while (std::getline(f, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;   // a line cut by the signal stays as it was
        ++seen[j["id"].dump()];
        EXPECT_EQ(j["tokens"], expected[j["id"].dump()]["tokens"]) << j["id"];
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(kRequests));
    for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id << " written twice";
    std::remove(out.c_str());
    std::remove(clean.c_str());
    std::remove(in.c_str());
}

TEST(BatchCli, BadLinesAreNamed) {
    const std::string in = TempPath("batch_bad.jsonl");
    {
        std::ofstream f(in);
        f << R"({"id": 1, "prompt": "ok"})" << "\n" << R"({"id": 2, "max_tokens": 3})" << "\n";
    }
    int code = 0;
    std::string out = testing::RunCli("batch --model synthetic:tiny --input " + in + " --output /dev/null", &code, true);
    EXPECT_NE(code, 0);
    EXPECT_NE(out.find("line 2"), std::string::npos) << out;
    {
        std::ofstream f(in);
        f << R"({"id": 1, "prompt": "a"})" << "\n" << R"({"id": 1, "prompt": "b"})" << "\n";
    }
    out = testing::RunCli("batch --model synthetic:tiny --input " + in + " --output /dev/null", &code, true);
    EXPECT_NE(out.find("duplicate id"), std::string::npos) << out;
    out = testing::RunCli("batch --model synthetic:tiny --input /no/such.jsonl --output /dev/null", &code, true);
    EXPECT_NE(out.find("/no/such.jsonl"), std::string::npos) << out;
    std::remove(in.c_str());
}

}  // namespace
}  // namespace prepack
