// GGUF reader. Every number read from the file is treated as hostile: reads
// go through a bounds-checked cursor, counts are compared with the file size
// before anything is iterated, and all size arithmetic is overflow-checked.
// Array values are not copied at parse time; they are validated in place and
// decoded from the mapping on demand, so memory stays O(number of keys).
#include "core/model/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "absl/strings/str_join.h"
#include "kernels/cpu/quant_blocks.h"

namespace prepack {

static_assert(std::endian::native == std::endian::little,
              "GGUF is little endian; this reader decodes with memcpy");

namespace {

constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
// Arrays may nest (the format allows it) but nothing real goes deeper than
// one level; a limit keeps the validator's recursion shallow.
constexpr int kMaxArrayDepth = 3;
// Smallest possible encodings, used to reject counts no file this size could
// hold before any loop runs: key (u64 len + >=0 bytes) + u32 type + 1 byte
// value, and name (u64 len) + u32 n_dims + one u64 dim + u32 type + u64 offset.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
constexpr size_t kSummaryMaxChars = 60;

const char* ValueTypeName(GgufValueType t) {
    switch (t) {
        case GgufValueType::kUint8:   return "uint8";
        case GgufValueType::kInt8:    return "int8";
        case GgufValueType::kUint16:  return "uint16";
        case GgufValueType::kInt16:   return "int16";
        case GgufValueType::kUint32:  return "uint32";
        case GgufValueType::kInt32:   return "int32";
        case GgufValueType::kFloat32: return "float32";
        case GgufValueType::kBool:    return "bool";
        case GgufValueType::kString:  return "string";
        case GgufValueType::kArray:   return "array";
        case GgufValueType::kUint64:  return "uint64";
        case GgufValueType::kInt64:   return "int64";
        case GgufValueType::kFloat64: return "float64";
    }
    return "unknown";
}

bool IsKnownValueType(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kFloat64); }

bool IsUnsignedType(GgufValueType t) {
    return t == GgufValueType::kUint8 || t == GgufValueType::kUint16 ||
           t == GgufValueType::kUint32 || t == GgufValueType::kUint64;
}
bool IsSignedType(GgufValueType t) {
    return t == GgufValueType::kInt8 || t == GgufValueType::kInt16 ||
           t == GgufValueType::kInt32 || t == GgufValueType::kInt64;
}
bool IsIntegerType(GgufValueType t) { return IsUnsignedType(t) || IsSignedType(t); }

// Encoded size of a fixed-size scalar; 0 for string and array.
uint64_t ScalarBytes(GgufValueType t) {
    switch (t) {
        case GgufValueType::kUint8: case GgufValueType::kInt8: case GgufValueType::kBool:
            return 1;
        case GgufValueType::kUint16: case GgufValueType::kInt16:
            return 2;
        case GgufValueType::kUint32: case GgufValueType::kInt32: case GgufValueType::kFloat32:
            return 4;
        case GgufValueType::kUint64: case GgufValueType::kInt64: case GgufValueType::kFloat64:
            return 8;
        case GgufValueType::kString: case GgufValueType::kArray:
            return 0;
    }
    return 0;
}

// Smallest encoding of one array element: a string is at least its u64
// length, a nested array at least its u32 type and u64 count.
uint64_t MinElementBytes(GgufValueType t) {
    if (t == GgufValueType::kString) return 8;
    if (t == GgufValueType::kArray) return 12;
    return ScalarBytes(t);
}

// This absl predates its string_view aliasing std::string_view, so StrCat
// needs std::string_view arguments converted.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

template <typename T>
T Load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// An integer of any GGUF integer type, without losing range: a uint64 above
// INT64_MAX and a negative int64 are both representable.
struct IntValue {
    bool     negative;
    uint64_t magnitude_or_value;   // the value itself when !negative
    int64_t  as_signed;            // exact when negative or <= INT64_MAX (else clamped)
};

IntValue LoadInteger(GgufValueType t, const uint8_t* p) {
    switch (t) {
        case GgufValueType::kUint8:  { uint64_t v = Load<uint8_t>(p);  return {false, v, static_cast<int64_t>(v)}; }
        case GgufValueType::kUint16: { uint64_t v = Load<uint16_t>(p); return {false, v, static_cast<int64_t>(v)}; }
        case GgufValueType::kUint32: { uint64_t v = Load<uint32_t>(p); return {false, v, static_cast<int64_t>(v)}; }
        case GgufValueType::kUint64: {
            uint64_t v = Load<uint64_t>(p);
            return {false, v, v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v)};
        }
        case GgufValueType::kInt8:  { int64_t v = Load<int8_t>(p);  return {v < 0, static_cast<uint64_t>(v), v}; }
        case GgufValueType::kInt16: { int64_t v = Load<int16_t>(p); return {v < 0, static_cast<uint64_t>(v), v}; }
        case GgufValueType::kInt32: { int64_t v = Load<int32_t>(p); return {v < 0, static_cast<uint64_t>(v), v}; }
        case GgufValueType::kInt64: { int64_t v = Load<int64_t>(p); return {v < 0, static_cast<uint64_t>(v), v}; }
        default: return {false, 0, 0};
    }
}

