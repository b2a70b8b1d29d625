// `prepack bench kernels`: the quantized linear kernels alone, per block
// type and per CPU level this machine runs, as GB/s of weights streamed and
// multiply-adds per second. The few-row kernels (decode; up to 16 rows) run
// on one matrix far larger than the caches (decode reads every weight from
// memory) and one that fits in L2 per thread (the kernel's arithmetic
// alone), so a figure that drops between the two names memory, not
// instructions, as the limit. The int8 GEMM (prefill and batched decode;
// quant_gemm.cpp), where the level has it for the type, runs on the cached
// matrix at every row count asked for, so the two compare at the same rows
// and the row count from which the GEMM takes over can be read off. No
// model is needed: the weights are random blocks with fixed scales.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/bench_util.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/base/runtime.h"
#include "kernels/cpu/cpu_level.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_acts.h"

namespace prepack::cli {
namespace {

struct BenchKernelsOptions {
    std::string types = "q4_0,q8_0,q4_k,q5_k,q6_k";
    std::string rows = "1,16";   // activation rows per call: batch-1 and batched decode (512: a prompt)
    std::string levels;          // empty: every level this CPU runs
    int         threads = 0;
    int64_t     k = 4096;        // weights per row
    int64_t     memory_mib = 1024;
    int64_t     cache_kib = 512;  // per thread
    int32_t     reps = 5;
    bool        json = false;
};

std::optional<cpu::QuantType> ParseType(std::string_view name) {
    for (cpu::QuantType t : {cpu::QuantType::kQ4_0, cpu::QuantType::kQ4_1, cpu::QuantType::kQ5_0,
                             cpu::QuantType::kQ5_1, cpu::QuantType::kQ8_0, cpu::QuantType::kQ4_K,
                             cpu::QuantType::kQ5_K, cpu::QuantType::kQ6_K}) {
        std::string lower = cpu::QuantTypeName(t);
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (name == lower) return t;
    }
    return std::nullopt;
}

// Random codes, and every block's fp16 scales set to 1/64 (0x2400): random
// scale bits would give infinities, NaNs and denormals, whose arithmetic
// can be slower than a real model's.
std::vector<uint8_t> RandomBlocks(cpu::QuantType type, int64_t bytes, uint64_t seed) {
    std::vector<uint8_t> w(static_cast<size_t>(bytes));
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i + 8 <= w.size(); i += 8) {
        const uint64_t r = rng();
        std::memcpy(&w[i], &r, 8);
    }
    const int64_t block = cpu::QuantBlockBytes(type);
    const uint16_t scale = 0x2400;
    for (int64_t b = 0; b + block <= bytes; b += block) {
        uint8_t* p = w.data() + b;
        switch (type) {
            case cpu::QuantType::kQ4_0:
            case cpu::QuantType::kQ5_0:
            case cpu::QuantType::kQ8_0: std::memcpy(p, &scale, 2); break;
            case cpu::QuantType::kQ4_1:
            case cpu::QuantType::kQ5_1:   // d, then m
            case cpu::QuantType::kQ4_K:
            case cpu::QuantType::kQ5_K:
                std::memcpy(p, &scale, 2);
                std::memcpy(p + 2, &scale, 2);
                break;
            case cpu::QuantType::kQ6_K: std::memcpy(p + 208, &scale, 2); break;
        }
    }
    return w;
}

struct Table {
    cpu::CpuLevel           level;
    const cpu::KernelTable* kernels;
};

// The kernel tables this CPU can run and this build has (CMake's
// PREPACK_CPU_LEVELS), lowest level first.
std::vector<Table> RunnableTables() {
    std::vector<Table> out;
    for (cpu::CpuLevel l : {cpu::CpuLevel::kBaseline, cpu::CpuLevel::kAvx2, cpu::CpuLevel::kAvx512}) {
        if (l <= cpu::DetectedCpuLevel() && cpu::CpuLevelBuilt(l)) out.push_back({l, &cpu::KernelsFor(l)});
    }
    return out;
}

constexpr int32_t kMaxRows = 4096;

// What the flags ask for, checked: the error names the flag and the item.
struct Plan {
    std::vector<cpu::QuantType> types;
    std::vector<int32_t>        rows;
    std::vector<Table>          tables;
};

absl::StatusOr<Plan> ParsePlan(const BenchKernelsOptions& o) {
    Plan plan;
    for (absl::string_view name : absl::StrSplit(o.types, ',')) {
        const auto t = ParseType(std::string_view(name.data(), name.size()));
        if (!t) {
            return absl::InvalidArgumentError(
                absl::StrCat("--types: unknown block type '", name,
                             "' (q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k)"));
        }
        plan.types.push_back(*t);
    }
    PP_ASSIGN_OR_RETURN(plan.rows, ParseIntList("--rows", o.rows, 1));
    for (int32_t m : plan.rows) {
        if (m > kMaxRows) return absl::InvalidArgumentError(absl::StrCat("--rows: ", m, " is above ", kMaxRows));
    }
    if (o.k % 256 != 0) {
        return absl::InvalidArgumentError(absl::StrCat("--k: ", o.k, " is not a multiple of 256 (the K-quants' block)"));
    }
    plan.tables = RunnableTables();
    if (o.levels.empty()) return plan;
    std::vector<Table> chosen;
    for (absl::string_view name : absl::StrSplit(o.levels, ',')) {
        const auto level = cpu::ParseCpuLevel(std::string_view(name.data(), name.size()));
        const auto it = std::find_if(plan.tables.begin(), plan.tables.end(), [&](const Table& t) {
            return level && t.level == std::min(*level, cpu::CpuLevel::kAvx512);
        });
        if (it == plan.tables.end()) {
            std::string here;   // the build may lack some of the CPU's levels
            for (const Table& t : plan.tables) absl::StrAppend(&here, here.empty() ? "" : ", ", cpu::CpuLevelName(t.level));
            return absl::InvalidArgumentError(absl::StrCat("--levels: '", name, "' is not a level this CPU runs (",
                                                           cpu::CpuLevelNames(), "; this CPU: up to ",
                                                           cpu::CpuLevelName(cpu::DetectedCpuLevel()),
                                                           "; built and runnable here: ", here, ")"));
        }
        chosen.push_back(*it);
    }
    plan.tables = chosen;
    return plan;
}

int Run(const BenchKernelsOptions& o) {
    auto plan = ParsePlan(o);
    if (!plan.ok()) return Fail(plan.status());
    SetNumThreads(o.threads);
    const int threads = NumThreads();
    // Where the kernels pick a variant by the active level (Q8_0's VNNI), they follow PREPACK_CPU.
    const cpu::CpuLevel active = cpu::ActiveCpuLevel();

    const int32_t max_rows = *std::max_element(plan->rows.begin(), plan->rows.end());
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(max_rows * o.k));
    for (float& v : x) v = normal(rng);

