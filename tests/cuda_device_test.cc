// CUDA backend smoke test: skips cleanly where no GPU is usable.
#include <gtest/gtest.h>

#include "kernels/cuda/device.h"

TEST(CudaDevice, CountIsSaneOrSkips) {
    const int n = prepack::cuda::DeviceCount();
    if (n == 0) GTEST_SKIP() << "no usable CUDA device (no GPU or no driver); skipping";
    EXPECT_GT(n, 0);
    EXPECT_LT(n, 1024);
}