// Bounds-checked little-endian cursor over the file bytes. Every read states
// what it is reading so a truncation error can say where it happened.
class Reader {
public:
    Reader(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t size() const { return size_; }
    uint64_t remaining() const { return size_ - pos_; }
    const uint8_t* here() const { return base_ + pos_; }

    absl::Status Need(uint64_t n, std::string_view what) const {
        if (n > remaining()) {
            return absl::DataLossError(absl::StrCat("truncated: ", Av(what), " needs ", n,
                                                    " bytes at offset ", pos_, ", file has ",
                                                    size_));
        }
        return absl::OkStatus();
    }
    absl::Status Skip(uint64_t n, std::string_view what) {
        PP_RETURN_IF_ERROR(Need(n, what));
        pos_ += n;
        return absl::OkStatus();
    }
    template <typename T>
    absl::StatusOr<T> Read(std::string_view what) {
        PP_RETURN_IF_ERROR(Need(sizeof(T), what));
        T v = Load<T>(here());
        pos_ += sizeof(T);
        return v;
    }
    // A gguf string: u64 length then bytes. A length larger than the whole
    // file cannot be truncation, so it is reported as corruption.
    absl::StatusOr<std::string_view> ReadString(std::string_view what) {
        PP_ASSIGN_OR_RETURN(uint64_t len, Read<uint64_t>(what));
        if (len > size_) {
            return absl::InvalidArgumentError(absl::StrCat(
                "string length ", len, " of ", Av(what), " exceeds the file size ", size_));
        }
        PP_RETURN_IF_ERROR(Need(len, what));
        std::string_view s(reinterpret_cast<const char*>(here()), len);
        pos_ += len;
        return s;
    }

private:
    const uint8_t* base_;
    uint64_t       size_;
    uint64_t       pos_ = 0;
};

// A count of entries each at least `min_bytes` long that could not fit in a
// file of `file_size` bytes is corrupt, whatever follows it.
absl::Status CheckCount(uint64_t count, uint64_t min_bytes, uint64_t file_size,
                        std::string_view what) {
    if (count > file_size / min_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            Av(what), " ", count, " is too large: each entry needs at least ", min_bytes,
            " bytes and the file has only ", file_size));
    }
    return absl::OkStatus();
}

// Two lowercase hex digits (absl's StrFormat would need another library).
std::string Hex2(uint8_t b) {
    constexpr char kDigits[] = "0123456789abcdef";
    return {kDigits[b >> 4], kDigits[b & 0xf]};
}

std::string Quote(std::string_view s) { return absl::StrCat("'", Av(s), "'"); }

// Known ggml type ids, so an unsupported-type error can say what it was.
const char* KnownGgmlTypeName(uint32_t id) {
    switch (id) {
        case 0: return "F32";     case 1: return "F16";     case 2: return "Q4_0";
        case 3: return "Q4_1";    case 6: return "Q5_0";    case 7: return "Q5_1";
        case 8: return "Q8_0";    case 9: return "Q8_1";    case 10: return "Q2_K";
        case 11: return "Q3_K";   case 12: return "Q4_K";   case 13: return "Q5_K";
        case 14: return "Q6_K";   case 15: return "Q8_K";   case 16: return "IQ2_XXS";
        case 17: return "IQ2_XS"; case 18: return "IQ3_XXS"; case 19: return "IQ1_S";
        case 20: return "IQ4_NL"; case 21: return "IQ3_S";  case 22: return "IQ2_S";
        case 23: return "IQ4_XS"; case 24: return "I8";     case 25: return "I16";
        case 26: return "I32";    case 27: return "I64";    case 28: return "F64";
        case 29: return "IQ1_M";  case 30: return "BF16";   case 34: return "TQ1_0";
        case 35: return "TQ2_0";  case 39: return "MXFP4";
        default: return nullptr;
    }
}

bool IsSupportedGgmlType(uint32_t id) {
    return id == static_cast<uint32_t>(GgmlType::kF32) ||
           id == static_cast<uint32_t>(GgmlType::kF16) ||
           id == static_cast<uint32_t>(GgmlType::kBF16) ||
           cpu::QuantTypeOfGgml(id).has_value();
}

constexpr const char* kSupportedTypes = "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K";

