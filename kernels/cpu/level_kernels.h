// The per-level kernel functions, declared for the level being compiled
// (isa_region.h). Include it last in a per-level source: the functions of one
// level call each other directly, not through the dispatch table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/matrix.h"
#include "kernels/cpu/isa_region.h"

PREPACK_ISA_BEGIN

// elementwise.cpp (the meaning of each: kernels/cpu/elementwise.h)
void RmsNorm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps);
void Gather(const Matrix& table, const int32_t* ids, float* out, int64_t rows, int64_t dim);
void Rope(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim, int rope_dim,
          const int32_t* positions, const float* inv_freq, bool neox);
void RmsNormHeads(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                  const float* weight, float eps);
void AddBias(float* x, const float* bias, int64_t rows, int64_t dim);
void SwiGlu(const float* gu, float* out, int64_t rows, int64_t hidden);
void GeGlu(const float* gu, float* out, int64_t rows, int64_t hidden);
void SoftCap(float* x, int64_t n, float cap);
void Scale(float* x, int64_t n, float s);
void AddTo(float* x, const float* y, int64_t n);

// small_linear.cpp: Y[m, n] = X[m, k] W[n, k]^T (+ Y) for few rows.
void SmallLinearF32(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate);
void SmallLinearBf16(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate);

// quant_linear.cpp: Y[m, rows of w] (+)= X W^T for few rows, on quantized
// weights; `acts` is X quantized for w's type (quant_acts.h), `ldy` the row
// stride of Y (a slice of a fused matrix writes its own columns).
void QuantLinear(const uint8_t* acts, const QuantSlice& w, float* y, int64_t ldy, int64_t m, int64_t k,
                 bool accumulate);

// quant_gemm.cpp: the same for many rows (prefill, batched decode) as an
// int8 GEMM, where QuantGemmMinRows is not 0 (else false, nothing written).
int64_t QuantGemmMinRows(QuantType type, int64_t k);
bool QuantGemm(const uint8_t* acts, const QuantSlice& w, float* y, int64_t ldy, int64_t m, int64_t k,
               bool accumulate);

// quant_act_rows.cpp: m rows of activations quantized for weights of `type` (quant_acts.h).
void QuantizeActRows(QuantType type, const float* x, int64_t m, int64_t k, uint8_t* out);

// quant_decode.cpp: `n` weights of a quantized row decoded to f32.
void DecodeQuantRow(QuantType type, const uint8_t* src, float* dst, int64_t n);

// attention.cpp (kernels/cpu/attention.h)
void PagedAttention(const float* q, float* out, const AttentionShape& shape, const AttentionSpan* spans,
                    int32_t n_spans, const PagedKv& kv, const std::vector<SharedPrefixGroup>& shared);
void LastQueryScores(const float* q, const AttentionShape& shape, const AttentionSpan& span, const PagedKv& kv,
                     const QueryScoring& scoring, float* scores);

// bf16_rows.cpp (kernels/cpu/bf16.h)
void F32ToBf16Row(const float* src, uint16_t* dst, size_t n);
void Bf16ToF32Row(const uint16_t* src, float* dst, size_t n);

PREPACK_ISA_END
