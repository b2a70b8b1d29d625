// Tests for the GGUF reader: a round trip of every metadata and tensor type,
// a table of hostile files (each must fail with the right code and a message
// naming the problem), truncation and random corruption sweeps, Open() on
// real and missing files, and exact fp16/bf16 conversions.
#include "core/model/gguf.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/gguf_builder.h"

namespace prepack {
namespace {

using test::GgufBuilder;
using test::TempGgufFile;

// Checks the status code and that the message mentions every word.
::testing::AssertionResult IsError(const absl::Status& s, absl::StatusCode code,
                                   const std::vector<std::string>& words) {
    if (s.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
    const std::string msg(s.message());
    if (s.code() != code) {
        return ::testing::AssertionFailure()
               << "expected code " << absl::StatusCodeToString(code) << ", got " << s;
    }
    for (const std::string& w : words) {
        if (msg.find(w) == std::string::npos) {
            return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << w << "\"";
        }
    }
    return ::testing::AssertionSuccess();
}

absl::Status ParseStatus(const std::vector<uint8_t>& bytes) {
    return GgufFile::FromBytes(bytes).status();
}

std::vector<uint8_t> U16Bytes(const std::vector<uint16_t>& v) { return GgufBuilder::ToBytes(v); }

// One Q8_0 block: fp16 scale bits then 32 int8 quants.
std::vector<uint8_t> Q8Block(uint16_t d_bits, const std::vector<int8_t>& q) {
    std::vector<uint8_t> out;
    GgufBuilder::Put<uint16_t>(out, d_bits);
    for (int8_t v : q) out.push_back(static_cast<uint8_t>(v));
    return out;
}

// ---------------------------------------------------------------------------
// A valid file with every metadata type and one tensor of each supported type.

struct ValidFile {
    std::vector<int8_t> q0, q1;   // Q8_0 quants of the two blocks
    std::vector<uint8_t> f32_bytes, f16_bytes, bf16_bytes, q8_bytes;
    GgufBuilder builder;
};

ValidFile MakeValidFile() {
    ValidFile v;
    for (int i = 0; i < 32; ++i) {
        v.q0.push_back(static_cast<int8_t>(i - 16));      // -16..15
        v.q1.push_back(static_cast<int8_t>(8 * i - 128)); // -128..120
    }
    v.f32_bytes = GgufBuilder::ToBytes(std::vector<float>{1.5f, -2.0f, 0.25f, 3.0f, -0.125f, 1e-3f});
    // 1.0, -2.0, 0.5, 65504 as fp16 bit patterns.
    v.f16_bytes = U16Bytes({0x3C00, 0xC000, 0x3800, 0x7BFF});
    // 1.0, -3.0, 3.140625, 0.25 as bf16 bit patterns.
    v.bf16_bytes = U16Bytes({0x3F80, 0xC040, 0x4049, 0x3E80});
    v.q8_bytes = Q8Block(0x3800, v.q0);            // d = 0.5
    const std::vector<uint8_t> b1 = Q8Block(0x4000, v.q1);   // d = 2.0
    v.q8_bytes.insert(v.q8_bytes.end(), b1.begin(), b1.end());

    // Nested array value: [[1, 2], [3]] of uint8.
    std::vector<uint8_t> nested = GgufBuilder::EncodeArray(0, 2, {1, 2});
    const std::vector<uint8_t> inner2 = GgufBuilder::EncodeArray(0, 1, {3});
    nested.insert(nested.end(), inner2.begin(), inner2.end());

    GgufBuilder& b = v.builder;
    b.AddString("general.architecture", "llama")
        .AddUint8("t.u8", 200)
        .AddInt8("t.i8", -100)
        .AddUint16("t.u16", 60000)
        .AddInt16("t.i16", -30000)
        .AddUint32("t.u32", 4000000000u)
        .AddInt32("t.i32", -2000000000)
        .AddFloat32("t.f32", 0.5f)
        .AddBool("t.bool_true", true)
        .AddBool("t.bool_false", false)
        .AddString("t.str", "héllo\nworld")
        .AddString("t.empty_str", "")
        .AddUint64("t.u64", std::numeric_limits<uint64_t>::max())
        .AddInt64("t.i64", -7)
        .AddFloat64("t.f64", 2.718281828459045)
        .AddStringArray("t.tokens", {"<unk>", "", "▁the"})
        .AddFloat32Array("t.scores", {0.0f, -1.5f, 2.25f})
        .AddInt32Array("t.types", {1, -2, 3})
        .AddUint32Array("t.u32s", {7, 8})
        .AddInt64Array("t.i64s", {-5, 6})
        .AddFloat64Array("t.f64s", {0.1, 1e300})
        .AddBoolArray("t.bools", {true, false, true})
        .AddUint8Array("t.empty", {})
        .AddRawArray("t.nested", GgufValueType::kArray, 2, nested)
        .SetAlignment(32);
    b.AddTensor("f32", {3, 2}, GgmlType::kF32, v.f32_bytes)
        .AddTensor("f16", {4}, GgmlType::kF16, v.f16_bytes)
        .AddTensor("bf16", {2, 1, 2}, GgmlType::kBF16, v.bf16_bytes)
        .AddTensor("q8", {32, 2}, GgmlType::kQ8_0, v.q8_bytes);
    return v;
}

std::vector<float> Dequantize(const GgufTensor& t) {
    std::vector<float> out(t.n_elements());
    DequantizeRow(t.type, t.data, out.data(), out.size());
    return out;
}

TEST(GgufRoundTrip, MetadataOfEveryType) {
    ValidFile v = MakeValidFile();
    auto file_or = GgufFile::FromBytes(v.builder.Build());
    ASSERT_TRUE(file_or.ok()) << file_or.status();
    const GgufFile& f = **file_or;

    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(*f.GetString("general.architecture"), "llama");
    EXPECT_EQ(*f.GetUint("t.u8"), 200u);
    EXPECT_EQ(*f.GetFloat("t.i8"), -100.0);
    EXPECT_EQ(*f.GetUint("t.u16"), 60000u);
    EXPECT_EQ(*f.GetFloat("t.i16"), -30000.0);
    EXPECT_EQ(*f.GetUint("t.u32"), 4000000000u);
    EXPECT_EQ(*f.GetFloat("t.i32"), -2000000000.0);
    EXPECT_EQ(*f.GetFloat("t.f32"), 0.5);
    EXPECT_TRUE(*f.GetBool("t.bool_true"));
    EXPECT_FALSE(*f.GetBool("t.bool_false"));
    EXPECT_EQ(*f.GetString("t.str"), "héllo\nworld");
    EXPECT_EQ(*f.GetString("t.empty_str"), "");
    EXPECT_EQ(*f.GetUint("t.u64"), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(*f.GetFloat("t.i64"), -7.0);
    EXPECT_EQ(*f.GetFloat("t.f64"), 2.718281828459045);

    EXPECT_EQ(*f.GetStringArray("t.tokens"), (std::vector<std::string>{"<unk>", "", "▁the"}));
    EXPECT_EQ(*f.GetFloatArray("t.scores"), (std::vector<float>{0.0f, -1.5f, 2.25f}));
    EXPECT_EQ(*f.GetInt32Array("t.types"), (std::vector<int32_t>{1, -2, 3}));
    EXPECT_EQ(*f.GetInt32Array("t.u32s"), (std::vector<int32_t>{7, 8}));
    EXPECT_EQ(*f.GetInt32Array("t.i64s"), (std::vector<int32_t>{-5, 6}));
    EXPECT_EQ(*f.GetFloatArray("t.f64s"), (std::vector<float>{0.1f, std::numeric_limits<float>::infinity()}));
    EXPECT_TRUE(f.GetInt32Array("t.empty")->empty());

    EXPECT_EQ(*f.TypeOf("t.u8"), GgufValueType::kUint8);
    EXPECT_EQ(*f.TypeOf("t.i64"), GgufValueType::kInt64);
    EXPECT_EQ(*f.TypeOf("t.bools"), GgufValueType::kArray);
    EXPECT_EQ(*f.TypeOf("t.nested"), GgufValueType::kArray);
    EXPECT_TRUE(f.Has("t.f64"));
    EXPECT_FALSE(f.Has("t.nope"));

    const std::vector<std::string> keys = f.Keys();
    ASSERT_EQ(keys.size(), 25u);
    EXPECT_EQ(keys.front(), "general.architecture");
    EXPECT_EQ(keys[1], "t.u8");
    EXPECT_EQ(keys.back(), "general.alignment");
}

TEST(GgufRoundTrip, ValueSummary) {
    GgufBuilder b = MakeValidFile().builder;
    const std::string long_str(100, 'x');
    b.AddString("t.long", long_str).AddString("t.ctl", std::string("a\x01\"b", 4));
    auto f = GgufFile::FromBytes(b.Build());
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->ValueSummary("general.architecture"), "\"llama\"");
    EXPECT_EQ((*f)->ValueSummary("t.str"), "\"héllo\\nworld\"");
    EXPECT_EQ((*f)->ValueSummary("t.u8"), "200");
    EXPECT_EQ((*f)->ValueSummary("t.i64"), "-7");
    EXPECT_EQ((*f)->ValueSummary("t.u64"), "18446744073709551615");
    EXPECT_EQ((*f)->ValueSummary("t.f32"), "0.5");
    EXPECT_EQ((*f)->ValueSummary("t.bool_true"), "true");
    EXPECT_EQ((*f)->ValueSummary("t.tokens"), "[string x 3]");
    EXPECT_EQ((*f)->ValueSummary("t.scores"), "[float32 x 3]");
    EXPECT_EQ((*f)->ValueSummary("t.nested"), "[array x 2]");
    EXPECT_EQ((*f)->ValueSummary("t.long"), "\"" + std::string(60, 'x') + "\"... (100 bytes)");
    EXPECT_EQ((*f)->ValueSummary("t.ctl"), "\"a\\x01\\\"b\"");   // "a\x01\"b"
    EXPECT_EQ((*f)->ValueSummary("t.nope"), "<missing>");
}

TEST(GgufRoundTrip, TensorsOfEverySupportedType) {
    ValidFile v = MakeValidFile();
    GgufBuilder::Layout layout;
    const std::vector<uint8_t> bytes = v.builder.Build(&layout);
    auto file_or = GgufFile::FromBytes(bytes);
    ASSERT_TRUE(file_or.ok()) << file_or.status();
    const GgufFile& f = **file_or;

    ASSERT_EQ(f.tensors().size(), 4u);
    EXPECT_EQ(f.tensors()[0].name, "f32");
    EXPECT_EQ(f.tensors()[3].name, "q8");
    EXPECT_EQ(f.FindTensor("nope"), nullptr);

    struct Expect {
        const char* name;
        std::vector<uint64_t> ne;
        GgmlType type;
        uint64_t nbytes;
        const std::vector<uint8_t>* data;
    };
    const Expect expects[] = {
        {"f32", {3, 2}, GgmlType::kF32, 24, &v.f32_bytes},
        {"f16", {4}, GgmlType::kF16, 8, &v.f16_bytes},
        {"bf16", {2, 1, 2}, GgmlType::kBF16, 8, &v.bf16_bytes},
        {"q8", {32, 2}, GgmlType::kQ8_0, 68, &v.q8_bytes},
    };
    for (const Expect& e : expects) {
        SCOPED_TRACE(e.name);
        const GgufTensor* t = f.FindTensor(e.name);
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->ne, e.ne);
        EXPECT_EQ(t->type, e.type);
        EXPECT_EQ(t->nbytes, e.nbytes);
        EXPECT_EQ(t->offset % 32, 0u);
        // The data pointer must land exactly where the builder wrote the bytes.
        EXPECT_EQ(layout.data_start + t->offset, layout.tensor_data_start.at(e.name));
        ASSERT_EQ(t->nbytes, e.data->size());
        EXPECT_EQ(std::memcmp(t->data, e.data->data(), t->nbytes), 0);
    }

    EXPECT_EQ(Dequantize(*f.FindTensor("f32")),
              (std::vector<float>{1.5f, -2.0f, 0.25f, 3.0f, -0.125f, 1e-3f}));
    EXPECT_EQ(Dequantize(*f.FindTensor("f16")), (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f}));
    EXPECT_EQ(Dequantize(*f.FindTensor("bf16")), (std::vector<float>{1.0f, -3.0f, 3.140625f, 0.25f}));
    const std::vector<float> q8 = Dequantize(*f.FindTensor("q8"));
    ASSERT_EQ(q8.size(), 64u);
    for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(q8[i], 0.5f * static_cast<float>(i - 16)) << i;
        EXPECT_EQ(q8[32 + i], 2.0f * static_cast<float>(8 * i - 128)) << i;
    }
}