// Printable, single-line rendering of a string for `inspect`: control bytes
// escaped, cut after kSummaryMaxChars characters without splitting a UTF-8
// sequence.
std::string SummarizeString(std::string_view s) {
    std::string out = "\"";
    size_t shown = 0;
    size_t i = 0;
    for (; i < s.size() && shown < kSummaryMaxChars; ++shown) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '\n') { out += "\\n"; ++i; continue; }
        if (c == '\t') { out += "\\t"; ++i; continue; }
        if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); ++i; continue; }
        if (c < 0x20 || c == 0x7f) { out += "\\x" + Hex2(c); ++i; continue; }
        // Copy a whole UTF-8 sequence (lead byte plus continuation bytes).
        size_t j = i + 1;
        if (c >= 0xc0) {
            while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xc0) == 0x80 && j - i < 4) ++j;
        }
        out.append(s.substr(i, j - i));
        i = j;
    }
    out += "\"";
    if (i < s.size()) out += absl::StrCat("... (", s.size(), " bytes)");
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Values

// A validated metadata value. Scalars are decoded; strings and arrays point
// into the file bytes, which live as long as the GgufFile.
struct GgufFile::Value {
    struct Array {
        GgufValueType  elem_type;
        uint64_t       count;
        const uint8_t* data;    // first element
        uint64_t       nbytes;  // encoded size of all elements
    };

    GgufValueType type;
    std::variant<uint64_t, int64_t, double, bool, std::string_view, Array> v;
};

namespace {

absl::Status ValidateBool(uint8_t b, std::string_view what) {
    if (b > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(Av(what), " has bool value ", static_cast<unsigned>(b), " (must be 0 or 1)"));
    }
    return absl::OkStatus();
}

absl::Status ReadValueType(Reader& r, std::string_view what, GgufValueType* out) {
    PP_ASSIGN_OR_RETURN(uint32_t raw, r.Read<uint32_t>(what));
    if (!IsKnownValueType(raw)) {
        return absl::InvalidArgumentError(
            absl::StrCat(Av(what), " has unknown value type ", raw));
    }
    *out = static_cast<GgufValueType>(raw);
    return absl::OkStatus();
}

// Reads an array header (element type and count) and validates the elements.
absl::StatusOr<GgufFile::Value::Array> ReadArray(Reader& r, std::string_view what, int depth) {
    if (depth > kMaxArrayDepth) {
        return absl::InvalidArgumentError(absl::StrCat(
            Av(what), " nests arrays deeper than ", kMaxArrayDepth, " levels"));
    }
    GgufValueType elem;
    PP_RETURN_IF_ERROR(ReadValueType(r, absl::StrCat("array element type of ", Av(what)), &elem));
    PP_ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>(absl::StrCat("array count of ", Av(what))));
    PP_RETURN_IF_ERROR(CheckCount(count, MinElementBytes(elem), r.size(),
                                  absl::StrCat("array count of ", Av(what))));

    GgufFile::Value::Array arr{elem, count, r.here(), 0};
    const uint64_t start = r.pos();
    if (uint64_t width = ScalarBytes(elem); width != 0) {
        // count <= size / width, so this product cannot overflow.
        PP_RETURN_IF_ERROR(r.Need(count * width, absl::StrCat("array of ", Av(what))));
        if (elem == GgufValueType::kBool) {
            for (uint64_t i = 0; i < count; ++i) {
                // The description is only built for the (rare) bad byte.
                if (r.here()[i] > 1) {
                    PP_RETURN_IF_ERROR(ValidateBool(r.here()[i], absl::StrCat(Av(what), " element ", i)));
                }
            }
        }
        PP_RETURN_IF_ERROR(r.Skip(count * width, what));
    } else {
        // Strings and nested arrays: every element consumes at least 8 bytes,
        // so this loop is bounded by the file size.
        for (uint64_t i = 0; i < count; ++i) {
            if (elem == GgufValueType::kArray) {
                // Nested arrays are rare: name each one by its index path.
                PP_RETURN_IF_ERROR(ReadArray(r, absl::StrCat(Av(what), "[", i, "]"), depth + 1).status());
                continue;
            }
            // For strings the index is added only on failure, so a 100k-entry
            // vocabulary does not build 100k description strings.
            absl::Status s = r.ReadString(what).status();
            if (!s.ok()) {
                return absl::Status(s.code(), absl::StrCat(s.message(), " (array element ", i, ")"));
            }
        }
    }
    arr.nbytes = r.pos() - start;
    return arr;
}

