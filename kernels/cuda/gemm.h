// Linear layers on the GPU through cuBLAS (host-side API, no CUDA headers).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/cpu/matrix.h"

namespace prepack::cuda {

class Blas {
public:
    // UNAVAILABLE without a usable GPU.
    static absl::StatusOr<std::unique_ptr<Blas>> Create();
    ~Blas();
    Blas(const Blas&) = delete;
    Blas& operator=(const Blas&) = delete;

    // y[m, n] = x[m, k] . w[n, k]^T (plus y when `accumulate`): the CPU's
    // cpu::Linear, row-major as GGUF stores weights. x, w and y are device
    // buffers of `dtype` (f32, or bf16: tensor cores, f32 accumulation, y
    // rounded to bf16 once).
    absl::Status Linear(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k, bool accumulate,
                        cpu::DType dtype) {
        return Linear(x, w, y, m, n, k, accumulate, dtype, dtype);
    }
    // The same with y of its own dtype (f32 logits from bf16 weights).
    absl::Status Linear(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k, bool accumulate,
                        cpu::DType dtype, cpu::DType y_dtype);

private:
    Blas() = default;
    void* handle_ = nullptr;   // cublasHandle_t
};

}  // namespace prepack::cuda