TEST(GgufRoundTrip, LargerAlignmentIsHonoured) {
    GgufBuilder b;
    b.AddString("general.architecture", "llama").SetAlignment(256);
    b.AddTensorF32("a", {3}, {1, 2, 3}).AddTensorF32("b", {2}, {4, 5});
    GgufBuilder::Layout layout;
    auto f = GgufFile::FromBytes(b.Build(&layout));
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->alignment(), 256u);
    EXPECT_EQ(layout.data_start % 256, 0u);
    EXPECT_EQ((*f)->FindTensor("b")->offset, 256u);
    EXPECT_EQ(Dequantize(*(*f)->FindTensor("b")), (std::vector<float>{4, 5}));
}

TEST(GgufRoundTrip, Version2AndNoTensorsAndTrailingBytes) {
    GgufBuilder b;
    b.AddString("general.architecture", "llama").OverrideVersion(2);
    auto f = GgufFile::FromBytes(b.Build());
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->version(), 2u);
    EXPECT_TRUE((*f)->tensors().empty());
    EXPECT_EQ((*f)->alignment(), 32u);   // the default

    GgufBuilder with_tail;
    with_tail.AddTensorF32("w", {2}, {1, 2}).AppendTrailingBytes({9, 9, 9});
    EXPECT_TRUE(GgufFile::FromBytes(with_tail.Build()).ok());
}