// Reads and decodes one top-level value of `type`.
absl::StatusOr<GgufFile::Value> ReadValue(Reader& r, GgufValueType type, std::string_view what) {
    GgufFile::Value value{type, uint64_t{0}};
    switch (type) {
        case GgufValueType::kString: {
            PP_ASSIGN_OR_RETURN(value.v, r.ReadString(what));
            return value;
        }
        case GgufValueType::kArray: {
            PP_ASSIGN_OR_RETURN(value.v, ReadArray(r, what, 1));
            return value;
        }
        case GgufValueType::kBool: {
            PP_ASSIGN_OR_RETURN(uint8_t b, r.Read<uint8_t>(what));
            PP_RETURN_IF_ERROR(ValidateBool(b, what));
            value.v.emplace<bool>(b == 1);
            return value;
        }
        case GgufValueType::kFloat32: {
            PP_ASSIGN_OR_RETURN(float f, r.Read<float>(what));
            value.v = static_cast<double>(f);
            return value;
        }
        case GgufValueType::kFloat64: {
            PP_ASSIGN_OR_RETURN(value.v, r.Read<double>(what));
            return value;
        }
        default: {
            const uint64_t width = ScalarBytes(type);
            PP_RETURN_IF_ERROR(r.Need(width, what));
            IntValue iv = LoadInteger(type, r.here());
            PP_RETURN_IF_ERROR(r.Skip(width, what));
            if (IsSignedType(type)) {
                value.v = iv.as_signed;
            } else {
                value.v = iv.magnitude_or_value;
            }
            return value;
        }
    }
}

std::string TypeDescription(const GgufFile::Value& v) {
    if (v.type == GgufValueType::kArray) {
        return absl::StrCat("array of ",
                            ValueTypeName(std::get<GgufFile::Value::Array>(v.v).elem_type));
    }
    return ValueTypeName(v.type);
}

absl::Status WrongType(std::string_view key, std::string_view expected, const GgufFile::Value& v) {
    return absl::InvalidArgumentError(absl::StrCat("key ", Quote(key), " has type ",
                                                   TypeDescription(v), ", expected ", Av(expected)));
}

}  // namespace

// ---------------------------------------------------------------------------
// Types

const char* GgmlTypeName(GgmlType type) {
    const char* name = KnownGgmlTypeName(static_cast<uint32_t>(type));
    return name != nullptr ? name : "unknown";
}

absl::StatusOr<uint64_t> GgmlTypeBytes(GgmlType type, uint64_t n_elements) {
    uint64_t per = 0;
    switch (type) {
        case GgmlType::kF32:  per = 4; break;
        case GgmlType::kF16:
        case GgmlType::kBF16: per = 2; break;
        default: {
            const std::optional<cpu::QuantType> q = cpu::QuantTypeOfGgml(static_cast<uint32_t>(type));
            if (!q) {
                return absl::InvalidArgumentError(
                    absl::StrCat("unsupported tensor type ", static_cast<uint32_t>(type)));
            }
            const uint64_t elems = cpu::QuantBlockElems(*q);
            if (n_elements % elems != 0) {
                return absl::InvalidArgumentError(absl::StrCat(
                    GgmlTypeName(type), " needs a multiple of ", elems, " elements, got ", n_elements));
            }
            uint64_t bytes;
            if (__builtin_mul_overflow(n_elements / elems, static_cast<uint64_t>(cpu::QuantBlockBytes(*q)), &bytes)) {
                return absl::InvalidArgumentError(
                    absl::StrCat(GgmlTypeName(type), " byte size of ", n_elements, " elements overflows"));
            }
            return bytes;
        }
    }
    uint64_t bytes;
    if (__builtin_mul_overflow(n_elements, per, &bytes)) {
        return absl::InvalidArgumentError(absl::StrCat(
            GgmlTypeName(type), " byte size of ", n_elements, " elements overflows"));
    }
    return bytes;
}

uint64_t GgufTensor::n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;   // validated at parse time not to overflow
    return n;
}

// ---------------------------------------------------------------------------
// Opening

GgufFile::GgufFile() = default;

GgufFile::~GgufFile() {
    if (mapping_ != nullptr) munmap(mapping_, size_);
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT) return absl::NotFoundError(absl::StrCat("no such file: ", path));
        return absl::ErrnoToStatus(err, absl::StrCat("cannot open ", path));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return absl::ErrnoToStatus(err, absl::StrCat("cannot stat ", path));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
    }

    std::unique_ptr<GgufFile> file(new GgufFile());
    file->size_ = static_cast<uint64_t>(st.st_size);
    // mmap rejects a zero length, and an empty file has nothing to map: let
    // Parse() report it as truncated instead.
    if (file->size_ > 0) {
        void* m = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            return absl::ErrnoToStatus(err, absl::StrCat("cannot mmap ", path));
        }
        file->mapping_ = m;
        file->base_ = static_cast<const uint8_t*>(m);
    }
    ::close(fd);   // the mapping keeps the file contents reachable

    absl::Status s = file->Parse();
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
    return file;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::FromBytes(std::vector<uint8_t> bytes) {
    std::unique_ptr<GgufFile> file(new GgufFile());
    file->owned_ = std::move(bytes);
    file->base_ = file->owned_.data();
    file->size_ = file->owned_.size();
    PP_RETURN_IF_ERROR(file->Parse());
    return file;
}

// ---------------------------------------------------------------------------
// Parsing

