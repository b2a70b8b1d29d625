// Device memory for the CUDA backend, through plain cudaMalloc (no managed
// memory): a failed allocation is RESOURCE_EXHAUSTED naming the size, never
// a crash. Host-side API: including this needs no CUDA headers.
#pragma once

#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace prepack::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    // `bytes` of device memory (uninitialised); RESOURCE_EXHAUSTED when the
    // device has not that much free, UNAVAILABLE without a usable GPU.
    static absl::StatusOr<DeviceBuffer> Allocate(size_t bytes);

    absl::Status CopyFromHost(const void* src, size_t bytes, size_t offset = 0);
    absl::Status CopyToHost(void* dst, size_t bytes, size_t offset = 0) const;

    template <typename T>
    T* as() const { return static_cast<T*>(data_); }
    void*  data() const { return data_; }
    size_t bytes() const { return bytes_; }
    bool   empty() const { return data_ == nullptr; }

private:
    void*  data_ = nullptr;
    size_t bytes_ = 0;
};

// Device-to-device copy, asynchronous on the default stream (ordered with
// the kernels there); errors surface at the next Synchronize().
void CopyOnDevice(void* dst, const void* src, size_t bytes);

// Bytes of device memory free now (0 without a usable GPU).
size_t FreeDeviceBytes();

// Waits for the device and reports the first error of any kernel launched
// since the last call (launch errors are sticky until read), naming `what`.
absl::Status Synchronize(const char* what);

}  // namespace prepack::cuda
