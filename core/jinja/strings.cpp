#include "core/jinja/strings.h"

#include <algorithm>
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/error.h"

namespace prepack::jinja {
namespace {

struct CodePoint {
    size_t begin, end;  // bytes
    uint32_t cp;
};

std::vector<CodePoint> Decode(const std::string& s) {
    std::vector<CodePoint> out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        const size_t b = pos;
        const uint32_t cp = DecodeUtf8(s, pos);
        out.push_back({b, pos, cp});
    }
    return out;
}

// Python's adjustment of optional start/end (str.find & co.): negative
// counts from the end; end is clamped to n, start may exceed it (nothing
// is found then).
void Bounds(const Value& start, const Value& end, size_t n, size_t& b, size_t& e) {
    auto norm = [n](const Value& v, size_t dflt, bool is_end) -> size_t {
        if (v.is_none() || v.is_undefined()) return dflt;
        if (!v.is_integral()) Fail("slice indices must be integers or None or have an __index__ method");
        int64_t i = v.i();
        if (i < 0) i += static_cast<int64_t>(n);
        if (i < 0) i = 0;
        return is_end ? std::min(static_cast<size_t>(i), n) : static_cast<size_t>(i);
    };
    b = norm(start, 0, false);
    e = norm(end, n, true);
}

}  // namespace

Text PyStrip(const Text& s, const Value& chars, bool left, bool right) {
    ChargeBytes(s.size());
    std::vector<uint32_t> set;
    const bool whitespace = chars.is_none() || chars.is_undefined();
    if (!whitespace) {
        if (!chars.is_str()) Fail(Cat("strip arg must be None or str, not ", TypeName(chars)));
        for (size_t pos = 0; pos < chars.str().size();) set.push_back(DecodeUtf8(chars.str().bytes, pos));
    }
    auto strip = [&](uint32_t cp) {
        return whitespace ? IsPyWhitespace(cp) : std::find(set.begin(), set.end(), cp) != set.end();
    };
    const std::string& b = s.bytes;
    size_t begin = 0, end = b.size();
    if (left) {
        while (begin < end) {
            size_t pos = begin;
            if (!strip(DecodeUtf8(b, pos))) break;
            begin = pos;
        }
    }
    if (right) {
        while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(b[start]) & 0xC0) == 0x80) --start;
            size_t pos = start;
            const uint32_t cp = DecodeUtf8(b, pos);
            if (pos != end) {  // not one whole code point: an invalid byte
                start = end - 1;
                pos = start;
                if (!strip(DecodeUtf8(b, pos))) break;
            } else if (!strip(cp)) {
                break;
            }
            end = start;
        }
    }
    return SubText(s, begin, end);
}

std::vector<Value> PySplit(const Text& s, const Value& sep, int64_t maxsplit, bool from_right) {
    ChargeBytes(s.size());
    if (maxsplit < 0) maxsplit = INT64_MAX;
    std::vector<std::pair<size_t, size_t>> parts;  // byte ranges
    const std::string& b = s.bytes;
    if (sep.is_none() || sep.is_undefined()) {
        const std::vector<CodePoint> cps = Decode(b);
        const auto n = static_cast<int64_t>(cps.size());
        auto space = [&](int64_t i) { return IsPyWhitespace(cps[static_cast<size_t>(i)].cp); };
        auto byte = [&](int64_t i) { return i >= n ? b.size() : cps[static_cast<size_t>(i)].begin; };
        if (!from_right) {
            int64_t i = 0;
            while (maxsplit-- > 0) {
                while (i < n && space(i)) ++i;
                if (i == n) break;
                const int64_t j = i++;
                while (i < n && !space(i)) ++i;
                parts.emplace_back(byte(j), byte(i));
            }
            if (i < n) {
                while (i < n && space(i)) ++i;
                if (i != n) parts.emplace_back(byte(i), b.size());
            }
        } else {
            int64_t i = n - 1;
            while (maxsplit-- > 0) {
                while (i >= 0 && space(i)) --i;
                if (i < 0) break;
                const int64_t j = i--;
                while (i >= 0 && !space(i)) --i;
                parts.emplace_back(byte(i + 1), byte(j + 1));
            }
            if (i >= 0) {
                while (i >= 0 && space(i)) --i;
                if (i >= 0) parts.emplace_back(0, byte(i + 1));
            }
            std::reverse(parts.begin(), parts.end());
        }
    } else {
        if (!sep.is_str()) Fail(Cat("must be str or None, not ", TypeName(sep)));
        const std::string& d = sep.str().bytes;
        if (d.empty()) Fail("empty separator");
        if (!from_right) {
            size_t i = 0;
            while (maxsplit-- > 0) {
                const size_t f = b.find(d, i);
                if (f == std::string::npos) break;
                parts.emplace_back(i, f);
                i = f + d.size();
            }
            parts.emplace_back(i, b.size());
        } else {
            size_t end = b.size();
            while (maxsplit-- > 0 && end >= d.size()) {
                const size_t f = b.rfind(d, end - d.size());
                if (f == std::string::npos) break;
                parts.emplace_back(f + d.size(), end);
                end = f;
            }
            parts.emplace_back(0, end);
            std::reverse(parts.begin(), parts.end());
        }
    }
    GrowBy(0, parts.size() * kBytesPerItem);
    std::vector<Value> out;
    out.reserve(parts.size());
    for (const auto& [pb, pe] : parts) out.push_back(Value::Str(SubText(s, pb, pe)));
    return out;
}

