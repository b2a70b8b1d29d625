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

// Rotary embedding of the first rope_dim dims of each head, in place: the
// pairs (2i, 2i+1), or with `neox` the pairs (i, i + rope_dim/2). `x` holds
// `rows` rows of `row_stride` floats, each with `n_heads` heads of
// `head_dim` starting at `col`; positions[r] is row r's position. inv_freq
// has rope_dim/2 entries: theta^(-2i/rope_dim), with any scaling folded in.
void Rope(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
          int rope_dim, const int32_t* positions, const float* inv_freq, bool neox = false);

// In place, per head: each of the `n_heads` heads of `head_dim` floats at
// `col` of each row (rows of `row_stride`) becomes weight * h / rms(h)
// (Qwen3's Q/K norm).
void RmsNormHeads(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                  const float* weight, float eps);

// x[r, i] += bias[i] for rows of width `dim`.
void AddBias(float* x, const float* bias, int64_t rows, int64_t dim);

// out[r, i] = silu(gu[r, i]) * gu[r, hidden + i]: gu rows are [gate | up].
void SwiGlu(const float* gu, float* out, int64_t rows, int64_t hidden);
// out[r, i] = gelu(gu[r, i]) * gu[r, hidden + i], GELU in its tanh form
// (Gemma's GeGLU; llama.cpp's LLM_FFN_GELU).
void GeGlu(const float* gu, float* out, int64_t rows, int64_t hidden);
// x[i] = cap * tanh(x[i] / cap) for n values (Gemma 2's final logit soft-cap).
void SoftCap(float* x, int64_t n, float cap);
// x[i] *= s for n values (Gemma's embedding scale).
void Scale(float* x, int64_t n, float s);
// x[i] += y[i] for n values (a residual added after its post-norm).
void AddTo(float* x, const float* y, int64_t n);

}  // namespace prepack::cpu
