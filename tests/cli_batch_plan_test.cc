// `prepack batch plan` and `prepack batch merge` (issue 40): the shards hold
// every input line exactly once, verbatim and in input order, with the
// manifest naming them; bad input lines are refused as `prepack batch`
// refuses them; merge restores input order from shuffled shard outputs and
// names missing, duplicate and unknown ids by line; and on stories260K a
// batch run as 2 planned shards and merged equals the whole run, id by id,
// computing about as many prompt tokens.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

namespace fs = std::filesystem;

class BatchPlanCli : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("batch_plan_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string Path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

std::vector<std::string> ReadLines(const std::string& path) {
    std::vector<std::string> lines;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) lines.push_back(line);
    return lines;
}

void WriteLines(const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream f(path);
    for (const std::string& l : lines) f << l << "\n";
}

// Two documents shared by several questions each, one line without an id,
// a blank line, integer and string ids.
std::vector<std::string> SharedPrefixLines() {
    const std::string doc_a =
        "Once upon a time there was a little robot who lived in a big old house by the sea and every morning it "
        "cleaned the windows and watched the boats go by";
    const std::string doc_b =
        "The old farmer had three cows, two dogs and a cat that slept on the warm roof of the barn all summer long "
        "while the children played in the fields";
    std::vector<std::string> lines;
    for (int i = 0; i < 6; ++i) {
        lines.push_back(R"({"id": "a)" + std::to_string(i) + R"(", "prompt": ")" + doc_a + " question " +
                        std::to_string(i) + R"(", "max_tokens": 8, "temperature": 0})");
        lines.push_back(R"({"id": )" + std::to_string(100 + i) + R"(, "prompt": ")" + doc_b + " question " +
                        std::to_string(i) + R"(", "max_tokens": 6, "temperature": 0})");
    }
    lines.insert(lines.begin() + 3, "");
    lines.push_back(R"({"prompt": "no id here", "max_tokens": 4})");
    lines.push_back(R"({"id": "t", "prompt_tokens": [1, 40, 41, 42], "max_tokens": 5})");
    return lines;
}

nlohmann::json ReadJson(const std::string& path) {
    std::ifstream f(path);
    return nlohmann::json::parse(f);
}

TEST_F(BatchPlanCli, ShardsHoldEveryLineOnceVerbatimInInputOrder) {
    const std::vector<std::string> input = SharedPrefixLines();
    WriteLines(Path("in.jsonl"), input);
    int code = 0;
    const std::string out = testing::RunCli("batch plan --model synthetic:tiny --shards 3 --input " + Path("in.jsonl") +
                                                " --out-dir " + Path("plan") + " --json",
                                            &code);
    ASSERT_EQ(code, 0) << out;
    const nlohmann::json summary = nlohmann::json::parse(out);
    const nlohmann::json manifest = ReadJson(Path("plan/manifest.json"));
    EXPECT_EQ(manifest["format"], "prepack-batch-plan/1");
    EXPECT_EQ(manifest["requests"], input.size() - 1);   // the blank line is no request
    EXPECT_EQ(manifest["input_lines"], input.size());
    ASSERT_EQ(manifest["shards"].size(), 3u);
    EXPECT_EQ(summary["totals"], manifest["totals"]);
    EXPECT_FALSE(summary["shards"][0].contains("lines"));

    std::map<size_t, int> seen;
    int64_t computed = 0;
    for (const auto& s : manifest["shards"]) {
        const std::vector<std::string> shard = ReadLines(Path("plan/" + s["file"].get<std::string>()));
        const auto& lines = s["lines"];
        ASSERT_EQ(shard.size(), lines.size());
        ASSERT_EQ(s["ids"].size(), lines.size());
        EXPECT_TRUE(std::is_sorted(lines.begin(), lines.end()));
        for (size_t i = 0; i < shard.size(); ++i) {
            const size_t n = lines[i].get<size_t>();
            ++seen[n];
            const std::string& original = input[n - 1];
            const nlohmann::json j = nlohmann::json::parse(shard[i]);
            if (nlohmann::json::parse(original).contains("id")) {
                EXPECT_EQ(shard[i], original) << "line " << n << " is not verbatim";
            } else {
                // The id `prepack batch` gives it on the whole file: its line number.
                EXPECT_EQ(j["id"], n);
                nlohmann::json without = j;
                without.erase("id");
                EXPECT_EQ(without, nlohmann::json::parse(original));
            }
            EXPECT_EQ(j["id"], s["ids"][i]);
        }
        computed += s["prompt_tokens_computed"].get<int64_t>();
    }
    for (size_t n = 1; n <= input.size(); ++n) {
        if (input[n - 1].empty()) {
            EXPECT_EQ(seen.count(n), 0u);
        } else {
            EXPECT_EQ(seen[n], 1) << "line " << n;
        }
    }
    EXPECT_EQ(computed, manifest["totals"]["prompt_tokens_computed"].get<int64_t>());
    EXPECT_LE(manifest["totals"]["prompt_tokens_computed"].get<double>(),
              manifest["contrast"]["contiguous"]["prompt_tokens_computed"].get<double>());

    // The input's sha256, as sha256sum gives it.
    int sum_code = 0;
    FILE* p = popen(("sha256sum " + Path("in.jsonl") + " 2>/dev/null").c_str(), "r");
    char buf[128] = {};
    const size_t got = fread(buf, 1, 64, p);
    sum_code = pclose(p);
    if (sum_code == 0 && got == 64) {
        EXPECT_EQ(manifest["input_sha256"], std::string(buf, 64));
    }

    // The same plan again: the same shards.
    const std::string first = testing::ReadFile(Path("plan/manifest.json"));
    testing::RunCli("batch plan --model synthetic:tiny --shards 3 --input " + Path("in.jsonl") + " --out-dir " +
                        Path("plan"),
                    &code);
    ASSERT_EQ(code, 0);
    EXPECT_EQ(testing::ReadFile(Path("plan/manifest.json")), first);
}

