// A weight matrix as the kernels see it: f32, bf16 (storage halved; the
// arithmetic stays f32 unless the CPU has native bf16 GEMM), or quantized
// blocks as a GGUF file holds them (quant_blocks.h).
#pragma once

#include <cstdint>

#include "kernels/cpu/quant_blocks.h"

namespace prepack::cpu {

enum class DType : uint8_t { kF32, kBf16 };

inline const char* DTypeName(DType t) { return t == DType::kBf16 ? "bf16" : "f32"; }

// Consecutive rows of a quantized matrix in one block type. A fused matrix
// (Q|K|V, gate|up) may mix types: Q4_K_M files keep V in Q6_K and Q, K in
// Q4_K, so it is a list of slices, each pointing at its own tensor.
struct QuantSlice {
    QuantType      type = QuantType::kQ8_0;
    const uint8_t* data = nullptr;
    int64_t        rows = 0;
};

constexpr int kMaxQuantSlices = 3;

// [rows = out_features, cols = in_features], row-major as in GGUF: exactly
// one of f32, bf16 or the quantized slices is set.
struct Matrix {
    const float*    f32 = nullptr;
    const uint16_t* bf16 = nullptr;
    QuantSlice      quant[kMaxQuantSlices] = {};
    int             n_quant = 0;

    bool quantized() const { return n_quant > 0; }
    // The dense dtype (meaningless when quantized()).
    DType dtype() const { return bf16 != nullptr ? DType::kBf16 : DType::kF32; }
    // Where the two matrices' storage begins is the same (a tied output).
    bool SameStorage(const Matrix& o) const {
        return f32 == o.f32 && bf16 == o.bf16 && quant[0].data == o.quant[0].data;
    }
};

// Row `row` of a matrix of `k` columns, decoded to f32 whatever its storage
// (embedding lookups, the reference pass, uploads to the GPU).
void DecodeMatrixRow(const Matrix& w, int64_t row, int64_t k, float* out);

}  // namespace prepack::cpu
