// Test helper: builds GGUF files in memory, byte for byte, including broken
// ones. Header-only, no gtest dependency.
//
//   prepack::test::GgufBuilder b;
//   b.AddString("general.architecture", "llama")
//    .AddUint32("llama.block_count", 2)
//    .AddStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
//   b.AddTensorF32("token_embd.weight", {4, 3}, values);   // ne in ggml order
//   std::vector<uint8_t> bytes = b.Build();
//   prepack::test::TempGgufFile file(b);                     // or b.WriteFile(path)
//   auto gguf = prepack::GgufFile::Open(file.path());
//
// The builder writes exactly what it is told and validates nothing, so it can
// produce hostile files: every count, length, type and offset that the layout
// would normally derive can be overridden, and Build() can report where each
// part landed so a test can patch individual bytes.
//
// Layout produced (GGUF v3 unless overridden): magic, version, tensor_count,
// kv_count, KV pairs in call order, tensor infos in call order, zero padding to
// the alignment, then each tensor's data at the next aligned offset. The
// alignment is 32, or the value of a uint32 "general.alignment" KV when that
// is a power of two (SetAlignment adds one), or OverrideLayoutAlignment's.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/model/gguf.h"
#include "core/base/status.h"

namespace prepack::test {

class GgufBuilder {
public:
    // Where the parts of the last Build() landed (absolute file offsets).
    struct Layout {
        uint64_t header_size = 0;          // magic + version + the two counts (24)
        uint64_t tensor_infos_start = 0;
        uint64_t data_start = 0;           // start of the (aligned) data section
        uint64_t alignment = 0;            // alignment used for placement
        std::map<std::string, uint64_t> key_start;          // the key's u64 length
        std::map<std::string, uint64_t> value_start;        // the value bytes (after the u32 type)
        std::map<std::string, uint64_t> tensor_info_start;  // the name's u64 length
        std::map<std::string, uint64_t> tensor_data_start;  // where the data was written
    };

    // ---- raw little-endian encoders (public for hand-made values) ----
    template <typename T>
    static void Put(std::vector<uint8_t>& out, T v) {
        static_assert(std::is_trivially_copyable_v<T>);
        uint8_t b[sizeof(T)];
        std::memcpy(b, &v, sizeof(T));
        out.insert(out.end(), b, b + sizeof(T));
    }
    static void PutString(std::vector<uint8_t>& out, std::string_view s) {
        Put<uint64_t>(out, s.size());
        out.insert(out.end(), s.begin(), s.end());
    }
    // Raw bytes of a vector of trivially copyable values (floats, halves...).
    template <typename T>
    static std::vector<uint8_t> ToBytes(const std::vector<T>& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        std::vector<uint8_t> out(v.size() * sizeof(T));
        if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
        return out;
    }
    // The encoding of an ARRAY value: u32 element type, u64 count, elements.
    // Useful for nested arrays and arrays with deliberately wrong counts.
    static std::vector<uint8_t> EncodeArray(uint32_t elem_type, uint64_t count,
                                            const std::vector<uint8_t>& elements) {
        std::vector<uint8_t> out;
        Put<uint32_t>(out, elem_type);
        Put<uint64_t>(out, count);
        out.insert(out.end(), elements.begin(), elements.end());
        return out;
    }
    static void PatchU32(std::vector<uint8_t>& bytes, uint64_t offset, uint32_t v) {
        std::memcpy(bytes.data() + offset, &v, sizeof v);
    }
    static void PatchU64(std::vector<uint8_t>& bytes, uint64_t offset, uint64_t v) {
        std::memcpy(bytes.data() + offset, &v, sizeof v);
    }

    // ---- metadata, written in call order ----
    GgufBuilder& AddUint8(std::string key, uint8_t v)   { return AddScalar(std::move(key), GgufValueType::kUint8, v); }
    GgufBuilder& AddInt8(std::string key, int8_t v)     { return AddScalar(std::move(key), GgufValueType::kInt8, v); }
    GgufBuilder& AddUint16(std::string key, uint16_t v) { return AddScalar(std::move(key), GgufValueType::kUint16, v); }
    GgufBuilder& AddInt16(std::string key, int16_t v)   { return AddScalar(std::move(key), GgufValueType::kInt16, v); }
    GgufBuilder& AddUint32(std::string key, uint32_t v) { return AddScalar(std::move(key), GgufValueType::kUint32, v); }
    GgufBuilder& AddInt32(std::string key, int32_t v)   { return AddScalar(std::move(key), GgufValueType::kInt32, v); }
    GgufBuilder& AddFloat32(std::string key, float v)   { return AddScalar(std::move(key), GgufValueType::kFloat32, v); }
    GgufBuilder& AddUint64(std::string key, uint64_t v) { return AddScalar(std::move(key), GgufValueType::kUint64, v); }
    GgufBuilder& AddInt64(std::string key, int64_t v)   { return AddScalar(std::move(key), GgufValueType::kInt64, v); }
    GgufBuilder& AddFloat64(std::string key, double v)  { return AddScalar(std::move(key), GgufValueType::kFloat64, v); }
    GgufBuilder& AddBool(std::string key, bool v) {
        return AddScalar(std::move(key), GgufValueType::kBool, static_cast<uint8_t>(v ? 1 : 0));
    }
    GgufBuilder& AddString(std::string key, std::string_view v) {
        std::vector<uint8_t> value;
        PutString(value, v);
        return AddRaw(std::move(key), GgufValueType::kString, std::move(value));
    }

