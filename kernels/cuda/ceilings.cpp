#include "kernels/cuda/ceilings.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gemm.h"

namespace prepack::cuda {
namespace {

// Seconds of the fastest of `reps` runs of `fn` (after one warm-up), timed
// with CUDA events on the default stream.
absl::StatusOr<double> BestSeconds(const std::function<absl::Status()>& fn, int reps) {
    if (absl::Status s = fn(); !s.ok()) return s;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    float best_ms = 1e30f;
    absl::Status status;
    for (int i = 0; i < reps && status.ok(); ++i) {
        cudaEventRecord(start, 0);
        status = fn();
        cudaEventRecord(stop, 0);
        cudaEventSynchronize(stop);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, start, stop);
        best_ms = std::min(best_ms, ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (status.ok()) status = Synchronize("timing");
    if (!status.ok()) return status;
    return best_ms / 1e3;
}

}  // namespace

absl::StatusOr<double> GemmPeakGflops(cpu::DType dtype, int n, int reps) {
    absl::StatusOr<std::unique_ptr<Blas>> blas = Blas::Create();
    if (!blas.ok()) return blas.status();
    const size_t bytes = static_cast<size_t>(n) * n * (dtype == cpu::DType::kBf16 ? 2 : 4);
    absl::StatusOr<DeviceBuffer> a = DeviceBuffer::Allocate(bytes), b = DeviceBuffer::Allocate(bytes),
                                 c = DeviceBuffer::Allocate(bytes);
    for (const auto* buf : {&a, &b, &c}) {
        if (!buf->ok()) return buf->status();
    }
    // Zeros: tensor-core throughput does not depend on the values, and zeros
    // are valid in every dtype.
    cudaMemset(a->data(), 0, bytes);
    cudaMemset(b->data(), 0, bytes);
    const absl::StatusOr<double> s = BestSeconds(
        [&] { return (*blas)->Linear(a->data(), b->data(), c->data(), n, n, n, false, dtype); }, reps);
    if (!s.ok()) return s.status();
    return 2.0 * n * n * static_cast<double>(n) / *s / 1e9;
}

absl::StatusOr<double> CopyBandwidthGbps(size_t bytes, int reps) {
    absl::StatusOr<DeviceBuffer> src = DeviceBuffer::Allocate(bytes), dst = DeviceBuffer::Allocate(bytes);
    if (!src.ok()) return src.status();
    if (!dst.ok()) return dst.status();
    cudaMemset(src->data(), 0, bytes);
    const absl::StatusOr<double> s = BestSeconds(
        [&] {
            CopyOnDevice(dst->data(), src->data(), bytes);
            return absl::OkStatus();
        },
        reps);
    if (!s.ok()) return s.status();
    return 2.0 * static_cast<double>(bytes) / *s / 1e9;
}

}  // namespace prepack::cuda