// ---------------------------------------------------------------------------
// Getter type checks

TEST(GgufGetters, WrongTypeAndMissing) {
    GgufBuilder b;
    b.AddString("s", "text").AddInt32("neg", -3).AddUint32("u", 5).AddBool("flag", true)
        .AddFloat32Array("fa", {1.0f}).AddUint32Array("big", {1, 3000000000u})
        .AddInt64Array("small", {-2147483648LL, 2147483647LL}).AddStringArray("sa", {"a"});
    auto fo = GgufFile::FromBytes(b.Build());
    ASSERT_TRUE(fo.ok()) << fo.status();
    const GgufFile& f = **fo;

    EXPECT_TRUE(IsError(f.GetString("absent").status(), absl::StatusCode::kNotFound, {"'absent'"}));
    EXPECT_TRUE(IsError(f.GetUint("absent").status(), absl::StatusCode::kNotFound, {"absent"}));
    EXPECT_TRUE(IsError(f.TypeOf("absent").status(), absl::StatusCode::kNotFound, {"absent"}));
    EXPECT_TRUE(IsError(f.GetStringArray("absent").status(), absl::StatusCode::kNotFound, {"absent"}));

    EXPECT_TRUE(IsError(f.GetString("u").status(), absl::StatusCode::kInvalidArgument,
                        {"'u'", "uint32", "expected string"}));
    EXPECT_TRUE(IsError(f.GetUint("s").status(), absl::StatusCode::kInvalidArgument,
                        {"'s'", "string", "integer"}));
    EXPECT_TRUE(IsError(f.GetUint("neg").status(), absl::StatusCode::kInvalidArgument,
                        {"'neg'", "negative", "-3"}));
    EXPECT_TRUE(IsError(f.GetUint("flag").status(), absl::StatusCode::kInvalidArgument, {"bool"}));
    EXPECT_TRUE(IsError(f.GetFloat("s").status(), absl::StatusCode::kInvalidArgument, {"'s'"}));
    EXPECT_TRUE(IsError(f.GetBool("u").status(), absl::StatusCode::kInvalidArgument,
                        {"'u'", "expected bool"}));
    EXPECT_TRUE(IsError(f.GetStringArray("fa").status(), absl::StatusCode::kInvalidArgument,
                        {"'fa'", "array of float32", "array of string"}));
    EXPECT_TRUE(IsError(f.GetStringArray("s").status(), absl::StatusCode::kInvalidArgument,
                        {"'s'", "string"}));
    EXPECT_TRUE(IsError(f.GetFloatArray("sa").status(), absl::StatusCode::kInvalidArgument,
                        {"'sa'", "array of string"}));
    EXPECT_TRUE(IsError(f.GetInt32Array("fa").status(), absl::StatusCode::kInvalidArgument,
                        {"'fa'", "array of int32"}));
    EXPECT_TRUE(IsError(f.GetInt32Array("big").status(), absl::StatusCode::kInvalidArgument,
                        {"'big'", "element 1", "3000000000", "int32"}));

    EXPECT_EQ(*f.GetUint("u"), 5u);
    EXPECT_EQ(*f.GetFloat("u"), 5.0);
    EXPECT_EQ(*f.GetFloat("neg"), -3.0);
    EXPECT_EQ(*f.GetInt32Array("small"), (std::vector<int32_t>{INT32_MIN, INT32_MAX}));
}