namespace {

absl::Status CheckMagic(Reader& r) {
    PP_RETURN_IF_ERROR(r.Need(4, "magic"));
    if (std::memcmp(r.here(), "GGUF", 4) != 0) {
        const uint8_t* m = r.here();
        return absl::InvalidArgumentError(absl::StrCat(
            "bad magic ", Hex2(m[0]), " ", Hex2(m[1]), " ", Hex2(m[2]), " ", Hex2(m[3]),
            ", expected \"GGUF\" (not a GGUF file)"));
    }
    return r.Skip(4, "magic");
}

absl::StatusOr<uint32_t> ReadVersion(Reader& r) {
    PP_ASSIGN_OR_RETURN(uint32_t version, r.Read<uint32_t>("version"));
    if (version == 2 || version == 3) return version;
    if (version == 1) {
        return absl::InvalidArgumentError(
            "unsupported GGUF version 1 (it used 32-bit counts); only versions 2 and 3 are read");
    }
    std::string hint;
    uint32_t swapped = __builtin_bswap32(version);
    if (swapped == 2 || swapped == 3) hint = " (this looks like a big-endian file)";
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported GGUF version ", version, "; only versions 2 and 3 are read", hint));
}

// Validates one tensor info's dims and type and computes its byte size. A
// type prepack cannot read is not an error here but added to `unsupported`,
// so the file's error can name every such tensor.
absl::Status ValidateTensorShape(GgufTensor& t, uint32_t type_id, std::vector<std::string>* unsupported) {
    uint64_t n = 1;
    for (size_t d = 0; d < t.ne.size(); ++d) {
        if (t.ne[d] == 0) {
            return absl::InvalidArgumentError(absl::StrCat(
                "tensor ", Quote(t.name), " has a zero dimension ne[", d, "]"));
        }
        // ggml counts elements in int64_t, so the product must fit there too.
        if (__builtin_mul_overflow(n, t.ne[d], &n) || n > static_cast<uint64_t>(INT64_MAX)) {
            return absl::InvalidArgumentError(absl::StrCat(
                "tensor ", Quote(t.name), " element count overflows (dims product too large)"));
        }
    }
    if (!IsSupportedGgmlType(type_id)) {
        const char* known = KnownGgmlTypeName(type_id);
        unsupported->push_back(absl::StrCat(Quote(t.name), " (type ", type_id, known ? absl::StrCat(", ", known) : ", unknown", ")"));
        t.type = GgmlType::kF32;   // never placed: the file is refused after the last tensor info
        return absl::OkStatus();
    }
    t.type = static_cast<GgmlType>(type_id);
    if (const std::optional<cpu::QuantType> q = cpu::QuantTypeOfGgml(type_id);
        q && t.ne[0] % static_cast<uint64_t>(cpu::QuantBlockElems(*q)) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor ", Quote(t.name), " of type ", GgmlTypeName(t.type), " has ne[0] = ", t.ne[0],
            ", not a multiple of the block size ", cpu::QuantBlockElems(*q)));
    }
    auto bytes = GgmlTypeBytes(t.type, n);
    if (!bytes.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor ", Quote(t.name), ": ", bytes.status().message()));
    }
    t.nbytes = *bytes;
    return absl::OkStatus();
}

absl::StatusOr<GgufTensor> ReadTensorInfo(Reader& r, uint64_t index, std::vector<std::string>* unsupported) {
    GgufTensor t;
    PP_ASSIGN_OR_RETURN(std::string_view name,
                        r.ReadString(absl::StrCat("name of tensor #", index)));
    if (name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("tensor #", index, " has an empty name"));
    }
    t.name = std::string(name);
    const std::string what = absl::StrCat("tensor ", Quote(t.name));

    PP_ASSIGN_OR_RETURN(uint32_t n_dims, r.Read<uint32_t>(absl::StrCat("n_dims of ", Av(what))));
    if (n_dims == 0 || n_dims > kMaxDims) {
        return absl::InvalidArgumentError(absl::StrCat(
            Av(what), " has n_dims ", n_dims, " (must be 1..", kMaxDims, ")"));
    }
    for (uint32_t d = 0; d < n_dims; ++d) {
        PP_ASSIGN_OR_RETURN(uint64_t ne, r.Read<uint64_t>(absl::StrCat("ne[", d, "] of ", Av(what))));
        t.ne.push_back(ne);
    }
    PP_ASSIGN_OR_RETURN(uint32_t type_id, r.Read<uint32_t>(absl::StrCat("type of ", Av(what))));
    PP_ASSIGN_OR_RETURN(t.offset, r.Read<uint64_t>(absl::StrCat("offset of ", Av(what))));
    PP_RETURN_IF_ERROR(ValidateTensorShape(t, type_id, unsupported));
    return t;
}

absl::Status CheckUniqueTensorNames(const std::vector<GgufTensor>& tensors) {
    std::set<std::string_view> names;   // views into `tensors`, which no longer grows
    for (const GgufTensor& t : tensors) {
        if (!names.insert(t.name).second) {
            return absl::InvalidArgumentError(
                absl::StrCat("duplicate tensor name ", Quote(t.name)));
        }
    }
    return absl::OkStatus();
}

