// A CPU emulator of the CUDA subset the kernels in kernels/cuda use, for
// testing their logic on machines without a GPU (CI has none). Kernels
// compile as plain C++ against these headers (see kernels/cuda/launch.cuh);
// each thread block runs on the calling thread with one fiber per CUDA
// thread, switching at __syncthreads() and warp shuffles, so barrier and
// shuffle semantics hold as long as every thread of a block reaches the
// same sequence of them (which CUDA requires too). Blocks run one at a time.
// "Device" memory is host memory; cuBLAS's GemmEx is a plain loop.
//
// What it does not show: races between threads that a barrier should have
// ordered (fibers interleave only at barriers), GPU floating-point details
// (__expf is expf), performance.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

// ---- language ----------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Static shared arrays are one per kernel function: blocks never overlap.
#define __shared__ static

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
extern thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace cuda_emu {
void SyncThreads();
// Lane `lane ^ mask_bits` of this warp's `v` (all 32 lanes take part).
float ShuffleXor(float v, int lane_mask);
void* DynamicShared();
void Run(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body);

template <typename Kernel>
auto Launch(dim3 grid, dim3 block, size_t shared_bytes, Kernel kernel) {
    return [=](auto... args) { Run(grid, block, shared_bytes, [&] { kernel(args...); }); };
}
}  // namespace cuda_emu

inline void __syncthreads() { cuda_emu::SyncThreads(); }
inline float __shfl_xor_sync(unsigned, float v, int lane_mask) { return cuda_emu::ShuffleXor(v, lane_mask); }
inline float __expf(float x) { return std::exp(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline void sincosf(float x, float* s, float* c) {
    *s = std::sin(x);
    *c = std::cos(x);
}
inline float fmaxf(float a, float b) { return std::fmax(a, b); }
inline float fabsf(float a) { return std::fabs(a); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// ---- bf16 ----------------------------------------------------------------
struct __nv_bfloat16 {
    uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 h) {
    const uint32_t u = uint32_t{h.bits} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40)};   // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);   // round to nearest even
    return {static_cast<uint16_t>(u >> 16)};
}

// ---- runtime -------------------------------------------------------------
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
};
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
using cudaStream_t = void*;
using cudaEvent_t = struct EmuEvent*;

cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
cudaError_t cudaGetLastError();
cudaError_t cudaDeviceSynchronize();
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);
template <typename F>
cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) {
    return cudaSuccess;
}

// ---- cuBLAS --------------------------------------------------------------
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
using cublasHandle_t = struct EmuBlas*;

cublasStatus_t cublasCreate(cublasHandle_t* h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
const char* cublasGetStatusString(cublasStatus_t s);
// Column-major C = alpha op(A) op(B) + beta C with f32 accumulation.
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType_t at, int lda, const void* b,
                            cudaDataType_t bt, int ldb, const void* beta, void* c, cudaDataType_t ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo);