// ---------------------------------------------------------------------------
// Hostile files

// A small valid file the hostile cases start from: one key, tensor "w".
GgufBuilder Base() {
    GgufBuilder b;
    b.AddString("general.architecture", "llama");
    b.AddTensorF32("w", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    return b;
}

std::vector<uint8_t> Nest(int depth) {   // `depth` nested arrays around one uint8
    std::vector<uint8_t> v = GgufBuilder::EncodeArray(0, 1, {42});
    for (int i = 1; i < depth; ++i) v = GgufBuilder::EncodeArray(9, 1, v);
    return v;
}

struct HostileCase {
    std::string name;
    std::function<std::vector<uint8_t>()> make;
    absl::StatusCode code;
    std::vector<std::string> words;
};

void PrintTo(const HostileCase& c, std::ostream* os) { *os << c.name; }

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kDataLoss = absl::StatusCode::kDataLoss;

std::vector<HostileCase> HostileCases() {
    const uint64_t kHuge = uint64_t{1} << 60;
    return {
        {"EmptyBytes", [] { return std::vector<uint8_t>{}; }, kDataLoss, {"truncated", "magic"}},
        {"BadMagic", [] { return Base().OverrideMagic("GGML").Build(); }, kInvalid,
         {"bad magic 47 47 4d 4c"}},
        {"Version1", [] { return Base().OverrideVersion(1).Build(); }, kInvalid, {"version 1"}},
        {"Version99", [] { return Base().OverrideVersion(99).Build(); }, kInvalid, {"version 99"}},
        {"VersionBigEndian", [] { return Base().OverrideVersion(0x03000000).Build(); }, kInvalid,
         {"version", "big-endian"}},
        {"HugeTensorCount", [=] { return Base().OverrideTensorCount(kHuge).Build(); }, kInvalid,
         {"tensor_count", "too large"}},
        {"HugeKvCount", [] { return Base().OverrideKvCount(~uint64_t{0}).Build(); }, kInvalid,
         {"kv_count", "too large"}},
        // Two phantom pairs: the tensor info is misread as key #1, garbage follows.
        {"KvCountBeyondData", [] { return Base().OverrideKvCount(3).Build(); }, kInvalid, {"key #2"}},
        {"StringLengthBeyondFile",
         [] { return Base().AddString("general.name", "x")
                  .OverrideStringLength("general.name", uint64_t{1} << 40).Build(); },
         kInvalid, {"string length", "general.name", "exceeds the file size"}},
        {"StringLengthTruncated",
         [] { auto b = Base().AddString("general.name", "x");
              return b.OverrideStringLength("general.name", b.Build().size() - 40).Build(); },
         kDataLoss, {"truncated", "general.name"}},
        {"KeyLengthBeyondFile",
         [] { return Base().OverrideKeyLength("general.architecture", ~uint64_t{0}).Build(); },
         kInvalid, {"string length", "key #0"}},
        {"EmptyKey", [] { return Base().AddUint32("", 1).Build(); }, kInvalid, {"key #1", "empty"}},
        {"HugeArrayCount",
         [=] { return Base().AddFloat32Array("t.scores", {1, 2}).OverrideArrayCount("t.scores", kHuge).Build(); },
         kInvalid, {"array count", "t.scores", "too large"}},
        {"ArrayCountTimesSizeOverflows",
         [] { return Base().AddFloat32Array("t.scores", {1, 2})
                  .OverrideArrayCount("t.scores", (~uint64_t{0} / 4) + 2).Build(); },
         kInvalid, {"array count", "t.scores"}},
        {"HugeStringArrayCount",
         [=] { return Base().AddStringArray("tokens", {"a", "b"}).OverrideArrayCount("tokens", kHuge).Build(); },
         kInvalid, {"array count", "tokens"}},
        {"ArrayElementStringBeyondFile",
         [] { std::vector<uint8_t> e;
              GgufBuilder::PutString(e, "ok");
              GgufBuilder::Put<uint64_t>(e, uint64_t{1} << 50);
              return Base().AddRawArray("tokens", GgufValueType::kString, 2, e).Build(); },
         kInvalid, {"string length", "tokens", "array element 1"}},
        {"UnknownValueType", [] { return Base().AddRaw("t.weird", 13u, {0, 0, 0, 0}).Build(); },
         kInvalid, {"unknown value type 13", "t.weird"}},
        {"UnknownArrayElementType", [] { return Base().AddRawArray("t.arr", 99u, 1, {0}).Build(); },
         kInvalid, {"unknown value type 99", "t.arr"}},
        {"BadBool", [] { return Base().AddRaw("t.flag", GgufValueType::kBool, {2}).Build(); },
         kInvalid, {"t.flag", "bool value 2"}},
        {"BadBoolInArray",
         [] { return Base().AddRawArray("t.flags", GgufValueType::kBool, 3, {1, 0, 7}).Build(); },
         kInvalid, {"t.flags", "element 2", "bool value 7"}},
        {"ArraysNestedTooDeep",
         [] { return Base().AddRawArray("t.deep", GgufValueType::kArray, 1, Nest(3)).Build(); },
         kInvalid, {"t.deep'[0][0]", "nests arrays deeper than 3"}},
        {"DuplicateKey", [] { return Base().AddUint32("t.a", 1).AddUint32("t.a", 2).Build(); },
         kInvalid, {"duplicate key", "t.a"}},
        {"DuplicateTensor", [] { return Base().AddTensorF32("w", {1}, {0}).Build(); },
         kInvalid, {"duplicate tensor", "'w'"}},
        {"EmptyTensorName", [] { return Base().AddTensorF32("", {1}, {0}).Build(); },
         kInvalid, {"tensor #1", "empty name"}},
        {"TensorNameBeyondFile",
         [] { return Base().OverrideTensorNameLength("w", uint64_t{1} << 33).Build(); },
         kInvalid, {"name of tensor #0"}},
        {"NDims0", [] { return Base().AddTensor("t0", {}, GgmlType::kF32, {}).Build(); },
         kInvalid, {"'t0'", "n_dims 0"}},
        {"NDims5",
         [] { return Base().AddTensorF32("t5", {1, 1, 1, 1, 1}, {0}).Build(); },
         kInvalid, {"'t5'", "n_dims 5"}},
        {"ZeroDim", [] { return Base().AddTensor("z", {4, 0}, GgmlType::kF32, {}).Build(); },
         kInvalid, {"'z'", "zero dimension", "ne[1]"}},
        {"DimsProductOverflow",
         [] { return Base().AddTensor("big", {uint64_t{1} << 32, uint64_t{1} << 32}, GgmlType::kF32, {})
                  .Build(); },
         kInvalid, {"'big'", "element count overflows"}},
        {"ByteSizeOverflow",
         [] { return Base().AddTensor("big", {uint64_t{1} << 31, uint64_t{1} << 31}, GgmlType::kF32, {})
                  .Build(); },
         kInvalid, {"'big'", "overflows"}},
        {"UnreadableTensorTypeIQ4_NL",
         [] { return Base().AddTensorRaw("q4", {32}, 20, std::vector<uint8_t>(18)).Build(); },
         kInvalid, {"'q4' (type 20, IQ4_NL)", "cannot read"}},
        {"UnknownTensorType1000",
         [] { return Base().OverrideTensorType("w", 1000).Build(); },
         kInvalid, {"'w' (type 1000, unknown)"}},
        {"Q4_KRowNotMultipleOf256",
         [] { return Base().AddTensor("q", {32, 2}, GgmlType::kQ4_K, std::vector<uint8_t>(144)).Build(); },
         kInvalid, {"'q'", "Q4_K", "ne[0] = 32", "multiple"}},
        {"Q8_0RowNotMultipleOf32",
         [] { return Base().AddTensor("q", {16, 2}, GgmlType::kQ8_0, std::vector<uint8_t>(34)).Build(); },
         kInvalid, {"'q'", "Q8_0", "ne[0] = 16", "multiple"}},
        {"OffsetPastEnd", [] { return Base().OverrideTensorOffset("w", 1u << 20).Build(); },
         kDataLoss, {"truncated", "'w'", "past the end"}},
        {"OffsetNearUint64Max",
         [] { return Base().OverrideTensorOffset("w", ~uint64_t{0} - 31).Build(); },
         kDataLoss, {"'w'", "past the end"}},
        {"DataShorterThanShape",
         [] { return Base().AddTensorRaw("short", {1024}, 0, std::vector<uint8_t>(16)).Build(); },
         kDataLoss, {"truncated", "'short'"}},
        {"MisalignedOffset", [] { return Base().OverrideTensorOffset("w", 4).Build(); },
         kInvalid, {"'w'", "offset 4", "not aligned"}},
        {"OverlappingTensors",
         [] { return Base().AddTensorF32("v", {8}, std::vector<float>(8)).OverrideTensorOffset("v", 0).Build(); },
         kInvalid, {"'w'", "'v'", "overlap"}},
        {"Alignment0", [] { return Base().SetAlignment(0).Build(); }, kInvalid,
         {"general.alignment", "power of two"}},
        {"Alignment3", [] { return Base().SetAlignment(3).Build(); }, kInvalid,
         {"general.alignment 3", "power of two"}},
        {"AlignmentWrongType", [] { return Base().AddUint64("general.alignment", 32).Build(); },
         kInvalid, {"general.alignment", "uint32", "uint64"}},
    };
}

class GgufHostileTest : public ::testing::TestWithParam<HostileCase> {};

TEST_P(GgufHostileTest, RejectedWithNamedProblem) {
    const HostileCase& c = GetParam();
    const std::vector<uint8_t> bytes = c.make();
    EXPECT_TRUE(IsError(ParseStatus(bytes), c.code, c.words));
}

INSTANTIATE_TEST_SUITE_P(Gguf, GgufHostileTest, ::testing::ValuesIn(HostileCases()),
                         [](const ::testing::TestParamInfo<HostileCase>& info) {
                             return info.param.name;
                         });

// Three levels of arrays are accepted (the limit), four are not (see
// ArraysNestedTooDeep); the rendering names only the outer level.
TEST(GgufHostile, NestedArraysUpToTheLimitAreAccepted) {
    auto f = GgufFile::FromBytes(
        Base().AddRawArray("t.nested3", GgufValueType::kArray, 1, Nest(2)).Build());
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->ValueSummary("t.nested3"), "[array x 1]");
    EXPECT_TRUE(IsError((*f)->GetInt32Array("t.nested3").status(), kInvalid, {"array of array"}));
}

