// Measuring helpers shared by the `prepack bench` subcommands: medians of
// repeated runs after a warm-up, and the machine ceilings the benchmark
// compares against, measured by the same binary in the same run.
#pragma once

#include <functional>
#include <vector>

namespace prepack::cli {

// Runs `fn` `warmup` times untimed, then `reps` times; returns the seconds of each timed run.
std::vector<double> TimeRuns(const std::function<void()>& fn, int warmup, int reps);
double Median(std::vector<double> v);

// f32 GEMM GFLOP/s on large square matrices through the engine's GEMM
// library (best of several runs: the ceiling, not the typical value).
double MeasureGemmPeakGflops(int n = 2048, int reps = 5);

// The same for bf16 weights through the engine's bf16 linear layer (native
// bf16 GEMM where the CPU has it, f32 panels widened from bf16 elsewhere).
double MeasureBf16GemmPeakGflops(int n = 2048, int reps = 5);

// Memory read bandwidth in GB/s: all threads summing a buffer far larger
// than the caches (best of several passes).
double MeasureReadBandwidthGbps(size_t bytes = size_t{512} << 20, int reps = 5);


}  // namespace prepack::cli
