// Per level (kernel_table.h): linear layers of few rows (decode, batched
// decode). Up to kSmallLinearRows rows a linear layer is memory-bound or
// close to it: every weight is read once and used by few rows. oneDNN's sgemm
// packs the transposed weight matrix on each call there, which costs as much
// as the product, so a register-blocked kernel streams the weight rows instead.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bf16.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/simd.h"

#include "kernels/cpu/vec8.h"   // after the others: per level, like what follows
#include "kernels/cpu/level_kernels.h"   // last: opens the per-level region

PREPACK_ISA_BEGIN

namespace {

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
// rows and of up to kSmallLinearRows x rows (4 + 16 rows x 256 floats = 20 KiB)
// stays in L1 while every x row pair reads it; whole rows (k up to 8192 in
// the 1b model) fall out to L2. 16-sequence decode of synthetic:1b, same
// run: 509 -> 454 ms per step.
constexpr int64_t kSliceK = 256;

// Every x row (m <= kSmallLinearRows) against one block of (up to) 4 weight rows, two
// x rows at a time, a slice of k at a time. `prefetch`: the rows lie in the
// weight matrix (not in a widened copy), so the rows after them can be fetched.
template <typename W>
void BlockRows(const float* x, const W* const rows[4], float* y, int64_t m, int64_t n, int64_t j, int64_t nj,
               int64_t k, bool accumulate, bool prefetch) {
    Vec8 acc[kSmallLinearRows][4] = {};
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

}  // namespace

void SmallLinearF32(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    SmallMLinear(x, w, y, m, n, k, accumulate);
}

void SmallLinearBf16(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
                     bool accumulate) {
    SmallMLinear(x, w, y, m, n, k, accumulate);
}

PREPACK_ISA_END