// The base file itself is fine, so every hostile case above fails because of
// its own change.
TEST(GgufHostile, BaseFileIsValid) {
    auto f = GgufFile::FromBytes(Base().Build());
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(Dequantize(*(*f)->FindTensor("w")), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(GgufHostile, EveryTruncationIsAnError) {
    const std::vector<uint8_t> full = MakeValidFile().builder.Build();
    ASSERT_TRUE(GgufFile::FromBytes(full).ok());
    for (size_t len = 0; len < full.size(); ++len) {
        const absl::Status s =
            ParseStatus(std::vector<uint8_t>(full.begin(), full.begin() + len));
        ASSERT_FALSE(s.ok()) << "prefix of " << len << " bytes was accepted";
        ASSERT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                    s.code() == absl::StatusCode::kInvalidArgument)
            << len << ": " << s;
    }
    // Cut inside the data section: plain truncation, reported as such.
    EXPECT_TRUE(IsError(ParseStatus(std::vector<uint8_t>(full.begin(), full.end() - 1)),
                        kDataLoss, {"truncated", "'q8'"}));
}

// Random byte corruption of a valid file must never crash or read outside
// the buffer (run under ASan); whatever is accepted must be usable.
TEST(GgufHostile, RandomCorruptionNeverCrashes) {
    GgufBuilder::Layout layout;
    const std::vector<uint8_t> full = MakeValidFile().builder.Build(&layout);
    std::mt19937_64 rng(12345);
    int accepted = 0;
    for (int iter = 0; iter < 4000; ++iter) {
        std::vector<uint8_t> bytes = full;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k) {
            // Mostly hit the header, metadata and infos, where parsing happens.
            const size_t pos = rng() % layout.data_start;
            bytes[pos] = static_cast<uint8_t>(rng());
        }
        auto f = GgufFile::FromBytes(std::move(bytes));
        if (!f.ok()) continue;
        ++accepted;
        for (const std::string& key : (*f)->Keys()) {
            (void)(*f)->ValueSummary(key);
            (void)(*f)->GetStringArray(key);
            (void)(*f)->GetFloatArray(key);
            (void)(*f)->GetInt32Array(key);
        }
        for (const GgufTensor& t : (*f)->tensors()) {
            ASSERT_LE(t.offset + t.nbytes, (*f)->file_size());
            (void)Dequantize(t);
        }
    }
    EXPECT_GT(accepted, 0);   // some flips only change values, which is fine
}

