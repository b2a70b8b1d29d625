// GEMM for the CPU backend: oneDNN for the large products, register-blocked
// kernels for the few-row products of decode.
#pragma once

#include <cstdint>

#include "kernels/cpu/matrix.h"

namespace prepack::cpu {

// Y[M, N] = X[M, K] * W[N, K]^T (+ Y when accumulate): a linear layer applied
// to M rows. accumulate = true folds a residual add into the GEMM. bf16
// weights are used with f32 accumulation: through oneDNN's bf16 matmul where
// the CPU has native bf16 (activations rounded to bf16 there), otherwise
// widened to f32 a panel at a time (exact, so only storage is bf16).
// Quantized weights: up to kSmallLinearRows rows as int8 dot products on the
// blocks (activations quantized per block, quant_acts.h); more rows decode a
// panel of weight rows at a time to bf16 for oneDNN's matmul where the CPU
// has native bf16 GEMM, else run Q4_0 and the K-quants as an int8 GEMM on
// repacked panels (quant_gemm.cpp) and decode Q8_0 to f32 for sgemm
// (QuantPrefillArithmetic says which).
void Linear(const float* x, const Matrix& w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate);

inline void Linear(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    Linear(x, Matrix{w, nullptr}, y, m, n, k, accumulate);
}

// C[M, N] = A[M, K] * B[K, N], all row-major (used to measure the GEMM peak).
void MatMul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k);

// Whether oneDNN has native bf16 GEMM kernels on this CPU (AVX-512 BF16 or
// AMX). Without them bf16 weights are widened to f32 for the arithmetic.
bool HasNativeBf16Gemm();

// Which bf16 path Linear takes for many-row products: "onednn" (native bf16
// matmul, the default where HasNativeBf16Gemm()) or "widen" (f32 panels +
// sgemm). If oneDNN cannot create the matmul, Linear widens from then on.
const char* Bf16GemmPath();
// Forces a path ("onednn" or "widen"; false for anything else): tests run the
// oneDNN path wherever oneDNN implements it.
bool SetBf16GemmPath(const char* path);

// Whether many-row products may use the int8 GEMM (default true); false
// decodes f32 panels as for Q8_0 (tests compare the levels' kernels under
// one arithmetic; the baseline level has no int8 GEMM).
void SetInt8PrefillGemm(bool enabled);

// The arithmetic of Linear's many-row products on rows of k weights of
// `type` at the active level and bf16 path: "int8", "bf16" or "f32".
const char* QuantPrefillArithmetic(QuantType type, int64_t k);

}  // namespace prepack::cpu
