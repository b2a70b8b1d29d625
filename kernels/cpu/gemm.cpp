#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/bf16.h"
#include "kernels/cpu/simd.h"

namespace prepack::cpu {

namespace {

// Up to this many rows a linear layer is memory-bound or close to it
// (decode, batched decode): every weight is read once and used by few rows.
// oneDNN's sgemm packs the transposed weight matrix on each call there,
// which costs as much as the product, so a register-blocked kernel streams
// the weight rows instead.
constexpr int64_t kSmallM = 16;

template <typename W>
inline Vec8 LoadWeights8(const W* p) {
    if constexpr (std::is_same_v<W, float>) {
        return Load8(p);
    } else {
        return LoadBf16x8(p);
    }
}

template <typename W>
inline float WeightAt(const W* p, int64_t i) {
    if constexpr (std::is_same_v<W, float>) {
        return p[i];
    } else {
        return Bf16ToF32(p[i]);
    }
}

// acc[MB][4] += x[MB][t0, t1) . (w0, w1, w2, w3)[t0, t1): four weight rows
// share each x load and MB x rows share each weight load (8 MB
// accumulators in registers). t0 and t1 are multiples of 8.
template <int MB, typename W>
void Dot4(const float* x, int64_t k, const W* const w[4], int64_t t0, int64_t t1, bool prefetch, Vec8 (*acc_io)[4]) {
    Vec8 acc[MB][4];
    for (int i = 0; i < MB; ++i) {
        for (int r = 0; r < 4; ++r) acc[i][r] = acc_io[i][r];
    }
    // Each weight row is short (a few KiB) and the next blocks' rows follow
    // in memory; the hardware prefetcher, retraining on every short stream,
    // left bf16 decode 30% slower: fetch the rows two blocks on (8 rows)
    // while this block is summed.
    const int64_t ahead = 8 * k;
    for (int64_t t = t0; t < t1; t += 8) {
        if (prefetch && t % (64 / sizeof(W)) == 0) {
            for (int r = 0; r < 4; ++r) __builtin_prefetch(w[r] + ahead + t);
        }
        const Vec8 a = LoadWeights8(w[0] + t), b = LoadWeights8(w[1] + t);
        const Vec8 c = LoadWeights8(w[2] + t), d = LoadWeights8(w[3] + t);
        for (int i = 0; i < MB; ++i) {
            const Vec8 xv = Load8(x + i * k + t);
            acc[i][0] += a * xv;
            acc[i][1] += b * xv;
            acc[i][2] += c * xv;
            acc[i][3] += d * xv;
        }
    }
    for (int i = 0; i < MB; ++i) {
        for (int r = 0; r < 4; ++r) acc_io[i][r] = acc[i][r];
    }
}

// Row i of y, columns j .. j + nj: the accumulators summed, plus the k % 8
// tail of the dot products.
template <typename W>
inline void Put(const Vec8 acc[4], const float* x, const W* const w[4], int64_t k8, int64_t k, float* yi, int64_t nj,
                bool accumulate) {
    for (int64_t u = 0; u < nj; ++u) {
        float s = Sum8(acc[u]);
        for (int64_t t = k8; t < k; ++t) s += WeightAt(w[u], t) * x[t];
        yi[u] = accumulate ? yi[u] + s : s;
    }
}

// Columns of k per pass over the x rows: a pass's slice of the 4 weight
// rows and of up to kSmallM x rows (4 + 16 rows x 256 floats = 20 KiB)
// stays in L1 while every x row pair reads it; whole rows (k up to 8192 in
// the 1b model) fall out to L2. 16-sequence decode of synthetic:1b, same
// run: 509 -> 454 ms per step.
constexpr int64_t kSliceK = 256;

// Every x row (m <= kSmallM) against one block of (up to) 4 weight rows, two
// x rows at a time, a slice of k at a time. `prefetch`: the rows lie in the
// weight matrix (not in a widened copy), so the rows after them can be fetched.
template <typename W>
void BlockRows(const float* x, const W* const rows[4], float* y, int64_t m, int64_t n, int64_t j, int64_t nj,
               int64_t k, bool accumulate, bool prefetch) {
    Vec8 acc[kSmallM][4] = {};
    const int64_t k8 = k / 8 * 8;
    for (int64_t t0 = 0; t0 < k8; t0 += kSliceK) {
        const int64_t t1 = std::min(t0 + kSliceK, k8);
        int64_t i = 0;
        for (; i + 2 <= m; i += 2) Dot4<2>(x + i * k, k, rows, t0, t1, prefetch && i == 0, acc + i);
        if (i < m) Dot4<1>(x + i * k, k, rows, t0, t1, prefetch && i == 0, acc + i);
    }
    for (int64_t i = 0; i < m; ++i) Put(acc[i], x + i * k, rows, k8, k, y + i * n + j, nj, accumulate);
}

template <typename W>
void SmallMLinear(const float* x, const W* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
#pragma omp parallel
    {
        // bf16 with more than one pair of x rows: widen the block once
        // instead of once per pair (the widening, not memory, bounded
        // batched decode there).
        static thread_local std::vector<float> widened;
        const bool widen = !std::is_same_v<W, float> && m > 2;
        if (widen) widened.resize(static_cast<size_t>(4 * k));
#pragma omp for schedule(static)
        for (int64_t j = 0; j < n; j += 4) {
            const int64_t nj = std::min<int64_t>(4, n - j);
            const W* rows[4];
            for (int64_t r = 0; r < 4; ++r) rows[r] = w + (j + std::min(r, nj - 1)) * k;
            if constexpr (!std::is_same_v<W, float>) {
                if (widen) {
                    const float* f[4];
                    for (int r = 0; r < 4; ++r) {
                        f[r] = widened.data() + r * k;
                        Bf16ToF32Row(rows[r], widened.data() + r * k, static_cast<size_t>(k));
                    }
                    BlockRows<float>(x, f, y, m, n, j, nj, k, accumulate, /*prefetch=*/false);
                    continue;
                }
            }
            BlockRows<W>(x, rows, y, m, n, j, nj, k, accumulate, /*prefetch=*/true);
        }
    }
}

// bf16 weights without native bf16 arithmetic: widen a panel of weight rows
// (about 1 MiB of f32, so it stays in L2 while sgemm reads it) and multiply
// it in f32. The widening is exact and costs one pass over the panel, small
// next to the 2*M flops per weight of a many-row product.
void WidenedLinear(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    const int64_t panel_rows = std::clamp<int64_t>((int64_t{1} << 18) / k / 16 * 16, 16, n);
    static thread_local std::vector<float> panel;
    panel.resize(static_cast<size_t>(panel_rows * k));
    float* dst = panel.data();
    for (int64_t n0 = 0; n0 < n; n0 += panel_rows) {
        const int64_t rows = std::min(panel_rows, n - n0);
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; ++r) Bf16ToF32Row(w + (n0 + r) * k, dst + r * k, static_cast<size_t>(k));
        dnnl_sgemm('N', 'T', m, rows, k, 1.0f, x, k, dst, k, accumulate ? 1.0f : 0.0f, y + n0, n);
    }
}

// Native bf16: activations rounded to bf16, oneDNN's matmul (AVX-512 BF16 /
// AMX kernels), f32 output, residual folded in with a sum post-op. oneDNN
// caches the primitives by shape. False when oneDNN has no implementation
// here (then the caller widens).
bool OneDnnBf16Linear(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
                      bool accumulate) {
    using dnnl::memory;
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    static thread_local std::vector<uint16_t> xb;
    xb.resize(static_cast<size_t>(m * k));
    F32ToBf16Row(x, xb.data(), xb.size());
    const memory::desc src({m, k}, memory::data_type::bf16, memory::dims{k, 1});
    const memory::desc wei({k, n}, memory::data_type::bf16, memory::dims{1, k});   // W^T of [n, k] row-major
    const memory::desc dst({m, n}, memory::data_type::f32, memory::dims{n, 1});
    dnnl::primitive_attr attr;
    if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
    }
    try {
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, engine);
        dnnl::stream stream(engine);
        dnnl::matmul(pd).execute(stream, {{DNNL_ARG_SRC, memory(src, engine, xb.data())},
                                          {DNNL_ARG_WEIGHTS, memory(wei, engine, const_cast<uint16_t*>(w))},
                                          {DNNL_ARG_DST, memory(dst, engine, y)}});
        stream.wait();
    } catch (const dnnl::error&) {
        return false;
    }
    return true;
}

