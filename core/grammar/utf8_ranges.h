// Sets of Unicode scalar values and their UTF-8 encodings as byte ranges.
//
// GBNF classes speak code points but the matcher is byte-level, so a class
// like [α-ω] must become alternatives of byte sequences. The standard way:
// split the code point range where the encoded length changes, then split
// again until every piece is a product of byte ranges (each byte position
// ranges independently), which happens exactly when the low 6*i bits of the
// range's ends are all-0 / all-1 wherever its ends differ above them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace prepack::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
inline constexpr uint32_t kFirstSurrogate = 0xD800;
inline constexpr uint32_t kLastSurrogate = 0xDFFF;

// An inclusive range of code points.
struct CodePointRange {
    uint32_t first = 0;
    uint32_t last = 0;
    bool operator==(const CodePointRange&) const = default;
};

// Sorted, non-overlapping, non-adjacent ranges of Unicode scalar values
// (surrogates and anything past U+10FFFF removed: they have no UTF-8 form).
std::vector<CodePointRange> NormalizeScalarRanges(std::vector<CodePointRange> ranges);

// Every scalar value not in `ranges` (which must be normalized).
std::vector<CodePointRange> ComplementScalarRanges(const std::vector<CodePointRange>& ranges);

// An inclusive range of byte values.
struct ByteRange {
    uint8_t lo = 0;
    uint8_t hi = 0;
    bool operator==(const ByteRange&) const = default;
};

// One byte range per encoded byte: the sequences whose every byte lies in
// its range. Together the sequences of Utf8Sequences() encode exactly the
// scalar values of the input, each value by one sequence only.
using Utf8Sequence = std::vector<ByteRange>;

// The UTF-8 byte sequences of the scalar values in [first, last] (which
// must hold no surrogates; NormalizeScalarRanges splits around them), in
// ascending order.
std::vector<Utf8Sequence> Utf8Sequences(CodePointRange range);

// The UTF-8 encoding of a scalar value (callers reject surrogates and
// values past U+10FFFF first).
std::string EncodeUtf8(uint32_t code_point);

// Decodes one strictly valid UTF-8 scalar at text[*offset], advancing
// *offset; false (offset unchanged) on a malformed, overlong or surrogate
// sequence or a truncated one.
bool DecodeUtf8(std::string_view text, size_t* offset, uint32_t* code_point);

}  // namespace prepack::grammar
