#include "core/grammar/utf8_ranges.h"

#include <algorithm>

namespace prepack::grammar {
namespace {

// The largest code point encoded in 1, 2, 3 and 4 bytes.
constexpr uint32_t kMaxForLength[4] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};

int EncodedLength(uint32_t cp) {
    for (int n = 0; n < 4; ++n) {
        if (cp <= kMaxForLength[n]) return n + 1;
    }
    return 4;
}

// Emits the byte ranges of [first, last], all of one encoded length, split
// until each piece is a product of per-byte ranges. A work stack instead of
// recursion; pieces come out in ascending order.
void SplitSameLength(uint32_t first, uint32_t last, std::vector<Utf8Sequence>* out) {
    std::vector<CodePointRange> stack{{first, last}};
    while (!stack.empty()) {
        CodePointRange r = stack.back();
        stack.pop_back();
        const int length = EncodedLength(r.first);
        bool split = false;
        // Continuation bytes carry 6 bits each: below bit 6*i the two ends
        // must span the full 0..2^(6i)-1 unless they agree above it.
        for (int i = 1; i < length && !split; ++i) {
            const uint32_t low_mask = (uint32_t{1} << (6 * i)) - 1;
            if ((r.first & ~low_mask) == (r.last & ~low_mask)) continue;
            if ((r.first & low_mask) != 0) {
                stack.push_back({(r.first | low_mask) + 1, r.last});
                stack.push_back({r.first, r.first | low_mask});
                split = true;
            } else if ((r.last & low_mask) != low_mask) {
                stack.push_back({r.last & ~low_mask, r.last});
                stack.push_back({r.first, (r.last & ~low_mask) - 1});
                split = true;
            }
        }
        if (split) continue;
        const std::string lo = EncodeUtf8(r.first);
        const std::string hi = EncodeUtf8(r.last);
        Utf8Sequence seq;
        for (size_t i = 0; i < lo.size(); ++i) {
            seq.push_back({static_cast<uint8_t>(lo[i]), static_cast<uint8_t>(hi[i])});
        }
        out->push_back(std::move(seq));
    }
}

}  // namespace

std::vector<CodePointRange> NormalizeScalarRanges(std::vector<CodePointRange> ranges) {
    std::vector<CodePointRange> clipped;
    for (CodePointRange r : ranges) {
        if (r.first > r.last || r.first > kMaxCodePoint) continue;
        r.last = std::min(r.last, kMaxCodePoint);
        // Cut the surrogate block out of the range.
        if (r.first < kFirstSurrogate && r.last >= kFirstSurrogate) {
            clipped.push_back({r.first, kFirstSurrogate - 1});
            if (r.last > kLastSurrogate) clipped.push_back({kLastSurrogate + 1, r.last});
        } else if (r.first >= kFirstSurrogate && r.first <= kLastSurrogate) {
            if (r.last > kLastSurrogate) clipped.push_back({kLastSurrogate + 1, r.last});
        } else {
            clipped.push_back(r);
        }
    }
    std::sort(clipped.begin(), clipped.end(),
              [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
    std::vector<CodePointRange> merged;
    for (const CodePointRange& r : clipped) {
        // Merge overlapping and adjacent ranges (adjacent across the removed
        // surrogate block stays split: D7FF and E000 are not neighbours).
        if (!merged.empty() && r.first <= merged.back().last + 1) {
            merged.back().last = std::max(merged.back().last, r.last);
        } else {
            merged.push_back(r);
        }
    }
    return merged;
}

std::vector<CodePointRange> ComplementScalarRanges(const std::vector<CodePointRange>& ranges) {
    std::vector<CodePointRange> gaps;
    uint32_t next = 0;
    for (const CodePointRange& r : ranges) {
        if (r.first > next) gaps.push_back({next, r.first - 1});
        next = r.last + 1;
    }
    if (next <= kMaxCodePoint) gaps.push_back({next, kMaxCodePoint});
    return NormalizeScalarRanges(std::move(gaps));
}

std::vector<Utf8Sequence> Utf8Sequences(CodePointRange range) {
    std::vector<Utf8Sequence> out;
    uint32_t first = range.first;
    for (int n = 0; n < 4 && first <= range.last; ++n) {
        if (first > kMaxForLength[n]) continue;
        const uint32_t last = std::min(range.last, kMaxForLength[n]);
        SplitSameLength(first, last, &out);
        first = last + 1;
    }
    return out;
}

std::string EncodeUtf8(uint32_t cp) {
    std::string out;
    if (cp <= 0x7F) {
        out.push_back(static_cast<char>(cp));
    } else if (cp <= 0x7FF) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp <= 0xFFFF) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return out;
}

bool DecodeUtf8(std::string_view text, size_t* offset, uint32_t* code_point) {
    size_t i = *offset;
    if (i >= text.size()) return false;
    const uint8_t lead = static_cast<uint8_t>(text[i]);
    int length = 0;
    uint32_t cp = 0;
    if (lead < 0x80) {
        length = 1, cp = lead;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2, cp = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3, cp = lead & 0x0F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4, cp = lead & 0x07;
    } else {
        return false;
    }
    if (i + length > text.size()) return false;
    for (int k = 1; k < length; ++k) {
        const uint8_t b = static_cast<uint8_t>(text[i + k]);
        if ((b & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (b & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if (EncodedLength(cp) != length) return false;
    if (cp >= kFirstSurrogate && cp <= kLastSurrogate) return false;
    if (cp > kMaxCodePoint) return false;
    *offset = i + length;
    *code_point = cp;
    return true;
}

}  // namespace prepack::grammar
