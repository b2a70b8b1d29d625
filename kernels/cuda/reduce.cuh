// Device helpers shared by the CUDA kernels: activations as f32 whatever
// they are stored as, and a block-wide sum.
#pragma once

#include <cuda_bf16.h>

namespace prepack::cuda {

// Element i of an f32 or bf16 buffer, as f32 (bf16 widens exactly).
__device__ __forceinline__ float LoadAct(const void* p, int64_t i, bool bf16) {
    return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]) : static_cast<const float*>(p)[i];
}

// Stores f32 `v` as element i, rounded to nearest even for bf16.
__device__ __forceinline__ void StoreAct(void* p, int64_t i, float v, bool bf16) {
    if (bf16) {
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
    } else {
        static_cast<float*>(p)[i] = v;
    }
}

__device__ __forceinline__ float WarpSum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float WarpMax(float v) {
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The sum of `v` over the block (blockDim.x a multiple of 32, at most
// 32 * 32); `scratch` holds one float per warp. Every thread gets it.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = WarpSum(v);
    __syncthreads();   // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float t = lane < warps ? scratch[lane] : 0.0f;
    return WarpSum(t);
}

__device__ __forceinline__ float BlockMax(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = WarpMax(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float t = lane < warps ? scratch[lane] : -3.402823466e38f;
    return WarpMax(t);
}

}  // namespace prepack::cuda
