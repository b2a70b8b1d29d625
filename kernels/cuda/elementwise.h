// Row-wise kernels of the llama block on the GPU, the same operations as
// kernels/cpu/elementwise.h. Every pointer is a device pointer; `act` is the
// element type of the activation buffers (f32, or bf16 with f32 arithmetic
// inside each kernel). Launched on the default stream, asynchronously:
// Synchronize() (device_buffer.h) reports launch and execution errors.
#pragma once

#include <cstdint>

#include "kernels/cpu/matrix.h"

namespace prepack::cuda {

using cpu::DType;

// out[r] = weight * x[r] / rms(x[r]); x and out may be the same buffer.
void RmsNorm(const void* x, const float* weight, void* out, int64_t rows, int64_t dim, float eps, DType act);

// out[r] = table[ids[r]], rows of width `dim`; ids must be in range (the
// engine checks them before a step).
void Gather(const void* table, DType table_dtype, const int32_t* ids, void* out, int64_t rows, int64_t dim,
            DType act);

// Rotary embedding of the first rope_dim dims of each of `n_heads` heads
// starting at column `col` of each row, in place, at positions[r]: pairs
// (2i, 2i+1), or with `neox` (i, i + rope_dim/2); inv_freq has rope_dim / 2
// entries. The rotated dims are then multiplied by `rotated_scale`
// (LongRoPE's attention factor; 1 leaves them as rotated).
void Rope(void* x, DType act, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim, int rope_dim,
          const int32_t* positions, const float* inv_freq, bool neox, float rotated_scale = 1.0f);

// In place: each of the `n_heads` heads of `head_dim` at column `col` of
// each row becomes weight * h / rms(h) (Qwen3's Q/K norm).
void RmsNormHeads(void* x, DType act, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                  const float* weight, float eps);

// x[r, i] += bias[i] for rows of width `dim`.
void AddBias(void* x, DType act, const float* bias, int64_t rows, int64_t dim);

// out[r, i] = silu(gu[r, i]) * gu[r, hidden + i].
void SwiGlu(const void* gu, void* out, int64_t rows, int64_t hidden, DType act);
// out[r, i] = gelu(gu[r, i]) * gu[r, hidden + i], GELU in its tanh form (Gemma's GeGLU).
void GeGlu(const void* gu, void* out, int64_t rows, int64_t hidden, DType act);

// x[i] *= s for n values (Gemma's embedding scale, Granite's logit scale).
void Scale(void* x, DType act, int64_t n, float s);
// x[i] = cap * tanh(x[i] / cap) for n values (Gemma 2's final logit soft-cap).
void SoftCap(void* x, DType act, int64_t n, float cap);
// x[i] += s * y[i] for n values: a block's output added to the residual
// stream after its post-norm, times Granite's residual scale.
void AddScaled(void* x, const void* y, DType act, int64_t n, float s);

// ids[r] = the first index of the largest of logits[r, 0 .. vocab) (greedy sampling on the device).
void ArgmaxRows(const float* logits, int64_t rows, int64_t vocab, int32_t* ids);

}  // namespace prepack::cuda