    GgufBuilder& AddStringArray(std::string key, const std::vector<std::string>& v) {
        std::vector<uint8_t> elems;
        for (const std::string& s : v) PutString(elems, s);
        return AddRawArray(std::move(key), GgufValueType::kString, v.size(), elems);
    }
    GgufBuilder& AddFloat32Array(std::string key, const std::vector<float>& v) {
        return AddRawArray(std::move(key), GgufValueType::kFloat32, v.size(), ToBytes(v));
    }
    GgufBuilder& AddFloat64Array(std::string key, const std::vector<double>& v) {
        return AddRawArray(std::move(key), GgufValueType::kFloat64, v.size(), ToBytes(v));
    }
    GgufBuilder& AddInt32Array(std::string key, const std::vector<int32_t>& v) {
        return AddRawArray(std::move(key), GgufValueType::kInt32, v.size(), ToBytes(v));
    }
    GgufBuilder& AddUint32Array(std::string key, const std::vector<uint32_t>& v) {
        return AddRawArray(std::move(key), GgufValueType::kUint32, v.size(), ToBytes(v));
    }
    GgufBuilder& AddInt64Array(std::string key, const std::vector<int64_t>& v) {
        return AddRawArray(std::move(key), GgufValueType::kInt64, v.size(), ToBytes(v));
    }
    GgufBuilder& AddUint8Array(std::string key, const std::vector<uint8_t>& v) {
        return AddRawArray(std::move(key), GgufValueType::kUint8, v.size(), v);
    }
    GgufBuilder& AddBoolArray(std::string key, const std::vector<bool>& v) {
        std::vector<uint8_t> elems;
        for (bool b : v) elems.push_back(b ? 1 : 0);
        return AddRawArray(std::move(key), GgufValueType::kBool, v.size(), elems);
    }
    // An array whose element bytes are given verbatim; `count` need not match.
    GgufBuilder& AddRawArray(std::string key, GgufValueType elem_type, uint64_t count,
                             const std::vector<uint8_t>& elements) {
        return AddRawArray(std::move(key), static_cast<uint32_t>(elem_type), count, elements);
    }
    GgufBuilder& AddRawArray(std::string key, uint32_t elem_type, uint64_t count,
                             const std::vector<uint8_t>& elements) {
        return AddRaw(std::move(key), static_cast<uint32_t>(GgufValueType::kArray),
                      EncodeArray(elem_type, count, elements));
    }
    // Any value type id (also unknown ones) followed by the given value bytes.
    GgufBuilder& AddRaw(std::string key, GgufValueType type, std::vector<uint8_t> value) {
        return AddRaw(std::move(key), static_cast<uint32_t>(type), std::move(value));
    }
    GgufBuilder& AddRaw(std::string key, uint32_t type, std::vector<uint8_t> value) {
        kvs_.push_back(Kv{std::move(key), type, std::move(value), std::nullopt});
        return *this;
    }
    // Adds the uint32 "general.alignment" KV; tensor data is laid out with it
    // when it is a power of two (otherwise with the default 32).
    GgufBuilder& SetAlignment(uint32_t alignment) {
        return AddUint32("general.alignment", alignment);
    }

    // ---- tensors, written in call order; `ne` in ggml order (ne[0] fastest) ----
    GgufBuilder& AddTensor(std::string name, std::vector<uint64_t> ne, GgmlType type,
                           std::vector<uint8_t> data) {
        return AddTensorRaw(std::move(name), std::move(ne), static_cast<uint32_t>(type),
                            std::move(data));
    }
    GgufBuilder& AddTensorF32(std::string name, std::vector<uint64_t> ne,
                              const std::vector<float>& values) {
        return AddTensor(std::move(name), std::move(ne), GgmlType::kF32, ToBytes(values));
    }
    // Any type id; `data` is written as is, whatever ne and type imply.
    GgufBuilder& AddTensorRaw(std::string name, std::vector<uint64_t> ne, uint32_t type_id,
                              std::vector<uint8_t> data) {
        Tensor t;
        t.name = std::move(name);
        t.ne = std::move(ne);
        t.type = type_id;
        t.data = std::move(data);
        tensors_.push_back(std::move(t));
        return *this;
    }