    nlohmann::json results = nlohmann::json::array();
    if (!o.json) {
        std::printf("quantized linear kernels, %d threads, rows of %lld weights; GB/s of weights read per call "
                    "(median of %d)\n  CPU kernels %s\n", threads, static_cast<long long>(o.k), o.reps,
                    cpu::KernelChoiceSummary().c_str());
        std::printf("  %-5s %-11s %4s %-7s %12s %12s %14s\n", "type", "level", "rows", "kernel", "from memory",
                    "from cache", "MACs in cache");
    }
    for (cpu::QuantType type : plan->types) {
        const int64_t row_bytes = cpu::QuantRowBytes(type, o.k);
        const int64_t memory_rows = std::max<int64_t>(1, (o.memory_mib << 20) / row_bytes);
        const int64_t cache_rows = std::max<int64_t>(1, (o.cache_kib << 10) * threads / row_bytes);
        std::fprintf(stderr, "bench kernels: %s, %lld MiB of weights...\n", cpu::QuantTypeName(type),
                     static_cast<long long>(memory_rows * row_bytes >> 20));
        const std::vector<uint8_t> big = RandomBlocks(type, memory_rows * row_bytes, 1);
        const std::vector<uint8_t> small = RandomBlocks(type, cache_rows * row_bytes, 2);
        std::vector<uint8_t> acts(static_cast<size_t>(max_rows * cpu::ActRowBytes(type, o.k)));
        cpu::QuantizeActs(type, x.data(), max_rows, o.k, acts.data());
        std::vector<float> y(static_cast<size_t>(std::max<int64_t>(int64_t{cpu::kSmallLinearRows} * memory_rows,
                                                                   int64_t{max_rows} * cache_rows)));
        for (const Table& t : plan->tables) {
            const std::string level = cpu::CpuLevelName(t.level == cpu::CpuLevel::kAvx512 && active > t.level
                                                           ? active : t.level);
            for (int32_t m : plan->rows) {
                // Seconds per call of `kernel` on `w`, the median of `reps` timings of `calls` calls.
                const auto seconds = [&](bool gemm, const std::vector<uint8_t>& w, int64_t n, int calls, int reps) {
                    const cpu::QuantSlice slice{type, w.data(), n};
                    return Median(TimeRuns(
                               [&] {
                                   for (int c = 0; c < calls; ++c) {
                                       if (gemm) {
                                           t.kernels->quant_gemm(acts.data(), slice, y.data(), n, m, o.k, false);
                                       } else {
                                           t.kernels->quant_linear(acts.data(), slice, y.data(), n, m, o.k, false);
                                       }
                                   }
                               },
                               1, reps)) / calls;
                };
                const auto report = [&](const char* kernel, double memory, double cache) {
                    const double cache_s = static_cast<double>(cache_rows * row_bytes) / cache / 1e9;
                    const double gmacs = static_cast<double>(m) * cache_rows * o.k / cache_s / 1e9;
                    nlohmann::json r = {{"type", cpu::QuantTypeName(type)}, {"level", level}, {"rows", m},
                                        {"kernel", kernel}, {"cache_gbps", cache}, {"cache_gmacs", gmacs},
                                        {"cache_bytes", cache_rows * row_bytes}};
                    if (memory > 0) {
                        r["memory_gbps"] = memory;
                        r["memory_bytes"] = memory_rows * row_bytes;
                    }
                    results.push_back(r);
                    if (!o.json) {
                        const std::string mem = memory > 0 ? absl::StrFormat("%7.1f GB/s", memory) : "          -";
                        std::printf("  %-5s %-11s %4d %-7s %s %7.1f GB/s %7.1f GMAC/s\n", cpu::QuantTypeName(type),
                                    level.c_str(), m, kernel, mem.c_str(), cache, gmacs);
                    }
                };
                // Many calls per timing where one pass over the cached matrix takes microseconds.
                const int cache_calls = std::max(1, 64 / m);
                if (m <= cpu::kSmallLinearRows) {
                    const double memory =
                        static_cast<double>(memory_rows * row_bytes) / seconds(false, big, memory_rows, 1, o.reps) / 1e9;
                    const double cache = static_cast<double>(cache_rows * row_bytes) /
                                         seconds(false, small, cache_rows, cache_calls, o.reps) / 1e9;
                    report("few-row", memory, cache);
                }
                if (t.kernels->quant_gemm_min_rows(type, o.k) > 0) {
                    const double cache = static_cast<double>(cache_rows * row_bytes) /
                                         seconds(true, small, cache_rows, cache_calls, o.reps) / 1e9;
                    report("gemm", 0.0, cache);
                }
            }
        }
    }
    if (o.json) {
        nlohmann::json j = {{"threads", threads}, {"k", o.k}, {"reps", o.reps},
                            {"cpu_kernels", cpu::KernelChoiceSummary()}, {"results", results}};
        std::printf("%s\n", j.dump().c_str());
    }
    return 0;
}

}  // namespace

