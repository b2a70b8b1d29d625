#include "cli/bench_util.h"

#include <algorithm>
#include <fstream>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "core/base/aligned_buffer.h"
#include "core/base/runtime.h"
#include "kernels/cpu/bf16.h"
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

absl::StatusOr<std::vector<int32_t>> ParseIntList(const char* flag, const std::string& text, int32_t min) {
    std::vector<int32_t> out;
    for (const std::string& item : std::vector<std::string>(absl::StrSplit(text, ','))) {
        int32_t n = 0;
        if (!absl::SimpleAtoi(item, &n) || n < min) {
            return absl::InvalidArgumentError(absl::StrCat(flag, ": '", item, "' is not a number >= ", min));
        }
        out.push_back(n);
    }
    return out;
}

namespace {

// GFLOP/s of the best of `reps` runs of an n x n x n product (after one warm-up).
double BestGflops(int n, int reps, const std::function<void()>& product) {
    std::vector<double> t = TimeRuns(product, 1, reps);
    const double best = *std::min_element(t.begin(), t.end());
    return 2.0 * n * n * static_cast<double>(n) / best / 1e9;
}

}  // namespace

double MeasureGemmPeakGflops(int n, int reps) {
    const size_t nn = static_cast<size_t>(n) * n;
    AlignedFloats a(nn), b(nn), c(nn);
    for (size_t i = 0; i < nn; ++i) {
        a[i] = static_cast<float>(i % 7) * 0.1f;
        b[i] = static_cast<float>(i % 5) * 0.1f;
    }
    return BestGflops(n, reps, [&] { cpu::MatMul(a.data(), b.data(), c.data(), n, n, n); });
}

double MeasureBf16GemmPeakGflops(int n, int reps) {
    const size_t nn = static_cast<size_t>(n) * n;
    AlignedFloats x(nn), y(nn);
    AlignedArray<uint16_t> w(nn);
    for (size_t i = 0; i < nn; ++i) {
        x[i] = static_cast<float>(i % 7) * 0.1f;
        w[i] = cpu::F32ToBf16(static_cast<float>(i % 5) * 0.1f);
    }
    const cpu::Matrix m{nullptr, w.data()};
    return BestGflops(n, reps, [&] { cpu::Linear(x.data(), m, y.data(), n, n, n, false); });
}

double MeasureReadBandwidthGbps(size_t bytes, int reps) {
    const size_t n = bytes / sizeof(float);
    AlignedFloats buf(n);
    // Touch every page in parallel so the pages sit near the threads that read them.
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(i & 15);
    volatile float sink = 0.0f;
    const float* data = buf.data();
    std::vector<double> t = TimeRuns(
        [&] {
            float total = 0.0f;
#pragma omp parallel reduction(+ : total)
            {
                // Sixteen independent partial sums: the adds vectorise and
                // never wait on one another, so memory is the only limit.
                float acc[16] = {};
#pragma omp for schedule(static)
                for (size_t i = 0; i < n / 16; ++i) {
                    for (int u = 0; u < 16; ++u) acc[u] += data[i * 16 + u];
                }
                for (float a : acc) total += a;
            }
            sink = sink + total;
        },
        1, reps);
    return static_cast<double>(n * sizeof(float)) / *std::min_element(t.begin(), t.end()) / 1e9;
}

PrepackProbe MeasurePrepackedWeights(int64_t m, int64_t n, int64_t k, int reps) {
    using dnnl::memory;
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    AlignedFloats x(m * k), w(n * k), y(m * n);
    for (int64_t i = 0; i < m * k; ++i) x[i] = static_cast<float>(i % 7) * 0.1f;
    for (int64_t i = 0; i < n * k; ++i) w[i] = static_cast<float>(i % 5) * 0.1f;
    // The engine's weights are [n, k] row-major, i.e. a k x n matrix with strides (1, k).
    const memory::desc src({m, k}, memory::data_type::f32, memory::dims{k, 1});
    const memory::desc plain({k, n}, memory::data_type::f32, memory::dims{1, k});
    const memory::desc any({k, n}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc dst({m, n}, memory::data_type::f32, memory::dims{n, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any, dst), engine);
    memory wplain(plain, engine, w.data()), wpacked(pd.weights_desc(), engine);
    dnnl::reorder(wplain, wpacked).execute(stream, wplain, wpacked);   // once, as at load
    stream.wait();
    const dnnl::matmul packed(pd);
    memory ms(src, engine, x.data()), md(dst, engine, y.data());

    PrepackProbe p;
    // A layout other than ours but unblocked (oneDNN often asks for k x n
    // row-major, the transpose of ours) is only a transpose: sgemm reads
    // ours as fast. Blocked means inner blocks (AVX-512 brgemm panels).
    p.blocked = pd.weights_desc().data.format_desc.blocking.inner_nblks > 0;
    const double flops = 2.0 * m * n * k;
    auto best = [&](const std::function<void()>& fn) {
        std::vector<double> t = TimeRuns(fn, 1, reps);
        return flops / *std::min_element(t.begin(), t.end()) / 1e9;
    };
    p.engine_gflops = best([&] { cpu::Linear(x.data(), cpu::Matrix{w.data()}, y.data(), m, n, k, false); });
    p.packed_gflops = best([&] {
        packed.execute(stream, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, wpacked}, {DNNL_ARG_DST, md}});
        stream.wait();
    });
    return p;
}

uint64_t PeakRssBytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;   // "VmHWM:  123 kB"
    }
    return 0;
}

void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace prepack::cli