    // ---- corruption knobs (all apply at Build time) ----
    GgufBuilder& OverrideMagic(std::string magic) { magic_ = std::move(magic); return *this; }
    GgufBuilder& OverrideVersion(uint32_t v) { version_ = v; return *this; }
    GgufBuilder& OverrideTensorCount(uint64_t n) { tensor_count_ = n; return *this; }
    GgufBuilder& OverrideKvCount(uint64_t n) { kv_count_ = n; return *this; }
    // Alignment used to place data, regardless of any general.alignment KV.
    GgufBuilder& OverrideLayoutAlignment(uint64_t a) { layout_alignment_ = a; return *this; }
    // The u64 length written before `key` (the key bytes stay as they are).
    GgufBuilder& OverrideKeyLength(const std::string& key, uint64_t len) {
        FindKv(key).key_len = len;
        return *this;
    }
    // The u32 value type written for `key` (the value bytes stay as they are).
    GgufBuilder& OverrideValueType(const std::string& key, uint32_t type) {
        FindKv(key).type = type;
        return *this;
    }
    // The u64 length prefix of a STRING value.
    GgufBuilder& OverrideStringLength(const std::string& key, uint64_t len) {
        Kv& kv = FindKv(key);
        PatchU64(kv.value, 0, len);
        return *this;
    }
    // The u64 element count of an ARRAY value.
    GgufBuilder& OverrideArrayCount(const std::string& key, uint64_t count) {
        Kv& kv = FindKv(key);
        PatchU64(kv.value, 4, count);
        return *this;
    }
    GgufBuilder& OverrideTensorNameLength(const std::string& name, uint64_t len) {
        FindTensor(name).name_len = len;
        return *this;
    }
    // n_dims written in the info; the ne values written stay those given.
    GgufBuilder& OverrideTensorNdims(const std::string& name, uint32_t n_dims) {
        FindTensor(name).n_dims = n_dims;
        return *this;
    }
    GgufBuilder& OverrideTensorType(const std::string& name, uint32_t type_id) {
        FindTensor(name).type = type_id;
        return *this;
    }
    // Offset written in the info; the data is still placed where it would be.
    GgufBuilder& OverrideTensorOffset(const std::string& name, uint64_t offset) {
        FindTensor(name).offset = offset;
        return *this;
    }
    // Bytes appended after the last tensor's data.
    GgufBuilder& AppendTrailingBytes(std::vector<uint8_t> bytes) {
        trailing_ = std::move(bytes);
        return *this;
    }

    // ---- output ----
    std::vector<uint8_t> Build(Layout* layout = nullptr) const {
        Layout local;
        Layout& lay = layout ? *layout : local;
        lay = Layout{};
        lay.alignment = LayoutAlignment();
        const uint64_t align = lay.alignment;

        std::vector<uint8_t> out;
        const std::string magic = magic_.value_or("GGUF");
        out.insert(out.end(), magic.begin(), magic.end());
        Put<uint32_t>(out, version_.value_or(3));
        Put<uint64_t>(out, tensor_count_.value_or(tensors_.size()));
        Put<uint64_t>(out, kv_count_.value_or(kvs_.size()));
        lay.header_size = out.size();

        for (const Kv& kv : kvs_) {
            lay.key_start[kv.key] = out.size();
            Put<uint64_t>(out, kv.key_len.value_or(kv.key.size()));
            out.insert(out.end(), kv.key.begin(), kv.key.end());
            Put<uint32_t>(out, kv.type);
            lay.value_start[kv.key] = out.size();
            out.insert(out.end(), kv.value.begin(), kv.value.end());
        }

        // Data placement first, so the infos can carry the natural offsets.
        std::vector<uint64_t> offsets;
        uint64_t cursor = 0;
        for (const Tensor& t : tensors_) {
            cursor = AlignUp(cursor, align);
            offsets.push_back(cursor);
            cursor += t.data.size();
        }

        lay.tensor_infos_start = out.size();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const Tensor& t = tensors_[i];
            lay.tensor_info_start[t.name] = out.size();
            Put<uint64_t>(out, t.name_len.value_or(t.name.size()));
            out.insert(out.end(), t.name.begin(), t.name.end());
            Put<uint32_t>(out, t.n_dims.value_or(static_cast<uint32_t>(t.ne.size())));
            for (uint64_t d : t.ne) Put<uint64_t>(out, d);
            Put<uint32_t>(out, t.type);
            Put<uint64_t>(out, t.offset.value_or(offsets[i]));
        }

