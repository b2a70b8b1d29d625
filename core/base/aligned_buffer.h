// A fixed-size, 64-byte aligned, uninitialised array (of floats, or of bf16
// weights). Weights and activations live in these so SIMD loads never
// straddle cache lines.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

namespace prepack {

template <typename T>
class AlignedArray {
public:
    AlignedArray() = default;
    explicit AlignedArray(size_t n) { Resize(n); }
    ~AlignedArray() { std::free(data_); }
    AlignedArray(AlignedArray&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    AlignedArray& operator=(AlignedArray&& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(size_, o.size_);
        return *this;
    }
    AlignedArray(const AlignedArray&) = delete;
    AlignedArray& operator=(const AlignedArray&) = delete;

    // Contents are not preserved. Throws std::bad_alloc when memory runs out;
    // callers that size from user input check against a budget first.
    void Resize(size_t n) {
        std::free(data_);
        data_ = nullptr;
        size_ = 0;
        if (n == 0) return;
        const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
        data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
        if (data_ == nullptr) throw std::bad_alloc();
        size_ = n;
    }
    // Grows (never shrinks) so per-step buffers are allocated once.
    void EnsureSize(size_t n) {
        if (n > size_) Resize(n);
    }

    T*       data() { return data_; }
    const T* data() const { return data_; }
    size_t   size() const { return size_; }
    T&       operator[](size_t i) { return data_[i]; }
    const T& operator[](size_t i) const { return data_[i]; }

private:
    T*     data_ = nullptr;
    size_t size_ = 0;
};

using AlignedFloats = AlignedArray<float>;

}  // namespace prepack