void AddBenchKernels(CLI::App& bench, int* exit_code) {
    auto* o = new BenchKernelsOptions();
    CLI::App* cmd = bench.add_subcommand("kernels", "Quantized linear kernels per block type and CPU level (GB/s, GMAC/s)");
    cmd->add_option("--types", o->types, "comma-separated block types: q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k");
    cmd->add_option("--rows", o->rows,
                    "comma-separated activation rows per call (1 = batch-1 decode; above 16 only the int8 GEMM)");
    cmd->add_option("--levels", o->levels,
                    "comma-separated CPU levels (baseline, avx2, avx512; default: every level this CPU runs)");
    cmd->add_option("--threads", o->threads, "CPU threads (0 = all online CPUs)")->check(CLI::Range(0, 1024));
    cmd->add_option("--k", o->k, "weights per row (a multiple of 256)")->check(CLI::Range(256, 1 << 20));
    cmd->add_option("--memory-mib", o->memory_mib, "size of the matrix read from memory (larger than the caches)")
        ->check(CLI::Range(1, 1 << 16));
    cmd->add_option("--cache-kib", o->cache_kib, "size per thread of the matrix read from cache")
        ->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--reps", o->reps, "timed runs (the median is reported)")->check(CLI::Range(1, 100));
    cmd->add_flag("--json", o->json, "machine-readable output");
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
