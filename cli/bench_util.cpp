#include "cli/bench_util.h"

#include <algorithm>

#include "core/aligned_buffer.h"
#include "core/runtime.h"
#include "kernels/cpu/gemm.h"

namespace prepack::cli {

std::vector<double> TimeRuns(const std::function<void()>& fn, int warmup, int reps) {
    for (int i = 0; i < warmup; ++i) fn();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const double t0 = NowSeconds();
        fn();
        t.push_back(NowSeconds() - t0);
    }
    return t;
}

double Median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double MeasureGemmPeakGflops(int n, int reps) {
    const size_t nn = static_cast<size_t>(n) * n;
    AlignedFloats a(nn), b(nn), c(nn);
    for (size_t i = 0; i < nn; ++i) {
        a[i] = static_cast<float>(i % 7) * 0.1f;
        b[i] = static_cast<float>(i % 5) * 0.1f;
    }
    std::vector<double> t = TimeRuns([&] { cpu::MatMul(a.data(), b.data(), c.data(), n, n, n); }, 1, reps);
    const double best = *std::min_element(t.begin(), t.end());
    return 2.0 * n * n * static_cast<double>(n) / best / 1e9;
}

}  // namespace prepack::cli