TEST_F(BatchPlanCli, BadLinesAreRefusedAsBatchRefusesThem) {
    WriteLines(Path("bad.jsonl"), {R"({"id": 1, "prompt": "ok"})", R"({"id": 2, "max_tokens": 3})", "not json",
                                   R"({"id": 1, "prompt": "again"})", R"({"id": 5, "prompt": "x", "top_p": 9})"});
    int code = 0;
    const std::string out = testing::RunCli("batch plan --model synthetic:tiny --shards 2 --input " + Path("bad.jsonl") +
                                                " --out-dir " + Path("plan"),
                                            &code, /*merge_stderr=*/true);
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find("line 2: needs 'prompt'"), std::string::npos) << out;
    EXPECT_NE(out.find("line 3: not a JSON object"), std::string::npos) << out;
    EXPECT_NE(out.find("line 4: duplicate id 1"), std::string::npos) << out;
    EXPECT_EQ(out.find("line 5"), std::string::npos) << "a bad sampling value fails at run time, with its result";
    EXPECT_FALSE(fs::exists(Path("plan/manifest.json")));
    testing::ExpectCliFailsSaying("batch plan --model synthetic:tiny --shards 2 --input /no/such.jsonl --out-dir " +
                                      Path("plan"),
                                  "/no/such.jsonl");
    testing::ExpectCliFailsSaying("batch plan --model synthetic:tiny --shards 0 --input " + Path("bad.jsonl") +
                                      " --out-dir " + Path("plan"),
                                  "--shards");
    // `prepack batch` itself still wants its flags.
    testing::ExpectCliFailsSaying("batch --model synthetic:tiny --output /dev/null", "--input is required");
}

// Fake shard outputs (merge reads result lines only, no engine needed).
std::string Result(const std::string& id_json, int token) {
    return R"({"id": )" + id_json + R"(, "tokens": [)" + std::to_string(token) + R"(], "finish_reason": "length"})";
}

