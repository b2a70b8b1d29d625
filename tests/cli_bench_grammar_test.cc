// `prepack bench grammar` on the synthetic model: the JSON report's keys
// and sane values, the replayed masks against a naive count over the dumped
// vocabulary (independent of the engine: which tokens are all digits and
// short enough), the dump scripts/bench_grammar.py reads, and clear errors.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

std::string TempDir(const std::string& name) {
    const std::string dir = ::testing::TempDir() + "/cli_bench_grammar_" + std::to_string(getpid()) + "_" + name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// Exactly three digits, then the end.
constexpr const char* kDigitsGbnf = "root ::= [0-9] [0-9] [0-9]\n";
constexpr const char* kSchema =
    R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"]}}, "required": ["a", "b"]})";

nlohmann::json RunBench(const std::string& args) {
    int code = 0;
    const std::string out = testing::RunCli("bench grammar --model synthetic:tiny --threads 1 --json " + args, &code);
    EXPECT_EQ(code, 0) << args << "\n" << out;
    return code == 0 ? nlohmann::json::parse(out) : nlohmann::json::object();
}

void ExpectOrderedDistribution(const nlohmann::json& d, const std::string& what) {
    for (const char* key : {"n", "p50", "p99", "max", "mean"}) ASSERT_TRUE(d.contains(key)) << what << " lacks " << key;
    EXPECT_GT(d["n"].get<int64_t>(), 0) << what;
    EXPECT_GE(d["p50"].get<double>(), 0.0) << what;
    EXPECT_LE(d["p50"].get<double>(), d["p99"].get<double>()) << what;
    EXPECT_LE(d["p99"].get<double>(), d["max"].get<double>()) << what;
    EXPECT_LE(d["mean"].get<double>(), d["max"].get<double>()) << what;
}

TEST(BenchGrammarCli, ReportHasEveryFigureWithSaneValues) {
    const std::string dir = TempDir("report");
    const nlohmann::json j = RunBench("--gbnf " + Write(dir, "digits.gbnf", kDigitsGbnf) + " --json-schema " +
                                      Write(dir, "small.json", kSchema) +
                                      " --json-object --prompt x --max-tokens 12 --compile-repeats 3 "
                                      "--cold-replays 2 --warm-replays 2");
    ASSERT_TRUE(j.contains("grammars")) << j.dump();
    EXPECT_EQ(j["vocab"]["size"], 512);   // synthetic:tiny
    EXPECT_GT(j["vocab"]["build_ms"].get<double>(), 0.0);
    ASSERT_EQ(j["grammars"].size(), 3u);
    // Schema files, then GBNF files, then --json-object, whatever the flags' order.
    const std::vector<std::string> names = {"small", "digits", "json_object"};
    const std::vector<std::string> kinds = {"json_schema", "gbnf", "json_object"};
    for (size_t i = 0; i < 3; ++i) {
        const nlohmann::json& g = j["grammars"][i];
        EXPECT_EQ(g["name"], names[i]);
        EXPECT_EQ(g["kind"], kinds[i]);
        EXPECT_GT(g["gbnf_bytes"].get<int64_t>(), 0);
        ExpectOrderedDistribution(g["compile_ms"], names[i] + " compile");
        EXPECT_EQ(g["compile_ms"]["n"], 3);
        ExpectOrderedDistribution(g["mask_us"]["cold"], names[i] + " cold");
        ExpectOrderedDistribution(g["mask_us"]["warm"], names[i] + " warm");
        ExpectOrderedDistribution(g["allowed_tokens"], names[i] + " allowed");
        // A mask per content token and one after the last; an end token
        // closing the output gets none.
        const int64_t tokens = g["tokens"], steps = g["steps"];
        EXPECT_EQ(steps, tokens + (g["ended_with_end_token"].get<bool>() ? 0 : 1)) << names[i];
        EXPECT_EQ(g["mask_us"]["cold"]["n"].get<int64_t>(), 2 * steps) << names[i];
        EXPECT_EQ(g["mask_us"]["warm"]["n"].get<int64_t>(), 2 * steps) << names[i];
        EXPECT_GE(g["allowed_tokens"]["p50"].get<double>(), 1.0) << names[i];   // never a dead end
        EXPECT_LE(g["allowed_tokens"]["max"].get<double>(), 512.0) << names[i];
    }
    // Three digits: greedy generation stops as soon as the grammar is complete.
    const nlohmann::json& digits = j["grammars"][1];
    EXPECT_TRUE(digits["complete"].get<bool>());
    EXPECT_LE(digits["tokens"].get<int64_t>(), 4);
    EXPECT_EQ(j["summary"]["mask_us_warm"]["n"].get<int64_t>(),
              j["grammars"][0]["mask_us"]["warm"]["n"].get<int64_t>() +
                  j["grammars"][1]["mask_us"]["warm"]["n"].get<int64_t>() +
                  j["grammars"][2]["mask_us"]["warm"]["n"].get<int64_t>());
    EXPECT_EQ(j["summary"]["compile_ms_pooled"]["n"], 9);
    EXPECT_FALSE(j.contains("throughput"));   // not asked for
}

// The masks over "123" against the vocabulary: before k digits, the tokens
// that are 1..3-k digits; after all three, only the end tokens.
TEST(BenchGrammarCli, ReplayedMasksMatchANaiveCountAndTheDump) {
    const std::string dir = TempDir("replay");
    const std::string texts = Write(dir, "texts.json", R"({"digits": "123"})");
    const nlohmann::json j = RunBench("--gbnf " + Write(dir, "digits.gbnf", kDigitsGbnf) + " --texts " + texts +
                                      " --compile-repeats 1 --cold-replays 1 --warm-replays 1 --dump-dir " + dir +
                                      "/dump");
    ASSERT_TRUE(j.contains("grammars")) << j.dump();
    const nlohmann::json vocab = nlohmann::json::parse(testing::ReadFile(dir + "/dump/vocab.json"));
    std::vector<std::string> bytes;
    for (const auto& hex : vocab["token_bytes_hex"]) {
        std::string b;
        const std::string h = hex;
        for (size_t i = 0; i + 1 < h.size(); i += 2) b.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
        bytes.push_back(b);
    }
    ASSERT_EQ(bytes.size(), 512u);
    const std::set<int32_t> ends(vocab["end_tokens"].begin(), vocab["end_tokens"].end());
    ASSERT_FALSE(ends.empty());
    auto expected = [&](int remaining) {
        std::set<int32_t> s;
        if (remaining == 0) return ends;
        for (int32_t id = 0; id < static_cast<int32_t>(bytes.size()); ++id) {
            const std::string& b = bytes[id];
            bool digits = !b.empty() && static_cast<int>(b.size()) <= remaining;
            for (char c : b) digits = digits && c >= '0' && c <= '9';
            if (digits) s.insert(id);
        }
        return s;
    };
    const nlohmann::json& g = j["grammars"][0];
    const std::vector<int32_t> ids = g["dump"]["ids"];
    std::string text;
    for (int32_t id : ids) text += bytes[id];
    EXPECT_EQ(text, "123");
    const std::vector<int32_t> allowed = g["dump"]["allowed_per_step"];
    const std::string masks = testing::ReadFile(dir + "/dump/masks/digits.bin");
    const size_t mask_bytes = 512 / 8;
    ASSERT_EQ(masks.size(), allowed.size() * mask_bytes);
    int consumed = 0;
    for (size_t step = 0; step < allowed.size(); ++step) {
        std::set<int32_t> got;
        for (int32_t id = 0; id < 512; ++id) {
            if ((static_cast<unsigned char>(masks[step * mask_bytes + id / 8]) >> (id % 8)) & 1) got.insert(id);
        }
        EXPECT_EQ(got, expected(3 - consumed)) << "step " << step;
        EXPECT_EQ(allowed[step], static_cast<int32_t>(got.size())) << "step " << step;
        if (step < ids.size()) consumed += static_cast<int>(bytes[ids[step]].size());
    }
    EXPECT_EQ(consumed, 3);
    EXPECT_EQ(testing::ReadFile(dir + "/dump/grammars/digits.gbnf"), kDigitsGbnf);

    // The same ids given as ids replay to the same masks.
    const std::string ids_file = Write(dir, "ids.json", nlohmann::json({{"digits", ids}}).dump());
    const nlohmann::json again = RunBench("--gbnf " + dir + "/digits.gbnf --texts " + ids_file +
                                          " --compile-repeats 1 --cold-replays 1 --warm-replays 0 --dump-dir " + dir +
                                          "/dump2");
    ASSERT_TRUE(again.contains("grammars"));
    EXPECT_EQ(again["grammars"][0]["dump"]["allowed_per_step"], g["dump"]["allowed_per_step"]);
}

TEST(BenchGrammarCli, ThroughputComparesEqualWork) {
    const std::string dir = TempDir("throughput");
    const nlohmann::json j = RunBench("--gbnf " + Write(dir, "digits.gbnf", kDigitsGbnf) +
                                      " --prompt x --max-tokens 4 --compile-repeats 1 --cold-replays 1 "
                                      "--warm-replays 0 --batch-sizes 1,3 --throughput-repeats 2 --kv-budget 50000000 "
                                      "--throughput-max-tokens 8");
    ASSERT_TRUE(j.contains("throughput")) << j.dump();
    ASSERT_EQ(j["throughput"].size(), 2u);
    const std::vector<int> batches = {1, 3};
    for (size_t i = 0; i < 2; ++i) {
        const nlohmann::json& t = j["throughput"][i];
        EXPECT_EQ(t["batch"], batches[i]);
        EXPECT_EQ(t["requests"], 4);   // at least four, so batch 1 is not one request
        EXPECT_EQ(t["grammar"], "digits");
        EXPECT_EQ(t["failed_requests"], 0);
        EXPECT_GT(t["constrained_tokens_per_s"].get<double>(), 0.0);
        EXPECT_GT(t["unconstrained_tokens_per_s"].get<double>(), 0.0);
        ASSERT_EQ(t["ratios"].size(), 2u);
        EXPECT_NEAR(t["ratio"].get<double>(),
                    (t["ratios"][0].get<double>() + t["ratios"][1].get<double>()) / 2, 1e-9);   // median of two
    }
}

TEST(BenchGrammarCli, BadInputIsNamed) {
    const std::string dir = TempDir("errors");
    const std::string digits = Write(dir, "digits.gbnf", kDigitsGbnf);
    testing::ExpectCliFailsSaying("bench grammar --model synthetic:tiny --schemas /no/such/dir", "is not a directory");
    testing::ExpectCliFailsSaying("bench grammar --model synthetic:tiny", "no grammars");
    testing::ExpectCliFailsSaying(
        "bench grammar --model synthetic:tiny --gbnf " + Write(dir, "broken.gbnf", "root ::= (\"a\"\n"),
        "grammar 'broken'");
    testing::ExpectCliFailsSaying("bench grammar --model synthetic:tiny --gbnf " + digits + " --texts " +
                                      Write(dir, "other.json", R"({"other": "1"})"),
                                  "--texts has no text for grammar 'digits'");
    testing::ExpectCliFailsSaying("bench grammar --model synthetic:tiny --gbnf " + digits + " --texts " +
                                      Write(dir, "far.json", R"({"digits": [99999]})"),
                                  "outside the vocabulary");
    testing::ExpectCliFailsSaying("bench grammar --model synthetic:tiny --gbnf " + digits + " --texts " +
                                      Write(dir, "bad.json", R"({"digits": "12x"})"),
                                  "not allowed by the grammar");
    testing::ExpectCliFailsSaying("bench grammar --model synthetic:tiny --gbnf " + digits + " --gbnf " + digits,
                                  "two grammars are named 'digits'");
    testing::ExpectCliFailsSaying("bench grammar --model synthetic:tiny --gbnf " + digits + " --compile-repeats 0",
                                  "--compile-repeats");
}

}  // namespace
}  // namespace prepack