        lay.data_start = AlignUp(out.size(), align);
        out.resize(lay.data_start, 0);
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const Tensor& t = tensors_[i];
            out.resize(lay.data_start + offsets[i], 0);
            lay.tensor_data_start[t.name] = out.size();
            out.insert(out.end(), t.data.begin(), t.data.end());
        }
        out.insert(out.end(), trailing_.begin(), trailing_.end());
        return out;
    }

    absl::Status WriteFile(const std::string& path) const {
        const std::vector<uint8_t> bytes = Build();
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr) return absl::InternalError(absl::StrCat("cannot create ", path));
        const size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
        const bool closed = std::fclose(f) == 0;
        if (written != bytes.size() || !closed) {
            return absl::InternalError(absl::StrCat("cannot write ", path));
        }
        return absl::OkStatus();
    }

private:
    struct Kv {
        std::string             key;
        uint32_t                type;
        std::vector<uint8_t>    value;
        std::optional<uint64_t> key_len;
    };
    struct Tensor {
        std::string             name;
        std::vector<uint64_t>   ne;
        uint32_t                type = 0;
        std::vector<uint8_t>    data;
        std::optional<uint64_t> name_len;
        std::optional<uint32_t> n_dims;
        std::optional<uint64_t> offset;
    };

    template <typename T>
    GgufBuilder& AddScalar(std::string key, GgufValueType type, T v) {
        std::vector<uint8_t> value;
        Put<T>(value, v);
        return AddRaw(std::move(key), type, std::move(value));
    }

    // The last matching entry, so a test can target the second of two
    // duplicates. A missing name is a bug in the test: fail loudly.
    Kv& FindKv(const std::string& key) {
        for (size_t i = kvs_.size(); i-- > 0;) {
            if (kvs_[i].key == key) return kvs_[i];
        }
        std::fprintf(stderr, "GgufBuilder: no key '%s'\n", key.c_str());
        std::abort();
    }
    Tensor& FindTensor(const std::string& name) {
        for (size_t i = tensors_.size(); i-- > 0;) {
            if (tensors_[i].name == name) return tensors_[i];
        }
        std::fprintf(stderr, "GgufBuilder: no tensor '%s'\n", name.c_str());
        std::abort();
    }

    uint64_t LayoutAlignment() const {
        if (layout_alignment_) return *layout_alignment_;
        uint64_t align = 32;
        for (const Kv& kv : kvs_) {
            if (kv.key == "general.alignment" &&
                kv.type == static_cast<uint32_t>(GgufValueType::kUint32) && kv.value.size() == 4) {
                uint32_t a;
                std::memcpy(&a, kv.value.data(), 4);
                if (a != 0 && (a & (a - 1)) == 0) align = a;
            }
        }
        return align;
    }
    static uint64_t AlignUp(uint64_t x, uint64_t a) { return a == 0 ? x : (x + a - 1) / a * a; }

    std::optional<std::string> magic_;
    std::optional<uint32_t>    version_;
    std::optional<uint64_t>    tensor_count_;
    std::optional<uint64_t>    kv_count_;
    std::optional<uint64_t>    layout_alignment_;
    std::vector<Kv>            kvs_;
    std::vector<Tensor>        tensors_;
    std::vector<uint8_t>       trailing_;
};

// A uniquely named file in the temp directory holding a builder's output (or
// given bytes), removed on destruction. ok() is false if writing failed.
class TempGgufFile {
public:
    explicit TempGgufFile(const GgufBuilder& builder, std::string_view stem = "test")
        : TempGgufFile(builder.Build(), stem) {}
    explicit TempGgufFile(const std::vector<uint8_t>& bytes, std::string_view stem = "test") {
        static std::atomic<int> counter{0};
        path_ = (std::filesystem::temp_directory_path() /
                 ("prepack_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) +
                  "_" + std::string(stem) + ".gguf"))
                    .string();
        std::FILE* f = std::fopen(path_.c_str(), "wb");
        if (f == nullptr) return;
        const size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
        ok_ = std::fclose(f) == 0 && written == bytes.size();
    }
    ~TempGgufFile() {
        std::error_code ec;
        std::filesystem::remove(path_, ec);
    }
    TempGgufFile(const TempGgufFile&) = delete;
    TempGgufFile& operator=(const TempGgufFile&) = delete;

    const std::string& path() const { return path_; }
    bool ok() const { return ok_; }

private:
    std::string path_;
    bool        ok_ = false;
};

}  // namespace prepack::test