// Checks alignment and bounds of one tensor's data and points it into the file.
absl::Status PlaceTensor(GgufTensor& t, const uint8_t* base, uint64_t size,
                         uint64_t data_start, uint32_t alignment) {
    if (t.offset % alignment != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor ", Quote(t.name), " offset ", t.offset, " is not aligned to ", alignment));
    }
    // data_start + offset + nbytes <= size, arranged so nothing can overflow.
    const uint64_t avail = data_start <= size ? size - data_start : 0;
    if (t.offset > avail || t.nbytes > avail - t.offset) {
        return absl::DataLossError(absl::StrCat(
            "truncated: data of tensor ", Quote(t.name), " needs ", t.nbytes,
            " bytes at offset ", data_start, " + ", t.offset,
            ", past the end of the file (file has ", size, ")"));
    }
    t.data = base + data_start + t.offset;
    return absl::OkStatus();
}

// Tensors must not share bytes: a loader may convert one in place.
absl::Status CheckNoOverlap(const std::vector<GgufTensor>& tensors) {
    std::vector<const GgufTensor*> by_offset;
    by_offset.reserve(tensors.size());   // already parsed, so bounded by the file
    for (const GgufTensor& t : tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const GgufTensor& prev = *by_offset[i - 1];
        const GgufTensor& cur = *by_offset[i];
        // Both were bounds-checked, so offset + nbytes cannot overflow.
        if (cur.offset < prev.offset + prev.nbytes) {
            return absl::InvalidArgumentError(absl::StrCat(
                "tensors ", Quote(prev.name), " and ", Quote(cur.name), " overlap (",
                prev.name, " spans [", prev.offset, ", ", prev.offset + prev.nbytes, "), ",
                cur.name, " starts at ", cur.offset, ")"));
        }
    }
    return absl::OkStatus();
}

}  // namespace

absl::Status GgufFile::Parse() {
    Reader r(base_, size_);
    PP_RETURN_IF_ERROR(CheckMagic(r));
    PP_ASSIGN_OR_RETURN(version_, ReadVersion(r));
    PP_ASSIGN_OR_RETURN(uint64_t tensor_count, r.Read<uint64_t>("tensor_count"));
    PP_ASSIGN_OR_RETURN(uint64_t kv_count, r.Read<uint64_t>("metadata_kv_count"));
    PP_RETURN_IF_ERROR(CheckCount(tensor_count, kMinTensorInfoBytes, size_, "tensor_count"));
    PP_RETURN_IF_ERROR(CheckCount(kv_count, kMinKvBytes, size_, "metadata_kv_count"));

    // ---- metadata ----
    for (uint64_t i = 0; i < kv_count; ++i) {
        PP_ASSIGN_OR_RETURN(std::string_view key, r.ReadString(absl::StrCat("key #", i)));
        if (key.empty()) {
            return absl::InvalidArgumentError(absl::StrCat("key #", i, " is empty"));
        }
        if (kv_.find(key) != kv_.end()) {
            return absl::InvalidArgumentError(absl::StrCat("duplicate key ", Quote(key)));
        }
        const std::string what = absl::StrCat("key ", Quote(key));
        GgufValueType type;
        PP_RETURN_IF_ERROR(ReadValueType(r, what, &type));
        PP_ASSIGN_OR_RETURN(Value value, ReadValue(r, type, what));
        key_order_.emplace_back(key);
        kv_.emplace(std::string(key), std::make_unique<Value>(std::move(value)));
    }

    // ---- alignment ----
    if (auto it = kv_.find(std::string_view("general.alignment")); it != kv_.end()) {
        const Value& v = *it->second;
        if (v.type != GgufValueType::kUint32) {
            return absl::InvalidArgumentError(absl::StrCat(
                "general.alignment must be uint32, got ", TypeDescription(v)));
        }
        uint64_t a = std::get<uint64_t>(v.v);
        if (a == 0 || !std::has_single_bit(a)) {
            return absl::InvalidArgumentError(absl::StrCat(
                "general.alignment ", a, " is not a nonzero power of two"));
        }
        alignment_ = static_cast<uint32_t>(a);
    } else {
        alignment_ = kDefaultAlignment;
    }

    // ---- tensor infos ----
    std::vector<std::string> unsupported;
    for (uint64_t i = 0; i < tensor_count; ++i) {
        PP_ASSIGN_OR_RETURN(GgufTensor t, ReadTensorInfo(r, i, &unsupported));
        tensors_.push_back(std::move(t));
    }
    if (!unsupported.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            unsupported.size(), " of ", tensor_count, " tensors have a type prepack cannot read (it reads ",
            kSupportedTypes, "): ", absl::StrJoin(unsupported, ", ")));
    }
    PP_RETURN_IF_ERROR(CheckUniqueTensorNames(tensors_));

    // ---- tensor data ----
    // The data section starts at the first multiple of the alignment after
    // the infos. With no tensors the file may end before that point.
    const uint64_t data_start = (r.pos() + alignment_ - 1) / alignment_ * alignment_;
    for (GgufTensor& t : tensors_) {
        PP_RETURN_IF_ERROR(PlaceTensor(t, base_, size_, data_start, alignment_));
    }
    return CheckNoOverlap(tensors_);
}


