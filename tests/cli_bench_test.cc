// `prepack bench prefill` end to end on a small synthetic model: the JSON
// contract, token accounting per layout, and clear errors for bad flags.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

nlohmann::json Layout(const nlohmann::json& out, const std::string& name) {
    for (const auto& r : out["results"]) {
        if (r["layout"] == name) return r;
    }
    ADD_FAILURE() << "no layout " << name;
    return {};
}

TEST(BenchPrefillCli, JsonAccountsForEveryComputedToken) {
    int code = 0;
    const std::string out = testing::RunCli(
        "bench prefill --model synthetic:tiny --prompts 9 --lengths uniform:3:40 --seed 5 --reps 1 --warmup 0 "
        "--threads 1 --memory-budget 50000000 --json",
        &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    const auto& w = j["workload"];
    EXPECT_EQ(w["count"], 9);
    const int64_t total = w["total"], longest = w["max"];
    EXPECT_GE(longest, 3);
    EXPECT_LE(longest, 40);
    const auto padded = Layout(j, "padded"), packed = Layout(j, "packed"), ragged = Layout(j, "ragged"),
               sorted = Layout(j, "sorted");
    EXPECT_EQ(padded["rows"], 9);
    EXPECT_EQ(padded["computed_tokens"].get<int64_t>(), 9 * longest);
    EXPECT_EQ(ragged["computed_tokens"].get<int64_t>(), total);
    EXPECT_EQ(ragged["padding_fraction"].get<double>(), 0.0);
    EXPECT_LE(packed["computed_tokens"].get<int64_t>(), padded["computed_tokens"].get<int64_t>());
    EXPECT_GE(packed["computed_tokens"].get<int64_t>(), total);
    EXPECT_LE(packed["rows"].get<int>(), 9);
    EXPECT_LE(sorted["computed_tokens"].get<int64_t>(), padded["computed_tokens"].get<int64_t>());
    EXPECT_DOUBLE_EQ(j["ideal_speedup_vs_padded"].get<double>(), double(9 * longest) / double(total));
    for (const auto& r : j["results"]) {
        for (const char* key : {"layout", "rows", "computed_tokens", "padding_fraction", "seconds", "tokens_per_s",
                                "peak_bytes", "speedup_vs_padded", "prompts_per_forward_in_budget"}) {
            EXPECT_TRUE(r.contains(key)) << r["layout"] << " lacks " << key;
        }
        EXPECT_GT(r["seconds"].get<double>(), 0.0);
        EXPECT_LT(r["max_logit_diff_vs_first_layout"].get<double>(), 1e-3) << r["layout"];
        EXPECT_LE(r["prompts_per_forward_in_budget"].get<int>(), 9);
    }
    // Padding costs memory: padded never fits more prompts than ragged.
    EXPECT_LE(padded["prompts_per_forward_in_budget"].get<int>(), ragged["prompts_per_forward_in_budget"].get<int>());
    EXPECT_GT(padded["peak_bytes"].get<double>(), ragged["peak_bytes"].get<double>());
}

TEST(BenchPrefillCli, EqualLengthsNeedNoPadding) {
    int code = 0;
    const std::string out = testing::RunCli(
        "bench prefill --model synthetic:tiny --prompts 4 --lengths fixed:12 --reps 1 --warmup 0 --threads 1 --json",
        &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    for (const auto& r : j["results"]) {
        EXPECT_EQ(r["computed_tokens"], 48) << r["layout"];
        EXPECT_EQ(r["padding_fraction"].get<double>(), 0.0) << r["layout"];
    }
}

TEST(BenchPrefillCli, BadFlagsAreNamed) {
    int code = 0;
    std::string out = testing::RunCli("bench prefill --model synthetic:tiny --lengths zipf:3", &code, true);
    EXPECT_NE(code, 0);
    EXPECT_NE(out.find("unknown distribution 'zipf'"), std::string::npos) << out;
    out = testing::RunCli("bench prefill --model synthetic:tiny --layouts padded,diagonal", &code, true);
    EXPECT_NE(code, 0);
    EXPECT_NE(out.find("unknown prefill layout 'diagonal'"), std::string::npos) << out;
    out = testing::RunCli("bench prefill --model synthetic:tiny --lengths-file /no/such/file", &code, true);
    EXPECT_NE(code, 0);
    EXPECT_NE(out.find("/no/such/file"), std::string::npos) << out;
    out = testing::RunCli("bench prefill --model synthetic:tiny --lengths fixed:10 --pack-capacity 5", &code, true);
    EXPECT_NE(code, 0);
    EXPECT_NE(out.find("below the longest prompt"), std::string::npos) << out;
}

}  // namespace
}  // namespace prepack