// ---------------------------------------------------------------------------
// Open()

TEST(GgufOpen, MissingFileIsNotFound) {
    const std::string path = "/nonexistent/dir/model.gguf";
    EXPECT_TRUE(IsError(GgufFile::Open(path).status(), absl::StatusCode::kNotFound, {path}));
}

TEST(GgufOpen, EmptyFileIsTruncated) {
    TempGgufFile empty(std::vector<uint8_t>{}, "empty");
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(IsError(GgufFile::Open(empty.path()).status(), kDataLoss,
                        {empty.path(), "truncated"}));
}

TEST(GgufOpen, DirectoryIsRejected) {
    const std::string dir = std::filesystem::temp_directory_path().string();
    EXPECT_FALSE(GgufFile::Open(dir).ok());
}

TEST(GgufOpen, CorruptFileErrorNamesPath) {
    TempGgufFile bad(Base().OverrideMagic("XXXX"), "badmagic");
    ASSERT_TRUE(bad.ok());
    EXPECT_TRUE(IsError(GgufFile::Open(bad.path()).status(), kInvalid, {bad.path(), "magic"}));
}

TEST(GgufOpen, MappedFileMatchesBuilder) {
    ValidFile v = MakeValidFile();
    TempGgufFile tmp(v.builder, "valid");
    ASSERT_TRUE(tmp.ok());
    auto f = GgufFile::Open(tmp.path());
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->file_size(), std::filesystem::file_size(tmp.path()));
    EXPECT_EQ(*(*f)->GetString("general.architecture"), "llama");
    EXPECT_EQ(*(*f)->GetStringArray("t.tokens"), (std::vector<std::string>{"<unk>", "", "▁the"}));
    const GgufTensor* q8 = (*f)->FindTensor("q8");
    ASSERT_NE(q8, nullptr);
    EXPECT_EQ(std::memcmp(q8->data, v.q8_bytes.data(), v.q8_bytes.size()), 0);
    // The builder's WriteFile produces the same bytes.
    const std::string path2 = tmp.path() + ".2";
    ASSERT_TRUE(v.builder.WriteFile(path2).ok());
    auto f2 = GgufFile::Open(path2);
    std::filesystem::remove(path2);
    ASSERT_TRUE(f2.ok()) << f2.status();
    EXPECT_EQ((*f2)->tensors().size(), 4u);
}