// ---------------------------------------------------------------------------
// Metadata access

bool GgufFile::Has(std::string_view key) const { return kv_.find(key) != kv_.end(); }

namespace {

absl::Status Missing(std::string_view key) {
    return absl::NotFoundError(absl::StrCat("metadata key ", Quote(key), " not found"));
}

}  // namespace

absl::StatusOr<GgufValueType> GgufFile::TypeOf(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    return it->second->type;
}

absl::StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    const Value& v = *it->second;
    if (v.type != GgufValueType::kString) return WrongType(key, "string", v);
    return std::string(std::get<std::string_view>(v.v));
}

absl::StatusOr<uint64_t> GgufFile::GetUint(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    const Value& v = *it->second;
    if (IsUnsignedType(v.type)) return std::get<uint64_t>(v.v);
    if (IsSignedType(v.type)) {
        int64_t i = std::get<int64_t>(v.v);
        if (i < 0) {
            return absl::InvalidArgumentError(absl::StrCat(
                "key ", Quote(key), " has negative value ", i, ", expected an unsigned integer"));
        }
        return static_cast<uint64_t>(i);
    }
    return WrongType(key, "an integer", v);
}

absl::StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    const Value& v = *it->second;
    if (v.type == GgufValueType::kFloat32 || v.type == GgufValueType::kFloat64) {
        return std::get<double>(v.v);
    }
    if (IsUnsignedType(v.type)) return static_cast<double>(std::get<uint64_t>(v.v));
    if (IsSignedType(v.type)) return static_cast<double>(std::get<int64_t>(v.v));
    return WrongType(key, "a number", v);
}

absl::StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    const Value& v = *it->second;
    if (v.type != GgufValueType::kBool) return WrongType(key, "bool", v);
    return std::get<bool>(v.v);
}

absl::StatusOr<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    const Value& v = *it->second;
    if (v.type != GgufValueType::kArray ||
        std::get<Value::Array>(v.v).elem_type != GgufValueType::kString) {
        return WrongType(key, "array of string", v);
    }
    // Elements were validated at parse time, so this walk stays in bounds.
    const Value::Array& a = std::get<Value::Array>(v.v);
    std::vector<std::string> out;
    out.reserve(a.count);
    const uint8_t* p = a.data;
    for (uint64_t i = 0; i < a.count; ++i) {
        const uint64_t len = Load<uint64_t>(p);
        out.emplace_back(reinterpret_cast<const char*>(p + 8), len);
        p += 8 + len;
    }
    return out;
}

// Accepts float32 and float64 elements (float64 is narrowed).
absl::StatusOr<std::vector<float>> GgufFile::GetFloatArray(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    const Value& v = *it->second;
    const Value::Array* a = std::get_if<Value::Array>(&v.v);
    if (a == nullptr || (a->elem_type != GgufValueType::kFloat32 &&
                         a->elem_type != GgufValueType::kFloat64)) {
        return WrongType(key, "array of float32", v);
    }
    std::vector<float> out(a->count);
    for (uint64_t i = 0; i < a->count; ++i) {
        out[i] = a->elem_type == GgufValueType::kFloat32
                     ? Load<float>(a->data + 4 * i)
                     : static_cast<float>(Load<double>(a->data + 8 * i));
    }
    return out;
}

// Accepts any integer element type (writers disagree on int32 vs uint32 for
// token types and ids) as long as every element fits in int32.
absl::StatusOr<std::vector<int32_t>> GgufFile::GetInt32Array(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return Missing(key);
    const Value& v = *it->second;
    const Value::Array* a = std::get_if<Value::Array>(&v.v);
    if (a == nullptr || !IsIntegerType(a->elem_type)) {
        return WrongType(key, "array of int32", v);
    }
    const uint64_t width = ScalarBytes(a->elem_type);
    std::vector<int32_t> out(a->count);
    for (uint64_t i = 0; i < a->count; ++i) {
        IntValue iv = LoadInteger(a->elem_type, a->data + width * i);
        const bool fits = iv.negative ? iv.as_signed >= INT32_MIN
                                      : iv.magnitude_or_value <= static_cast<uint64_t>(INT32_MAX);
        if (!fits) {
            return absl::InvalidArgumentError(absl::StrCat(
                "key ", Quote(key), " element ", i, " (",
                iv.negative ? absl::StrCat(iv.as_signed) : absl::StrCat(iv.magnitude_or_value),
                ") does not fit in int32"));
        }
        out[i] = static_cast<int32_t>(iv.as_signed);
    }
    return out;
}