TEST_F(BatchPlanCli, MergeRestoresInputOrderAndNamesMissingAndDuplicateIds) {
    std::vector<std::string> input;
    for (int i = 0; i < 30; ++i) {
        input.push_back(R"({"id": "r)" + std::to_string(i) + R"(", "prompt": "shared beginning of every prompt, then )" +
                        std::to_string(i) + R"("})");
    }
    input.push_back(R"({"prompt": "no id"})");   // line 31: id 31
    WriteLines(Path("in.jsonl"), input);
    int code = 0;
    testing::RunCli("batch plan --model synthetic:tiny --shards 2 --input " + Path("in.jsonl") + " --out-dir " +
                        Path("plan"),
                    &code);
    ASSERT_EQ(code, 0);
    const nlohmann::json manifest = ReadJson(Path("plan/manifest.json"));
    // Each shard's results in a shuffled (finishing) order, one cut line.
    std::mt19937_64 rng(1);
    std::vector<std::string> outs;
    for (const auto& s : manifest["shards"]) {
        std::vector<std::string> results;
        for (const auto& id : s["ids"]) {
            const size_t line = s["lines"][results.size()].get<size_t>();
            results.push_back(Result(id.dump(), static_cast<int>(line)));
        }
        std::shuffle(results.begin(), results.end(), rng);
        results.insert(results.begin() + results.size() / 2, R"({"id": "r1", "tok)");   // killed mid-line, rerun
        outs.push_back(Path("out" + std::to_string(outs.size()) + ".jsonl"));
        WriteLines(outs.back(), results);
    }
    const std::string merge = "batch merge --manifest " + Path("plan/manifest.json") + " --output " + Path("merged.jsonl") +
                              " --outputs ";
    // The shard outputs in the other order still merge to input order.
    std::string log = testing::RunCli(merge + outs[1] + " " + outs[0], &code, /*merge_stderr=*/true);
    ASSERT_EQ(code, 0) << log;
    const std::vector<std::string> merged = ReadLines(Path("merged.jsonl"));
    ASSERT_EQ(merged.size(), input.size());
    for (size_t i = 0; i < merged.size(); ++i) {
        const nlohmann::json j = nlohmann::json::parse(merged[i]);
        EXPECT_EQ(j["tokens"][0], static_cast<int>(i + 1)) << "result of line " << i + 1 << " out of place";
        const nlohmann::json in = nlohmann::json::parse(input[i]);
        EXPECT_EQ(j["id"], in.contains("id") ? in["id"] : nlohmann::json(i + 1));
    }

    // A missing id: named by line, nothing written.
    fs::remove(Path("merged.jsonl"));
    std::string other;
    for (size_t k = 0; k < 2; ++k) {
        std::vector<std::string> lines = ReadLines(outs[k]);
        const auto it = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
            return l.find(R"({"id": "r7", "tokens")") != std::string::npos;
        });
        if (it == lines.end()) continue;
        lines.erase(it);
        WriteLines(Path("short.jsonl"), lines);
        other = outs[1 - k];
    }
    ASSERT_FALSE(other.empty());
    log = testing::RunCli(merge + Path("short.jsonl") + " " + other, &code, true);
    EXPECT_EQ(code, 1) << log;
    EXPECT_NE(log.find("line 8 (id \"r7\"): no result"), std::string::npos) << log;
    EXPECT_NE(log.find("1 missing, 0 duplicate"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(Path("merged.jsonl")));

    // A duplicate id (a shard's output given twice, or a rerun into a new
    // file): named by line with where each copy is.
    WriteLines(Path("extra.jsonl"), {Result("31", 31)});
    log = testing::RunCli(merge + outs[0] + " " + outs[1] + " " + Path("extra.jsonl"), &code, true);
    EXPECT_EQ(code, 1) << log;
    EXPECT_NE(log.find("line 31 (id 31): 2 results"), std::string::npos) << log;
    EXPECT_NE(log.find(Path("extra.jsonl") + ":1"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(Path("merged.jsonl")));

    // An id the plan does not have.
    WriteLines(Path("alien.jsonl"), {Result("\"zz\"", 0)});
    log = testing::RunCli(merge + outs[0] + " " + outs[1] + " " + Path("alien.jsonl"), &code, true);
    EXPECT_EQ(code, 1) << log;
    EXPECT_NE(log.find("id \"zz\" is not in the plan"), std::string::npos) << log;
    testing::ExpectCliFailsSaying(merge + "/no/such/out.jsonl", "/no/such/out.jsonl");
}

// The engine's own count of prompt tokens computed, from `prepack batch`'s last line.
long long PromptTokensComputed(const std::string& log) {
    const size_t at = log.find("batch: done; ");
    if (at == std::string::npos) return -1;
    long long computed = -1, logical = -1;
    std::sscanf(log.c_str() + at, "batch: done; %lld of %lld", &computed, &logical);
    return computed;
}

std::map<std::string, nlohmann::json> ResultsById(const std::string& path) {
    std::map<std::string, nlohmann::json> by_id;
    for (const std::string& l : ReadLines(path)) {
        if (l.empty()) continue;
        const nlohmann::json j = nlohmann::json::parse(l);
        by_id[j["id"].dump()] = j;
    }
    return by_id;
}

// On a real model, greedy: the whole batch in one run, and the same batch as
// 2 planned shards run separately and merged, give the same tokens per id,
// in input order, computing within 5% as many prompt tokens.
TEST_F(BatchPlanCli, TwoShardsMergedEqualTheWholeRunOnStories) {
    PREPACK_REQUIRE_STORIES();
    const std::string model = testing::StoriesDir() + "/stories260K.gguf";
    const std::vector<std::string> docs = {
        "Once upon a time, there was a little girl named Lily. She loved to play in the park with her friends and "
        "her dog Max. One day, she found a shiny red ball under a big tree.",
        "Tom was a happy boy who liked to build towers with his blocks. His mom gave him a new box of blocks for his "
        "birthday, and he built the tallest tower in the whole town.",
        "In a small house near the forest lived an old cat named Whiskers. Every night he sat by the window and "
        "looked at the moon and the stars above the trees.",
        "The sun was shining and the birds were singing. Sam and his sister went to the beach with a bucket and a "
        "spade to build a big sand castle by the sea."};
    const std::vector<std::string> asks = {"What happened next?", "Then she said", "After that,", "He was sad because",
                                           "They all laughed when", "The next day", "Suddenly,", "At the end,",
                                           "Her friend asked", "So they went"};
    std::vector<std::string> input;
    std::mt19937_64 rng(3);
    for (size_t d = 0; d < docs.size(); ++d) {
        for (size_t a = 0; a < asks.size(); ++a) {
            input.push_back(R"({"id": "d)" + std::to_string(d) + "q" + std::to_string(a) + R"(", "prompt": ")" +
                            docs[d] + " " + asks[a] + R"(", "max_tokens": )" + std::to_string(8 + (d + a) % 9) +
                            R"(, "temperature": 0})");
        }
    }
    std::shuffle(input.begin(), input.end(), rng);
    ASSERT_EQ(input.size(), 40u);
    WriteLines(Path("in.jsonl"), input);

    const std::string run = "batch --model " + model + " --threads 1 --input ";
    int code = 0;
    std::string log = testing::RunCli(run + Path("in.jsonl") + " --output " + Path("whole.jsonl"), &code, true);
    ASSERT_EQ(code, 0) << log;
    const long long whole_computed = PromptTokensComputed(log);
    ASSERT_GT(whole_computed, 0) << log;

    const auto whole = ResultsById(Path("whole.jsonl"));
    // 2 shards: two documents each, no group split; 3 shards: a group is
    // split (its prefix computed on two shards), results still the same.
    for (int shards : {2, 3}) {
        SCOPED_TRACE(std::to_string(shards) + " shards");
        const std::string dir = Path("plan" + std::to_string(shards));
        log = testing::RunCli("batch plan --model " + model + " --shards " + std::to_string(shards) + " --input " +
                                  Path("in.jsonl") + " --out-dir " + dir + " --json",
                              &code);
        ASSERT_EQ(code, 0) << log;
        const nlohmann::json plan = nlohmann::json::parse(log);
        long long shard_computed = 0;
        std::string outs;
        for (int k = 0; k < shards; ++k) {
            const std::string name = plan["shards"][k]["file"];
            EXPECT_GT(plan["shards"][k]["requests"].get<int>(), 0);
            const std::string out = dir + "/out" + std::to_string(k) + ".jsonl";
            log = testing::RunCli(run + dir + "/" + name + " --output " + out, &code, true);
            ASSERT_EQ(code, 0) << log;
            const long long c = PromptTokensComputed(log);
            ASSERT_GT(c, 0) << log;
            shard_computed += c;
            outs += " " + out;
        }
        log = testing::RunCli("batch merge --manifest " + dir + "/manifest.json --output " + dir + "/merged.jsonl" +
                                  " --outputs" + outs,
                              &code, true);
        ASSERT_EQ(code, 0) << log;

        const std::vector<std::string> merged = ReadLines(dir + "/merged.jsonl");
        ASSERT_EQ(merged.size(), input.size());
        for (size_t i = 0; i < merged.size(); ++i) {
            const nlohmann::json j = nlohmann::json::parse(merged[i]);
            EXPECT_EQ(j["id"], nlohmann::json::parse(input[i])["id"]) << "line " << i + 1;
            const auto it = whole.find(j["id"].dump());
            ASSERT_NE(it, whole.end()) << j["id"];
            EXPECT_EQ(j["tokens"], it->second["tokens"]) << j["id"];
            EXPECT_EQ(j["text"], it->second["text"]) << j["id"];
            EXPECT_FALSE(j.contains("error")) << merged[i];
        }
        // The plan's own figures are what the engine computed.
        EXPECT_EQ(plan["totals"]["single_machine_prompt_tokens_computed"].get<long long>(), whole_computed);
        EXPECT_EQ(plan["totals"]["prompt_tokens_computed"].get<long long>(), shard_computed);
        if (shards == 2) {
            EXPECT_LE(double(shard_computed), 1.05 * double(whole_computed))
                << "2 shards computed " << shard_computed << " prompt tokens, the whole run " << whole_computed;
        } else {
            EXPECT_GE(plan["totals"]["split_groups"].get<int>(), 1);
        }
        std::printf("stories260K, 40 lines, %d shards: whole run %lld prompt tokens computed, shards %lld "
                    "(contiguous split: %lld)\n",
                    shards, whole_computed, shard_computed,
                    plan["contrast"]["contiguous"]["prompt_tokens_computed"].get<long long>());
    }
}

}  // namespace
}  // namespace prepack
