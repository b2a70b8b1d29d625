// Per level (kernel_table.h): the row-wise kernels declared in
// kernels/cpu/elementwise.h.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/simd.h"

#include "kernels/cpu/vec8.h"            // per level, like what follows
#include "kernels/cpu/level_kernels.h"   // last: opens the per-level region

PREPACK_ISA_BEGIN

namespace {

// o = weight * x / rms(x) over `n` floats; o may be x.
inline void RmsNormVector(const float* x, const float* weight, float* o, int64_t n, float eps) {
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = weight[i] * (scale * x[i]);
}

// Below this many floats of work a row kernel runs on the calling thread:
// waking the team costs more (a futex wake and park per thread with
// passive waiting, ~150 regions a decode token otherwise).
constexpr int64_t kParallelMinFloats = int64_t{1} << 15;

}  // namespace

void RmsNorm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps) {
#pragma omp parallel for schedule(static) if (rows * dim >= kParallelMinFloats)
    for (int64_t r = 0; r < rows; ++r) RmsNormVector(x + r * dim, weight, out + r * dim, dim, eps);
}

void Gather(const Matrix& table, const int32_t* ids, float* out, int64_t rows, int64_t dim) {
#pragma omp parallel for schedule(static) if (rows * dim >= kParallelMinFloats)
    for (int64_t r = 0; r < rows; ++r) DecodeMatrixRow(table, ids[r], dim, out + r * dim);
}

void Rope(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
          int rope_dim, const int32_t* positions, const float* inv_freq, bool neox) {
    const int half = rope_dim / 2;
    // Where the two members of pair i are.
    const int stride = neox ? 1 : 2, partner = neox ? half : 1;
#pragma omp parallel if (rows * n_heads * rope_dim >= kParallelMinFloats)
    {
        // Each row's cos/sin are computed once and reused by all its heads.
        float cs[2048], sn[2048];
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            const float pos = static_cast<float>(positions[r]);
            for (int i = 0; i < half; ++i) {
                const float a = pos * inv_freq[i];
                cs[i] = std::cos(a);
                sn[i] = std::sin(a);
            }
            float* row = x + r * row_stride + col;
            for (int h = 0; h < n_heads; ++h) {
                float* p = row + static_cast<int64_t>(h) * head_dim;
                for (int i = 0; i < half; ++i) {
                    float* pa = p + i * stride;
                    const float a = pa[0], b = pa[partner];
                    pa[0] = a * cs[i] - b * sn[i];
                    pa[partner] = a * sn[i] + b * cs[i];
                }
            }
        }
    }
}

void RmsNormHeads(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                  const float* weight, float eps) {
#pragma omp parallel for schedule(static) if (rows * n_heads * head_dim >= kParallelMinFloats)
    for (int64_t r = 0; r < rows; ++r) {
        for (int h = 0; h < n_heads; ++h) {
            float* v = x + r * row_stride + col + static_cast<int64_t>(h) * head_dim;
            RmsNormVector(v, weight, v, head_dim, eps);
        }
    }
}

void AddBias(float* x, const float* bias, int64_t rows, int64_t dim) {
#pragma omp parallel for schedule(static) if (rows * dim >= kParallelMinFloats)
    for (int64_t r = 0; r < rows; ++r) {
        float* row = x + r * dim;
#pragma omp simd
        for (int64_t i = 0; i < dim; ++i) row[i] += bias[i];
    }
}

namespace {

// o = silu(g) * u over one row of `hidden`. silu(g) = g sigmoid(g), with
// sigmoid from t = e^-|g| <= 1 so no exponential can overflow: 1/(1+t) for
// g >= 0, t/(1+t) below. Eight at a time through ExpNonPositive8 (the
// scalar loop did not vectorise). A function of its own, outside the OpenMP
// body: Clang does not give the outlined parallel body the level's target,
// and refuses 8-float vectors there.
void SwiGluRow(const float* g, const float* u, float* o, int64_t hidden) {
    int64_t i = 0;
    for (; i + 8 <= hidden; i += 8) {
        const Vec8 gv = Load8(g + i);
        const auto positive = gv >= Splat8(0.0f);
        const Vec8 t = ExpNonPositive8(positive ? -gv : gv);
        const Vec8 sigmoid = (positive ? Splat8(1.0f) : t) / (1.0f + t);
        Store8(o + i, gv * sigmoid * Load8(u + i));
    }
    for (; i < hidden; ++i) {
        const float t = ExpNonPositive(-std::fabs(g[i]));
        const float sigmoid = (g[i] >= 0.0f ? 1.0f : t) / (1.0f + t);
        o[i] = g[i] * sigmoid * u[i];
    }
}

// o = gelu(g) * u, gelu(g) = g/2 (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
// Outside the OpenMP body for the same reason as SwiGluRow.
void GeGluRow(const float* g, const float* u, float* o, int64_t hidden) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
    int64_t i = 0;
    for (; i + 8 <= hidden; i += 8) {
        const Vec8 x = Load8(g + i);
        const Vec8 t = Tanh8(kSqrt2OverPi * x * (1.0f + kCubic * x * x));
        Store8(o + i, 0.5f * x * (1.0f + t) * Load8(u + i));
    }
    for (; i < hidden; ++i) {
        const float x = g[i];
        o[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x))) * u[i];
    }
}

// Rows of gu = [gate | up] through a gated unit's row function (SwiGluRow,
// GeGluRow), the rows in parallel where there are enough of them.
template <void (*Row)(const float* g, const float* u, float* o, int64_t hidden)>
void GatedRows(const float* gu, float* out, int64_t rows, int64_t hidden) {
#pragma omp parallel for schedule(static) if (rows * hidden >= kParallelMinFloats)
    for (int64_t r = 0; r < rows; ++r) {
        const float* g = gu + r * 2 * hidden;
        Row(g, g + hidden, out + r * hidden, hidden);
    }
}

// Pieces of a flat array handed to threads (a soft-cap's 262k logits a row).
constexpr int64_t kPiece = 1 << 14;

}  // namespace

void SwiGlu(const float* gu, float* out, int64_t rows, int64_t hidden) { GatedRows<SwiGluRow>(gu, out, rows, hidden); }

void GeGlu(const float* gu, float* out, int64_t rows, int64_t hidden) { GatedRows<GeGluRow>(gu, out, rows, hidden); }

void SoftCap(float* x, int64_t n, float cap) {
#pragma omp parallel for schedule(static) if (n >= kParallelMinFloats)
    for (int64_t i = 0; i < n; i += kPiece) SoftCapValues(x + i, std::min(kPiece, n - i), cap);
}

void Scale(float* x, int64_t n, float s) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMinFloats)
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void AddTo(float* x, const float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMinFloats)
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

PREPACK_ISA_END