std::vector<std::string> GgufFile::Keys() const { return key_order_; }

std::string GgufFile::ValueSummary(std::string_view key) const {
    auto it = kv_.find(key);
    if (it == kv_.end()) return "<missing>";
    const Value& v = *it->second;
    switch (v.type) {
        case GgufValueType::kString:
            return SummarizeString(std::get<std::string_view>(v.v));
        case GgufValueType::kArray: {
            const Value::Array& a = std::get<Value::Array>(v.v);
            return absl::StrCat("[", ValueTypeName(a.elem_type), " x ", a.count, "]");
        }
        case GgufValueType::kBool:
            return std::get<bool>(v.v) ? "true" : "false";
        case GgufValueType::kFloat32:
        case GgufValueType::kFloat64:
            return absl::StrCat(std::get<double>(v.v));
        default:
            if (IsSignedType(v.type)) return absl::StrCat(std::get<int64_t>(v.v));
            return absl::StrCat(std::get<uint64_t>(v.v));
    }
}

const GgufTensor* GgufFile::FindTensor(std::string_view name) const {
    for (const GgufTensor& t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

// ---------------------------------------------------------------------------
// Element conversions

float Fp16ToFp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);   // inf, or NaN keeping its payload
    } else if (exp != 0) {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;   // signed zero
    } else {
        // Subnormal: mant * 2^-24. Shift the leading one up to the implicit
        // bit position, lowering the exponent once per shift.
        uint32_t e = 127 - 15 + 1;
        while ((mant & 0x400) == 0) {
            mant <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mant & 0x3ff) << 13);
    }
    return std::bit_cast<float>(bits);
}

uint16_t Fp32ToFp16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    const uint32_t abs = x & 0x7fffffff;
    const uint32_t exp = abs >> 23;
    const uint32_t mant = abs & 0x7fffff;

    if (exp == 0xff) {
        if (mant == 0) return sign | 0x7c00;   // inf
        // NaN: keep the top payload bits and force the quiet bit so it stays NaN.
        return sign | 0x7e00 | static_cast<uint16_t>(mant >> 13);
    }
    if (exp >= 127 + 16) return sign | 0x7c00;   // >= 65536: overflows to inf
    if (exp >= 127 - 14) {
        // Normal half (before rounding). Round to nearest even on the 13
        // dropped bits; a carry correctly bumps the exponent, up to inf.
        uint32_t h = ((exp - 127 + 15) << 10) | (mant >> 13);
        const uint32_t rest = mant & 0x1fff;
        if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
        return sign | static_cast<uint16_t>(h);
    }
    // Subnormal half (or zero): the result counts units of 2^-24. With the
    // implicit bit the value is m * 2^(exp - 150), i.e. m >> (126 - exp) units.
    if (exp < 126 - 24) return sign;   // below half the smallest subnormal
    const uint32_t m = mant | 0x800000;
    const uint32_t shift = 126 - exp;   // 14..24
    uint32_t h = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) ++h;   // may reach the smallest normal
    return sign | static_cast<uint16_t>(h);
}

float Bf16ToFp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t Fp32ToBf16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffff) > 0x7f800000) {
        // Truncating a NaN could clear every payload bit left; set the quiet bit.
        return static_cast<uint16_t>((x >> 16) | 0x0040);
    }
    // Round to nearest even: add just under half, plus one when the kept
    // lsb is odd. Overflow rounds into the inf encoding, as it should.
    const uint32_t rounded = x + 0x7fff + ((x >> 16) & 1);
    return static_cast<uint16_t>(rounded >> 16);
}

void DequantizeRow(GgmlType type, const uint8_t* src, float* dst, uint64_t n) {
    switch (type) {
        case GgmlType::kF32:
            std::memcpy(dst, src, n * sizeof(float));
            return;
        case GgmlType::kF16:
            for (uint64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(Load<uint16_t>(src + 2 * i));
            return;
        case GgmlType::kBF16:
            for (uint64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(Load<uint16_t>(src + 2 * i));
            return;
        case GgmlType::kQ4_0:
        case GgmlType::kQ4_1:
        case GgmlType::kQ5_0:
        case GgmlType::kQ5_1:
        case GgmlType::kQ8_0:
        case GgmlType::kQ4_K:
        case GgmlType::kQ5_K:
        case GgmlType::kQ6_K:
            cpu::DequantizeQuantRow(*cpu::QuantTypeOfGgml(static_cast<uint32_t>(type)), src, dst,
                                    static_cast<int64_t>(n));
            return;
    }
    // Not reachable for a validated tensor; make misuse visible rather than silent.
    std::fill(dst, dst + n, std::numeric_limits<float>::quiet_NaN());
}

}  // namespace prepack
