// The GPU's ceilings, measured by the same binary that is benchmarked (as
// cli/bench_util.h does for the CPU): what prefill and decode are compared
// against. Host-side API.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "kernels/cpu/matrix.h"

namespace prepack::cuda {

// cuBLAS GEMM throughput on n x n x n products in `dtype` (f32 accumulation),
// best of `reps` after a warm-up, in GFLOP/s.
absl::StatusOr<double> GemmPeakGflops(cpu::DType dtype, int n = 8192, int reps = 5);

// Device memory bandwidth of a device-to-device copy of `bytes`, counting the
// bytes read and written (as NVIDIA's bandwidthTest does), best of `reps`, in GB/s.
absl::StatusOr<double> CopyBandwidthGbps(size_t bytes = size_t{1} << 30, int reps = 5);

}  // namespace prepack::cuda