enum class Bf16Path { kOneDnn, kWiden };

// Chosen once; falls back to widening for good if oneDNN cannot run it.
std::atomic<Bf16Path>& Bf16PathState() {
    static std::atomic<Bf16Path> path{HasNativeBf16Gemm() ? Bf16Path::kOneDnn : Bf16Path::kWiden};
    return path;
}

}  // namespace

// dnnl_sgemm is row-major, uses oneDNN's JIT kernels for the CPU and the
// shared OpenMP pool (docs/toolchain.md).
void Linear(const float* x, const Matrix& w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    if (w.bf16 == nullptr) {
        if (m <= kSmallM) {
            SmallMLinear(x, w.f32, y, m, n, k, accumulate);
        } else {
            dnnl_sgemm('N', 'T', m, n, k, 1.0f, x, k, w.f32, k, accumulate ? 1.0f : 0.0f, y, n);
        }
        return;
    }
    if (m <= kSmallM) {
        SmallMLinear(x, w.bf16, y, m, n, k, accumulate);   // memory-bound: half the bytes of f32
        return;
    }
    if (Bf16PathState().load() == Bf16Path::kOneDnn) {
        if (OneDnnBf16Linear(x, w.bf16, y, m, n, k, accumulate)) return;
        Bf16PathState().store(Bf16Path::kWiden);
    }
    WidenedLinear(x, w.bf16, y, m, n, k, accumulate);
}

void MatMul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

// ISA values are nested bit masks (avx2_vnni = 0x407 is numerically above
// avx512_core_bf16 = 0xe7 without containing it): test the bits.
bool HasNativeBf16Gemm() {
    const unsigned isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

const char* Bf16GemmPath() { return Bf16PathState().load() == Bf16Path::kOneDnn ? "onednn" : "widen"; }

bool SetBf16GemmPath(const char* path) {
    if (std::strcmp(path, "onednn") == 0) {
        Bf16PathState().store(Bf16Path::kOneDnn);
    } else if (std::strcmp(path, "widen") == 0) {
        Bf16PathState().store(Bf16Path::kWiden);
    } else {
        return false;
    }
    return true;
}

}  // namespace prepack::cpu