std::vector<uint8_t> ReadAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(GgufOpen, RealStories260KModel) {
    const std::string dir = PREPACK_MODELS_DIR "/stories260K";
    const std::string path = dir + "/stories260K.gguf";
    if (!std::filesystem::exists(path)) {
        GTEST_SKIP() << "model not found at " << path
                     << " (set -DPREPACK_MODELS_DIR=... to the folder holding stories260K/)";
    }
    auto fo = GgufFile::Open(path);
    ASSERT_TRUE(fo.ok()) << fo.status();
    const GgufFile& f = **fo;

    // Config values from the model's README (the llama2.c header).
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(*f.GetString("general.architecture"), "llama");
    EXPECT_EQ(*f.GetUint("llama.embedding_length"), 64u);
    EXPECT_EQ(*f.GetUint("llama.block_count"), 5u);
    EXPECT_EQ(*f.GetUint("llama.feed_forward_length"), 172u);
    EXPECT_EQ(*f.GetUint("llama.attention.head_count"), 8u);
    EXPECT_EQ(*f.GetUint("llama.attention.head_count_kv"), 4u);
    EXPECT_NEAR(*f.GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
    const std::vector<std::string> tokens = *f.GetStringArray("tokenizer.ggml.tokens");
    ASSERT_EQ(tokens.size(), 512u);
    EXPECT_EQ(tokens[0], "<unk>");
    EXPECT_EQ(tokens[3], "<0x00>");
    EXPECT_EQ(tokens[258], "<0xFF>");
    EXPECT_EQ(f.GetFloatArray("tokenizer.ggml.scores")->size(), 512u);
    EXPECT_EQ(f.GetInt32Array("tokenizer.ggml.token_type")->size(), 512u);
    EXPECT_EQ(f.ValueSummary("tokenizer.ggml.tokens"), "[string x 512]");

    const GgufTensor* embd = f.FindTensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->ne, (std::vector<uint64_t>{64, 512}));
    EXPECT_EQ(embd->type, GgmlType::kF32);
    for (const GgufTensor& t : f.tensors()) EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;

    // Independent check of the data: the llama2.c checkpoint holds, after its
    // 28-byte header, the embedding table then the 5 attention norms.
    const std::vector<uint8_t> bin = ReadAll(dir + "/stories260K.bin");
    ASSERT_EQ(bin.size(), 1056540u);
    ASSERT_EQ(embd->nbytes, 512u * 64u * 4u);
    EXPECT_EQ(std::memcmp(embd->data, bin.data() + 28, embd->nbytes), 0);
    for (int l = 0; l < 5; ++l) {
        const GgufTensor* norm = f.FindTensor("blk." + std::to_string(l) + ".attn_norm.weight");
        ASSERT_NE(norm, nullptr) << l;
        ASSERT_EQ(norm->nbytes, 64u * 4u);
        EXPECT_EQ(std::memcmp(norm->data, bin.data() + 28 + embd->nbytes + l * 256, 256), 0) << l;
    }

    // Truncations of the real file at a spread of lengths all fail cleanly.
    const std::vector<uint8_t> all = ReadAll(path);
    for (size_t len = 0; len < all.size(); len += 1 + len / 8) {
        ASSERT_FALSE(GgufFile::FromBytes(std::vector<uint8_t>(all.begin(), all.begin() + len)).ok())
            << len;
    }
}

// ---------------------------------------------------------------------------
// Types and conversions

TEST(GgmlTypes, BytesAndNames) {
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kF32, 10), 40u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kF16, 10), 20u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kBF16, 10), 20u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ8_0, 64), 68u);
    EXPECT_TRUE(IsError(GgmlTypeBytes(GgmlType::kQ8_0, 33).status(), kInvalid, {"Q8_0", "33"}));
    EXPECT_TRUE(IsError(GgmlTypeBytes(GgmlType::kF32, uint64_t{1} << 62).status(), kInvalid,
                        {"overflows"}));
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ4_0, 64), 36u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ4_K, 512), 288u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ5_K, 256), 176u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ6_K, 256), 210u);
    EXPECT_TRUE(IsError(GgmlTypeBytes(GgmlType::kQ6_K, 128).status(), kInvalid, {"Q6_K", "128"}));
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ4_1, 64), 40u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ5_0, 64), 44u);
    EXPECT_EQ(*GgmlTypeBytes(GgmlType::kQ5_1, 64), 48u);
    EXPECT_TRUE(IsError(GgmlTypeBytes(static_cast<GgmlType>(20), 32).status(), kInvalid,
                        {"unsupported tensor type 20"}));
    EXPECT_STREQ(GgmlTypeName(GgmlType::kF32), "F32");
    EXPECT_STREQ(GgmlTypeName(GgmlType::kF16), "F16");
    EXPECT_STREQ(GgmlTypeName(GgmlType::kQ8_0), "Q8_0");
    EXPECT_STREQ(GgmlTypeName(GgmlType::kBF16), "BF16");
    EXPECT_STREQ(GgmlTypeName(GgmlType::kQ4_K), "Q4_K");
}

