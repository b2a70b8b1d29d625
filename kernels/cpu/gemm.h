// GEMM for the CPU backend, through oneDNN.
#pragma once

#include <cstdint>

namespace prepack::cpu {

// Y[M, N] = X[M, K] * W[N, K]^T (+ Y when accumulate): a linear layer applied
// to M rows, with W stored [out_features, in_features] row-major as in GGUF.
// accumulate = true folds a residual add into the GEMM.
void Linear(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate);

// C[M, N] = A[M, K] * B[K, N], all row-major (used to measure the GEMM peak).
void MatMul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k);

}  // namespace prepack::cpu
