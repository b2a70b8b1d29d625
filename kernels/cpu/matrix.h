// A weight matrix as the kernels see it: f32, or bf16 (storage halved; the
// arithmetic stays f32 unless the CPU has native bf16 GEMM).
#pragma once

#include <cstdint>

namespace prepack::cpu {

enum class DType : uint8_t { kF32, kBf16 };

inline const char* DTypeName(DType t) { return t == DType::kBf16 ? "bf16" : "f32"; }

// [rows = out_features, cols = in_features], row-major as in GGUF: exactly
// one of the pointers is set.
struct Matrix {
    const float*    f32 = nullptr;
    const uint16_t* bf16 = nullptr;

    DType dtype() const { return bf16 != nullptr ? DType::kBf16 : DType::kF32; }
};

}  // namespace prepack::cpu
