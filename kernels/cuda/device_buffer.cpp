#include "kernels/cuda/device_buffer.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"

namespace prepack::cuda {
namespace {

absl::Status FromCuda(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return absl::OkStatus();
    const std::string msg = absl::StrCat(what, ": ", cudaGetErrorString(e));
    if (e == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return absl::UnavailableError(msg);
    return absl::InternalError(msg);
}

}  // namespace

DeviceBuffer::~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        if (data_ != nullptr) cudaFree(data_);
        data_ = std::exchange(o.data_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes) {
    DeviceBuffer b;
    if (bytes == 0) return b;
    const cudaError_t e = cudaMalloc(&b.data_, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();   // clear it: an allocation failure is not a kernel's
        b.data_ = nullptr;
        return FromCuda(e, absl::StrCat("cudaMalloc of ", bytes, " bytes").c_str());
    }
    b.bytes_ = bytes;
    return b;
}

absl::Status DeviceBuffer::CopyFromHost(const void* src, size_t bytes, size_t offset) {
    if (offset + bytes > bytes_) {
        return absl::OutOfRangeError(absl::StrCat("copy of ", bytes, " bytes at ", offset, " into a buffer of ", bytes_));
    }
    return FromCuda(cudaMemcpy(static_cast<char*>(data_) + offset, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

absl::Status DeviceBuffer::CopyToHost(void* dst, size_t bytes, size_t offset) const {
    if (offset + bytes > bytes_) {
        return absl::OutOfRangeError(absl::StrCat("copy of ", bytes, " bytes at ", offset, " from a buffer of ", bytes_));
    }
    return FromCuda(cudaMemcpy(dst, static_cast<const char*>(data_) + offset, bytes, cudaMemcpyDeviceToHost),
                    "cudaMemcpy to host");
}

void CopyOnDevice(void* dst, const void* src, size_t bytes) {
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0);
}

size_t FreeDeviceBytes() {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return free;
}

absl::Status Synchronize(const char* what) {
    if (absl::Status s = FromCuda(cudaGetLastError(), what); !s.ok()) return s;
    return FromCuda(cudaDeviceSynchronize(), what);
}

}  // namespace prepack::cuda
