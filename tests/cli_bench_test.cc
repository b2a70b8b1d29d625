// The benchmark and evaluation commands end to end on small models: the JSON
// contracts, token accounting per layout, and clear errors for bad flags.
#include <string>
#include <tuple>

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
    testing::ExpectCliFailsSaying("bench prefill --model synthetic:tiny --lengths zipf:3",
                                  "unknown distribution 'zipf'");
    testing::ExpectCliFailsSaying("bench prefill --model synthetic:tiny --layouts padded,diagonal",
                                  "unknown prefill layout 'diagonal'");
    testing::ExpectCliFailsSaying("bench prefill --model synthetic:tiny --lengths-file /no/such/file",
                                  "/no/such/file");
    testing::ExpectCliFailsSaying("bench prefill --model synthetic:tiny --lengths fixed:10 --pack-capacity 5",
                                  "below the longest prompt");
}

TEST(BenchForwardCli, JsonReportsCeilingsAndEfficiencies) {
    int code = 0;
    const std::string out = testing::RunCli(
        "bench forward --model synthetic:tiny --prompt-tokens 24 --decode-tokens 4 --decode-batch 4 --reps 1 "
        "--threads 1 --json",
        &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    for (const char* key : {"prefill_tokens_per_s", "prefill_gflops", "gemm_peak_gflops", "prefill_efficiency",
                            "decode_tokens_per_s", "decode_gbps", "mem_bandwidth_gbps", "decode_efficiency",
                            "decode_batch_tokens_per_s", "prepacked_weights_speedup"}) {
        ASSERT_TRUE(j.contains(key)) << key;
        EXPECT_GT(j[key].get<double>(), 0.0) << key;
    }
    // Efficiencies are the same-run ratios they claim to be.
    EXPECT_NEAR(j["prefill_efficiency"].get<double>(),
                j["prefill_gflops"].get<double>() / j["gemm_peak_gflops"].get<double>(), 1e-9);
    EXPECT_NEAR(j["decode_efficiency"].get<double>(),
                j["decode_gbps"].get<double>() / j["mem_bandwidth_gbps"].get<double>(), 1e-9);
    EXPECT_EQ(j["decode_batch"], 4);
    EXPECT_EQ(j["kv_dtype"], "f32");
    EXPECT_TRUE(j["prepacked_weights_blocked"].is_boolean());
}

// Few-row kernels from memory and cache at every level; the int8 GEMM from
// cache where the level has it for the type (Q4_K from AVX2 up, never Q8_0).
TEST(BenchKernelsCli, OneResultPerTypeLevelRowCountAndKernelWithTheBytesItRead) {
    int code = 0;
    const std::string out = testing::RunCli(
        "bench kernels --types q4_k,q8_0 --rows 1,3,20 --levels baseline,avx2 --k 512 --memory-mib 1 --cache-kib 8 "
        "--reps 1 --threads 1 --json",
        &code);
    if (out.find("not a level this CPU runs") != std::string::npos) GTEST_SKIP() << "no AVX2 here";
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    // 2 types x 2 levels x rows 1 and 3 few-row, and Q4_K's GEMM at AVX2 for rows 1, 3 and 20.
    ASSERT_EQ(j["results"].size(), 2u * 2u * 2u + 3u) << out;
    int gemms = 0;
    for (const auto& r : j["results"]) {
        EXPECT_GT(r["cache_gbps"].get<double>(), 0.0) << r;
        EXPECT_GT(r["cache_gmacs"].get<double>(), 0.0) << r;
        // Whole rows of 512 weights: Q4_K 288 bytes, Q8_0 544; about 1 MiB and 8 KiB of them.
        const int64_t row = r["type"] == "Q4_K" ? 288 : 544;
        EXPECT_EQ(r["cache_bytes"].get<int64_t>(), 8192 / row * row) << r;
        // Multiply-adds per second are the rows times the weights per second.
        EXPECT_NEAR(r["cache_gmacs"].get<double>(),
                    r["cache_gbps"].get<double>() / row * 512 * r["rows"].get<int>(), 1e-6 * r["cache_gmacs"].get<double>())
            << r;
        if (r["kernel"] == "gemm") {
            ++gemms;
            EXPECT_EQ(r["type"], "Q4_K") << r;
            EXPECT_EQ(r["level"], "avx2") << r;
            EXPECT_FALSE(r.contains("memory_gbps")) << "the GEMM is timed from cache only: " << r;
        } else {
            EXPECT_EQ(r["kernel"], "few-row") << r;
            EXPECT_LE(r["rows"].get<int>(), 16) << r;
            EXPECT_GT(r["memory_gbps"].get<double>(), 0.0) << r;
            EXPECT_EQ(r["memory_bytes"].get<int64_t>(), (int64_t{1} << 20) / row * row) << r;
        }
    }
    EXPECT_EQ(gemms, 3);
    EXPECT_EQ(j["results"][0]["level"], "baseline");
    EXPECT_EQ(j["results"][1]["rows"], 3);
}

TEST(BenchKernelsCli, BadFlagsAreNamed) {
    testing::ExpectCliFailsSaying("bench kernels --types q4_0,q3_k", "unknown block type 'q3_k'");
    testing::ExpectCliFailsSaying("bench kernels --rows 1,5000", "--rows: 5000 is above 4096");
    testing::ExpectCliFailsSaying("bench kernels --k 300", "not a multiple of 256");
    testing::ExpectCliFailsSaying("bench kernels --levels sse9", "--levels: 'sse9'");
}

// (The default, f32 and f32, is checked above.)
TEST(BenchForwardCli, KvDTypeFollowsTheWeightsUnlessNamed) {
    const std::string base =
        "bench forward --model synthetic:tiny --prompt-tokens 16 --decode-tokens 2 --decode-batch 2 --reps 1 "
        "--threads 1 --json";
    for (const auto& [flags, dtype, kv_dtype] :
         {std::tuple{" --dtype bf16", "bf16", "bf16"},
          std::tuple{" --kv-dtype bf16", "f32", "bf16"}, std::tuple{" --dtype bf16 --kv-dtype f32", "bf16", "f32"}}) {
        int code = 0;
        const std::string out = testing::RunCli(base + flags, &code);
        ASSERT_EQ(code, 0) << flags << ": " << out;
        const auto j = nlohmann::json::parse(out);
        EXPECT_EQ(j["dtype"], dtype) << flags;
        EXPECT_EQ(j["kv_dtype"], kv_dtype) << flags;
    }
    int code = 0;
    const std::string bad = testing::RunCli(base + " --kv-dtype fp8", &code, /*merge_stderr=*/true);
    EXPECT_NE(code, 0);
    EXPECT_NE(bad.find("--kv-dtype"), std::string::npos) << bad;
}

TEST(BenchLazyCli, JsonHasTheContractKeys) {
    int code = 0;
    const std::string out = testing::RunCli(
        "bench lazy --model synthetic:tiny --prompt-tokens 64,96 --max-tokens 2 --reps 1 --warmup 0 --threads 1 "
        "--lazy-scoring paper --json",
        &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    ASSERT_EQ(j["results"].size(), 2u);
    for (const auto& r : j["results"]) {
        for (const char* key : {"prompt_tokens", "ttft_ms_full", "ttft_ms_lazy", "ttft_speedup", "work_fraction"}) {
            ASSERT_TRUE(r.contains(key)) << key;
        }
        // 6 layers under the default schedule 1:0.5,2:0.3,4:0.15: (2 + 0.5 + 2 * 0.3 + 0.15) / 6, give or take
        // rounding, when nothing is kept by position (the paper's rule: the default keeps the first 4 and
        // last 32 tokens whatever the keep fractions, most of these short prompts).
        EXPECT_NEAR(r["work_fraction"].get<double>(), 3.25 / 6.0, 0.02);
    }
    EXPECT_EQ(j["schedule"], "1:0.5,2:0.3,4:0.15");
    EXPECT_EQ(j["scoring"], "window=1,heads=mean,pool=0,sinks=0,recent=0");
    // One lazy variant per revival bound asked for (here the default and none).
    for (const auto& r : j["results"]) {
        ASSERT_EQ(r["lazy"].size(), 2u);
        EXPECT_EQ(r["lazy"][0]["revive_limit"], j["default_revive_limit"]);
        EXPECT_EQ(r["lazy"][1]["revive_limit"], -1);
        for (const auto& v : r["lazy"]) {
            ASSERT_EQ(v["outputs"].size(), 1u);
            EXPECT_EQ(v["outputs"][0]["output_tokens"], 2);
            for (const char* key : {"total_ms_full", "total_ms_keep1", "total_ms", "total_speedup"}) {
                EXPECT_GT(v["outputs"][0][key].get<double>(), 0.0) << key;
            }
        }
    }
    const std::string bad = testing::RunCli("bench lazy --model synthetic:tiny --prompt-tokens 64 --lazy-schedule 9:0.5",
                                            &code, /*merge_stderr=*/true);
    EXPECT_NE(code, 0);
    EXPECT_NE(bad.find("9:0.5"), std::string::npos) << bad;
}

TEST(EvalLazyCli, ReportsFidelityOnStories) {
    PREPACK_REQUIRE_STORIES();
    int code = 0;
    const std::string out = testing::RunCli("eval lazy --model " + testing::StoriesDir() +
                                                "/stories260K.gguf --count 4 --threads 1 --json",
                                            &code);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["prompts"], 4);
    // The default revival bound and none, as the command evaluates by default.
    const auto& bounds = j["by_revive_limit"];
    ASSERT_EQ(bounds.size(), 2u);
    EXPECT_EQ(bounds[0]["revive_limit"], j["default_revive_limit"]);
    EXPECT_EQ(bounds[1]["revive_limit"], -1);
    for (const auto& b : bounds) {
        for (const char* key : {"first_token_top1_agreement", "greedy_agreement", "work_fraction", "work_fraction_end"}) {
            EXPECT_GE(b[key].get<double>(), 0.0) << key;
            EXPECT_LE(b[key].get<double>(), 1.0) << key;
        }
        EXPECT_GE(b["first_token_kl"].get<double>(), 0.0);
        // Decode steps only add to the prompt's work.
        EXPECT_GE(b["work_fraction_end"].get<double>(), b["work_fraction"].get<double>());
    }
    // A bound changes decode steps only: the prefill, and so the first token, is the same.
    EXPECT_EQ(bounds[0]["first_token_kl"], bounds[1]["first_token_kl"]);
    EXPECT_EQ(bounds[0]["work_fraction"], bounds[1]["work_fraction"]);
    EXPECT_GE(j["mean_prompt_tokens"].get<double>(), 150.0);
    EXPECT_LE(j["mean_prompt_tokens"].get<double>(), 500.0);
}

}  // namespace
}  // namespace prepack
