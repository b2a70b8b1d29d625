// CUDA device discovery. The CUDA backend proper (cuBLAS GEMMs, paged and
// packed attention kernels) builds on this file's target.
#include "kernels/cuda/device.h"

#include <cuda_runtime.h>

namespace prepack::cuda {

// Number of usable CUDA devices; 0 when the driver is missing or too old
// (cudaErrorInsufficientDriver, 35, on machines without a GPU).
int DeviceCount() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}

}  // namespace prepack::cuda