std::vector<Text> PySplitLines(const Text& s, bool keepends) {
    ChargeBytes(s.size());
    const std::string& b = s.bytes;
    std::vector<Text> out;
    size_t line = 0;
    for (size_t pos = 0; pos < b.size();) {
        const size_t start = pos;
        const uint32_t cp = DecodeUtf8(b, pos);
        const bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
                         cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!brk) continue;
        if (cp == '\r' && pos < b.size() && b[pos] == '\n') ++pos;
        out.push_back(SubText(s, line, keepends ? pos : start));
        line = pos;
    }
    if (line < b.size()) out.push_back(SubText(s, line, b.size()));
    return out;
}

Text PyReplace(const Text& s, const Text& old, const Text& repl, int64_t count) {
    ChargeBytes(s.size());
    if (count < 0) count = INT64_MAX;
    TextBuilder out;
    const std::string& b = s.bytes;
    if (old.bytes.empty()) {
        // Python inserts repl before every character and at the end.
        size_t pos = 0;
        while (pos < b.size()) {
            if (count-- > 0) out.Append(repl);
            const size_t start = pos;
            DecodeUtf8(b, pos);
            out.AppendRange(s, start, pos);
        }
        if (count > 0) out.Append(repl);
    } else {
        size_t i = 0;
        while (count-- > 0) {
            const size_t f = b.find(old.bytes, i);
            if (f == std::string::npos) break;
            out.AppendRange(s, i, f);
            out.Append(repl);
            i = f + old.bytes.size();
        }
        out.AppendRange(s, i, b.size());
    }
    Text t = out.Finish();
    t.markup = s.markup;
    return t;
}

Text Rewritten(const Text& s, std::string bytes) {
    GrowBy(0, bytes.size());
    Text t = MakeText(std::move(bytes), s.has_content());
    t.markup = s.markup;
    return t;
}

Text CodePointSlice(const Text& s, const Value& start, const Value& end) {
    if (IsAscii(s.bytes)) {
        size_t b, e;
        Bounds(start, end, s.size(), b, e);
        b = std::min(b, s.size());
        return SubText(s, b, std::max(b, e));
    }
    const std::vector<size_t> starts = CodePointStarts(s.bytes);
    size_t b, e;
    Bounds(start, end, starts.size() - 1, b, e);
    b = std::min(b, starts.size() - 1);
    return SubText(s, starts[b], starts[std::max(b, e)]);
}

int64_t PyFind(const Text& s, const Text& sub, const Value& start, const Value& end, bool last) {
    ChargeBytes(s.size());
    const bool ascii = IsAscii(s.bytes);
    std::vector<size_t> starts;
    if (!ascii) starts = CodePointStarts(s.bytes);
    const size_t n = ascii ? s.size() : starts.size() - 1;
    size_t b, e;
    Bounds(start, end, n, b, e);
    if (b > e) return -1;
    auto byte_of = [&](size_t i) { return ascii ? i : starts[i]; };
    const std::string_view hay = std::string_view(s.bytes).substr(byte_of(b), byte_of(e) - byte_of(b));
    const size_t f = last ? hay.rfind(sub.bytes) : hay.find(sub.bytes);
    if (f == std::string_view::npos) return -1;
    const size_t byte = byte_of(b) + f;
    return static_cast<int64_t>(ascii ? byte : CodePointIndex(s.bytes, byte));
}

int64_t PyCount(const Text& s, const Text& sub, const Value& start, const Value& end) {
    ChargeBytes(s.size());
    size_t b, e;
    Bounds(start, end, CodePointCount(s.bytes), b, e);
    if (b > e) return 0;
    const Text t = CodePointSlice(s, start, end);
    // An empty sub is found between every two characters and at both ends.
    if (sub.bytes.empty()) return static_cast<int64_t>(CodePointCount(t.bytes)) + 1;
    int64_t n = 0;
    for (size_t i = t.bytes.find(sub.bytes); i != std::string::npos; i = t.bytes.find(sub.bytes, i + sub.size())) {
        ++n;
    }
    return n;
}

Text PyPad(const Text& s, int64_t width, const Text& fill, char align) {
    const auto len = static_cast<int64_t>(CodePointCount(s.bytes));
    if (width <= len) return s;
    const int64_t marg = width - len;
    int64_t left = 0;
    if (align == '^') {
        left = marg / 2 + (marg & width & 1);
    } else if (align == '>') {
        left = marg;
    }
    const int64_t right = marg - left;
    GrowBy(s.size(), static_cast<size_t>(marg) * fill.size());
    TextBuilder out;
    for (int64_t i = 0; i < left; ++i) out.Append(fill);
    out.Append(s);
    for (int64_t i = 0; i < right; ++i) out.Append(fill);
    Text t = out.Finish();
    t.markup = s.markup;
    return t;
}

}  // namespace prepack::jinja