float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Fp16, KnownBitPatternsToFp32) {
    EXPECT_EQ(Fp16ToFp32(0x3C00), 1.0f);
    EXPECT_EQ(Fp16ToFp32(0xBC00), -1.0f);
    EXPECT_EQ(Fp16ToFp32(0x3800), 0.5f);
    EXPECT_EQ(Fp16ToFp32(0x3555), 0.333251953125f);
    EXPECT_EQ(Fp16ToFp32(0x7BFF), 65504.0f);
    EXPECT_EQ(Fp16ToFp32(0x0400), std::ldexp(1.0f, -14));          // smallest normal
    EXPECT_EQ(Fp16ToFp32(0x0001), std::ldexp(1.0f, -24));          // smallest subnormal
    EXPECT_FLOAT_EQ(Fp16ToFp32(0x0001), 5.9604645e-8f);
    EXPECT_EQ(Fp16ToFp32(0x03FF), 1023.0f * std::ldexp(1.0f, -24)); // largest subnormal
    EXPECT_EQ(Fp16ToFp32(0x8001), -std::ldexp(1.0f, -24));
    EXPECT_EQ(std::bit_cast<uint32_t>(Fp16ToFp32(0x0000)), 0u);
    EXPECT_EQ(std::bit_cast<uint32_t>(Fp16ToFp32(0x8000)), 0x80000000u);   // -0
    EXPECT_EQ(Fp16ToFp32(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(Fp16ToFp32(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7E00)));
    EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7C01)));   // signalling payload stays NaN
}

TEST(Fp16, KnownValuesFromFp32WithRounding) {
    EXPECT_EQ(Fp32ToFp16(1.0f), 0x3C00);
    EXPECT_EQ(Fp32ToFp16(-2.0f), 0xC000);
    EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7BFF);
    EXPECT_EQ(Fp32ToFp16(65519.0f), 0x7BFF);    // below the halfway point to 65536
    EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7C00);    // tie, rounds to even = overflow to inf
    EXPECT_EQ(Fp32ToFp16(1e6f), 0x7C00);
    EXPECT_EQ(Fp32ToFp16(-1e6f), 0xFC00);
    EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -14)), 0x0400);
    EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -25)), 0x0000);          // tie to even (0)
    EXPECT_EQ(Fp32ToFp16(FromBits(0x33000001)), 0x0001);           // just above the tie
    EXPECT_EQ(Fp32ToFp16(std::ldexp(3.0f, -25)), 0x0002);          // 1.5 units: tie to even
    EXPECT_EQ(Fp32ToFp16(std::ldexp(5.0f, -25)), 0x0002);          // 2.5 units: tie to even
    EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -30)), 0x0000);
    EXPECT_EQ(Fp32ToFp16(-std::ldexp(1.0f, -30)), 0x8000);
    EXPECT_EQ(Fp32ToFp16(std::ldexp(2047.0f, -25)), 0x0400);       // largest subnormal + half: carries
    EXPECT_EQ(Fp32ToFp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);   // tie, even stays
    EXPECT_EQ(Fp32ToFp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);   // tie, odd rounds up
    EXPECT_EQ(Fp32ToFp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
    EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
    const uint16_t nan = Fp32ToFp16(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7C00, 0x7C00);
    EXPECT_NE(nan & 0x03FF, 0);
    EXPECT_TRUE(std::isnan(Fp16ToFp32(Fp32ToFp16(FromBits(0x7F800001)))));   // low payload only
}

TEST(Fp16, EveryHalfRoundTrips) {
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
        const float f = Fp16ToFp32(static_cast<uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(Fp16ToFp32(Fp32ToFp16(f)))) << h;
        } else {
            ASSERT_EQ(Fp32ToFp16(f), h) << std::hex << h;
        }
    }
}

TEST(Bf16, KnownBitPatterns) {
    EXPECT_EQ(Bf16ToFp32(0x3F80), 1.0f);
    EXPECT_EQ(Bf16ToFp32(0xC040), -3.0f);
    EXPECT_EQ(Bf16ToFp32(0x4049), 3.140625f);
    EXPECT_EQ(Bf16ToFp32(0x0001), std::ldexp(1.0f, -133));   // smallest subnormal
    EXPECT_EQ(Bf16ToFp32(0x7F80), std::numeric_limits<float>::infinity());
    EXPECT_EQ(Bf16ToFp32(0xFF80), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(Bf16ToFp32(0x7FC0)));

    EXPECT_EQ(Fp32ToBf16(1.0f), 0x3F80);
    EXPECT_EQ(Fp32ToBf16(-3.0f), 0xC040);
    EXPECT_EQ(Fp32ToBf16(FromBits(0x3F808000)), 0x3F80);   // tie, even stays
    EXPECT_EQ(Fp32ToBf16(FromBits(0x3F818000)), 0x3F82);   // tie, odd rounds up
    EXPECT_EQ(Fp32ToBf16(FromBits(0x3F808001)), 0x3F81);   // above the tie
    EXPECT_EQ(Fp32ToBf16(FromBits(0x3F807FFF)), 0x3F80);   // below the tie
    EXPECT_EQ(Fp32ToBf16(std::numeric_limits<float>::max()), 0x7F80);   // rounds to inf
    EXPECT_EQ(Fp32ToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(Fp32ToBf16(-0.0f), 0x8000);
    EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(std::numeric_limits<float>::quiet_NaN()))));
    // A NaN whose payload sits only in the dropped bits must not become inf.
    EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(FromBits(0x7F800001)))));
    EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(FromBits(0xFFFFFFFF)))));
}

TEST(Bf16, EveryBf16RoundTrips) {
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
        const float f = Bf16ToFp32(static_cast<uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(f)))) << h;
        } else {
            ASSERT_EQ(Fp32ToBf16(f), h) << std::hex << h;
        }
    }
}

}  // namespace
}  // namespace prepack
