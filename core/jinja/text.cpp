#include "core/jinja/text.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/jinja/budget.h"

namespace prepack::jinja {

bool Text::ContentIn(size_t begin, size_t end) const {
    if (begin >= end) return false;
    // First span ending after begin.
    auto it = std::lower_bound(content.begin(), content.end(), begin,
                               [](const Span& s, size_t b) { return s.end <= b; });
    return it != content.end() && it->begin < end;
}

void TextBuilder::AddSpan(size_t begin, size_t end) {
    if (begin >= end) return;
    if (!spans_.empty() && spans_.back().end >= begin) {
        spans_.back().end = std::max(spans_.back().end, end);
        return;
    }
    spans_.push_back({begin, end});
}

void TextBuilder::Append(std::string_view s, bool content) {
    if (s.empty()) return;
    GrowBy(bytes_.size(), s.size());
    const size_t at = bytes_.size();
    bytes_.append(s);
    if (content) AddSpan(at, bytes_.size());
}

void TextBuilder::Append(const Text& t) { AppendRange(t, 0, t.bytes.size()); }

void TextBuilder::AppendRange(const Text& t, size_t begin, size_t end) {
    end = std::min(end, t.bytes.size());
    if (begin >= end) return;
    GrowBy(bytes_.size(), end - begin);
    const size_t at = bytes_.size();
    bytes_.append(t.bytes, begin, end - begin);
    if (t.content.empty()) return;
    auto it = std::lower_bound(t.content.begin(), t.content.end(), begin,
                               [](const Span& s, size_t b) { return s.end <= b; });
    for (; it != t.content.end() && it->begin < end; ++it) {
        AddSpan(at + std::max(it->begin, begin) - begin, at + std::min(it->end, end) - begin);
    }
}

void TextBuilder::MarkAllContent() {
    spans_.clear();
    AddSpan(0, bytes_.size());
}

Text TextBuilder::Finish() {
    Text t;
    t.bytes = std::move(bytes_);
    t.content = std::move(spans_);
    t.markup = markup_;
    bytes_.clear();
    spans_.clear();
    markup_ = false;
    return t;
}

Text MakeText(std::string bytes, bool content) {
    Text t;
    if (content && !bytes.empty()) t.content.push_back({0, bytes.size()});
    t.bytes = std::move(bytes);
    return t;
}

Text SubText(const Text& t, size_t begin, size_t end) {
    if (begin == 0 && end >= t.bytes.size()) return t;
    TextBuilder b;
    b.AppendRange(t, begin, end);
    Text out = b.Finish();
    out.markup = t.markup;
    return out;
}

uint32_t DecodeUtf8(std::string_view s, size_t& pos) {
    const auto c0 = static_cast<unsigned char>(s[pos]);
    if (c0 < 0x80) {
        ++pos;
        return c0;
    }
    int len = 0;
    uint32_t cp = 0, min = 0;
    if ((c0 & 0xE0) == 0xC0) {
        len = 2, cp = c0 & 0x1F, min = 0x80;
    } else if ((c0 & 0xF0) == 0xE0) {
        len = 3, cp = c0 & 0x0F, min = 0x800;
    } else if ((c0 & 0xF8) == 0xF0) {
        len = 4, cp = c0 & 0x07, min = 0x10000;
    }
    if (len == 0 || pos + len > s.size()) {
        ++pos;
        return 0xDC00 + c0;
    }
    for (int i = 1; i < len; ++i) {
        const auto c = static_cast<unsigned char>(s[pos + i]);
        if ((c & 0xC0) != 0x80) {
            ++pos;
            return 0xDC00 + c0;
        }
        cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++pos;
        return 0xDC00 + c0;
    }
    pos += len;
    return cp;
}

void AppendPyEscape(std::string& out, uint32_t cp) {
    char buf[16];
    if (cp <= 0xFF) {
        std::snprintf(buf, sizeof buf, "\\x%02x", cp);
    } else if (cp <= 0xFFFF) {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    } else {
        std::snprintf(buf, sizeof buf, "\\U%08x", cp);
    }
    out += buf;
}

void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an invalid byte kept as it was
        out.push_back(static_cast<char>(cp - 0xDC00));
    } else if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool IsAscii(std::string_view s) {
    for (char c : s) {
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    }
    return true;
}

size_t CodePointCount(std::string_view s) {
    if (IsAscii(s)) return s.size();
    size_t n = 0;
    for (size_t pos = 0; pos < s.size(); ++n) DecodeUtf8(s, pos);
    return n;
}

std::vector<size_t> CodePointStarts(std::string_view s) {
    std::vector<size_t> starts;
    starts.reserve(s.size() + 1);
    for (size_t pos = 0; pos < s.size();) {
        starts.push_back(pos);
        DecodeUtf8(s, pos);
    }
    starts.push_back(s.size());
    return starts;
}

size_t CodePointIndex(std::string_view s, size_t byte) {
    size_t n = 0;
    for (size_t pos = 0; pos < byte && pos < s.size(); ++n) DecodeUtf8(s, pos);
    return n;
}

bool IsPyWhitespace(uint32_t cp) {
    switch (cp) {
        case ' ': case '\t': case '\n': case '\v': case '\f': case '\r':
        case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x85: case 0xA0:
        case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

}  // namespace prepack::jinja
