// Row-wise kernels of the llama block, OpenMP-parallel over rows and written
// so the compiler vectorises the inner loops.
#pragma once

#include <cstdint>

#include "kernels/cpu/matrix.h"

namespace prepack::cpu {

// out[r] = weight * x[r] / rms(x[r]) for each of `rows` rows of width `dim`.
void RmsNorm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps);

// out[r] = table[ids[r]] (embedding gather, widened to f32), rows of width `dim`.
void Gather(const Matrix& table, const int32_t* ids, float* out, int64_t rows, int64_t dim);

// Rotary embedding on pairs (2i, 2i+1) of the first rope_dim dims of each
// head, in place. `x` holds `rows` rows of `row_stride` floats, each with
// `n_heads` heads of `head_dim` starting at `col`; positions[r] is row r's
// position. inv_freq has rope_dim/2 entries: theta^(-2i/rope_dim).
void Rope(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
          int rope_dim, const int32_t* positions, const float* inv_freq);

// out[r, i] = silu(gu[r, i]) * gu[r, hidden + i]: gu rows are [gate | up].
void SwiGlu(const float* gu, float* out, int64_t rows, int64_t hidden);

}  // namespace prepack::cpu
