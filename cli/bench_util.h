// Measuring helpers shared by the `prepack bench` subcommands: medians of
// repeated runs after a warm-up, and the machine ceilings the benchmark
// compares against, measured by the same binary in the same run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace prepack::cli {

// Runs `fn` `warmup` times untimed, then `reps` times; returns the seconds of each timed run.
std::vector<double> TimeRuns(const std::function<void()>& fn, int warmup, int reps);
double Median(std::vector<double> v);

// A flag's comma-separated integers, each at least `min`; the error names
// the flag and the item.
absl::StatusOr<std::vector<int32_t>> ParseIntList(const char* flag, const std::string& text, int32_t min);

// f32 GEMM GFLOP/s on large square matrices through the engine's GEMM
// library (best of several runs: the ceiling, not the typical value).
double MeasureGemmPeakGflops(int n = 2048, int reps = 5);

// The same for bf16 weights through the engine's bf16 linear layer (native
// bf16 GEMM where the CPU has it, f32 panels widened from bf16 elsewhere).
double MeasureBf16GemmPeakGflops(int n = 2048, int reps = 5);

// Memory read bandwidth in GB/s: all threads summing a buffer far larger
// than the caches (best of several passes).
double MeasureReadBandwidthGbps(size_t bytes = size_t{512} << 20, int reps = 5);

// Whether pre-packing f32 weights at load would pay: the engine's product
// (sgemm, which packs the weights on every call) against oneDNN's matmul
// with the weights reordered once into the layout that primitive asks for
// (format_tag::any), on an m x n x k product. `blocked` says whether that
// layout is a blocked one (if not, it is plain row- or column-major and
// there is nothing to pre-pack), best of `reps` each.
struct PrepackProbe {
    bool   blocked = false;
    double engine_gflops = 0.0, packed_gflops = 0.0;
};
PrepackProbe MeasurePrepackedWeights(int64_t m, int64_t n, int64_t k, int reps = 7);

// This process's peak resident memory (VmHWM) in bytes, 0 where unknown; and
// setting the peak back to what is resident now (Linux clear_refs 5), so that
// the buffers of the ceilings above, freed again, do not count as the model's.
uint64_t PeakRssBytes();
void ResetPeakRss();


}  // namespace prepack::cli
