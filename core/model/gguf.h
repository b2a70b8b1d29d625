// GGUF v2/v3 reader: memory-maps a file and validates every byte it will
// trust before handing out metadata or tensor pointers.
//
// Format (little endian): "GGUF" magic, u32 version, u64 tensor_count,
// u64 kv_count, kv_count key/value pairs, tensor_count tensor infos, padding
// to `general.alignment` (default 32), then the tensor data section.
// Nothing in a file is trusted: counts, string and array lengths, dims,
// types, offsets and sizes are all bounds- and overflow-checked, so a hostile
// file yields an INVALID_ARGUMENT (or DATA_LOSS for truncation) status naming
// the problem, never a crash or an unbounded allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/base/status.h"

namespace prepack {

// ggml tensor element types that prepack can read. The block-quantized ones
// are kept as they are and computed on (kernels/cpu/quant_blocks.h).
enum class GgmlType : uint32_t {
    kF32  = 0,
    kF16  = 1,
    kQ4_0 = 2,
    kQ4_1 = 3,
    kQ5_0 = 6,
    kQ5_1 = 7,
    kQ8_0 = 8,
    kQ4_K = 12,
    kQ5_K = 13,
    kQ6_K = 14,
    kBF16 = 30,
};

const char* GgmlTypeName(GgmlType type);
// Bytes needed for `n_elements` of `type`; error when n is not a whole number
// of blocks (Q8_0 packs 32 elements per 34-byte block, Q4_K 256 per 144) or
// would overflow.
absl::StatusOr<uint64_t> GgmlTypeBytes(GgmlType type, uint64_t n_elements);

// GGUF metadata value types, numbered as in the file format.
enum class GgufValueType : uint32_t {
    kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5,
    kFloat32 = 6, kBool = 7, kString = 8, kArray = 9, kUint64 = 10,
    kInt64 = 11, kFloat64 = 12,
};

struct GgufTensor {
    std::string           name;
    std::vector<uint64_t> ne;       // dims, fastest-varying first (ggml order)
    GgmlType              type;
    uint64_t              offset;   // from the start of the data section
    uint64_t              nbytes;
    const uint8_t*        data;     // into the mapping; valid while the file lives

    uint64_t n_elements() const;
};

class GgufFile {
public:
    // Maps and validates `path`. Errors: NOT_FOUND (no such file),
    // INVALID_ARGUMENT (malformed), DATA_LOSS (truncated).
    static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
    // Same validation over bytes held in memory (used by tests and fuzzers).
    static absl::StatusOr<std::unique_ptr<GgufFile>> FromBytes(std::vector<uint8_t> bytes);

    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    uint32_t version() const { return version_; }
    uint64_t file_size() const { return size_; }
    uint32_t alignment() const { return alignment_; }

    // ---- metadata ----
    bool Has(std::string_view key) const;
    // Type of `key`, NOT_FOUND when absent.
    absl::StatusOr<GgufValueType> TypeOf(std::string_view key) const;
    absl::StatusOr<std::string> GetString(std::string_view key) const;
    // Any integer type whose value fits; INVALID_ARGUMENT for a negative or
    // non-integer value.
    absl::StatusOr<uint64_t> GetUint(std::string_view key) const;
    absl::StatusOr<double>   GetFloat(std::string_view key) const;   // f32, f64 or integer
    absl::StatusOr<bool>     GetBool(std::string_view key) const;
    absl::StatusOr<std::vector<std::string>> GetStringArray(std::string_view key) const;
    absl::StatusOr<std::vector<float>>       GetFloatArray(std::string_view key) const;
    absl::StatusOr<std::vector<int32_t>>     GetInt32Array(std::string_view key) const;
    // Every key in file order, and a short printable rendering of a value
    // (arrays summarised as "[type x N]") for `prepack inspect`.
    std::vector<std::string> Keys() const;
    std::string ValueSummary(std::string_view key) const;

    // ---- tensors ----
    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* FindTensor(std::string_view name) const;

    struct Value;   // defined in gguf.cpp

private:
    GgufFile();
    absl::Status Parse();

    const uint8_t*           base_ = nullptr;
    uint64_t                 size_ = 0;
    void*                    mapping_ = nullptr;   // munmap on destruction when set
    std::vector<uint8_t>     owned_;               // FromBytes storage
    uint32_t                 version_ = 0;
    uint32_t                 alignment_ = 32;
    std::vector<std::string> key_order_;
    std::map<std::string, std::unique_ptr<Value>, std::less<>> kv_;
    std::vector<GgufTensor>  tensors_;
};

// Converts `n` elements of a tensor of `type` at `src` to f32.
// `src` must hold GgmlTypeBytes(type, n) bytes.
void DequantizeRow(GgmlType type, const uint8_t* src, float* dst, uint64_t n);

// fp16 / bf16 scalar conversions used by loaders and tests.
float    Fp16ToFp32(uint16_t h);
uint16_t Fp32ToFp16(float f);
float    Bf16ToFp32(uint16_t h);
uint16_t Fp32ToBf16(float f);   // round to nearest even

}  // namespace prepack
