#include "kernels/cuda/gemm.h"

#include <cublas_v2.h>

#include "absl/strings/str_cat.h"

namespace prepack::cuda {

absl::StatusOr<std::unique_ptr<Blas>> Blas::Create() {
    cublasHandle_t h = nullptr;
    if (const cublasStatus_t s = cublasCreate(&h); s != CUBLAS_STATUS_SUCCESS) {
        return absl::UnavailableError(absl::StrCat("cuBLAS could not start: ", cublasGetStatusString(s)));
    }
    std::unique_ptr<Blas> b(new Blas());
    b->handle_ = h;
    return b;
}

Blas::~Blas() {
    if (handle_ != nullptr) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

absl::Status Blas::Linear(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k, bool accumulate,
                          cpu::DType dtype, cpu::DType y_dtype) {
    if (m == 0 || n == 0) return absl::OkStatus();
    // cuBLAS is column-major: row-major y[m, n] is column-major y^T [n, m],
    // and y^T = w . x^T where row-major w[n, k] read column-major is w^T
    // (hence OP_T) and row-major x[m, k] is x^T [k, m] (OP_N).
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const cudaDataType_t t = dtype == cpu::DType::kBf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cudaDataType_t ty = y_dtype == cpu::DType::kBf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasStatus_t s = cublasGemmEx(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N,
                                          static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, w, t,
                                          static_cast<int>(k), x, t, static_cast<int>(k), &beta, y, ty,
                                          static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
        return absl::InternalError(
            absl::StrCat("cublasGemmEx ", m, "x", n, "x", k, " (", cpu::DTypeName(dtype), " -> ",
                         cpu::DTypeName(y_dtype), "): ", cublasGetStatusString(s)));
    }
    return absl::OkStatus();
}

}  // namespace prepack::cuda
