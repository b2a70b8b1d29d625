// String values with content tracking (see template.h): the bytes plus the
// sorted byte ranges that came from content strings. Every string the engine
// builds goes through TextBuilder, which keeps the ranges exact for
// concatenation and substrings and enforces the size bounds as it grows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/jinja/template.h"

namespace prepack::jinja {

struct Text {
    std::string       bytes;
    std::vector<Span> content;  // sorted, disjoint, merged, none empty
    // markupsafe.Markup (made by escape / safe): Python's Markup escapes a
    // plain string added to it, which `+` must reproduce.
    bool markup = false;

    bool has_content() const { return !content.empty(); }
    size_t size() const { return bytes.size(); }
    // Whether bytes [begin, end) overlap content.
    bool ContentIn(size_t begin, size_t end) const;
};

class TextBuilder {
public:
    TextBuilder() = default;

    size_t size() const { return bytes_.size(); }
    bool empty() const { return bytes_.empty(); }
    std::string_view view() const { return bytes_; }

    // Literal bytes, content or not.
    void Append(std::string_view s, bool content = false);
    void Append(char c, bool content = false) { Append(std::string_view(&c, 1), content); }
    // A whole Text with its content ranges.
    void Append(const Text& t);
    // Bytes [begin, end) of `t` with the content ranges inside them.
    void AppendRange(const Text& t, size_t begin, size_t end);
    // Marks everything built so far as content (an operation whose byte
    // mapping is not followed exactly).
    void MarkAllContent();
    void set_markup(bool m) { markup_ = m; }

    Text Finish();

private:
    void AddSpan(size_t begin, size_t end);

    std::string       bytes_;
    std::vector<Span> spans_;
    bool              markup_ = false;
};

// Builds a Text from bytes that are all content or none.
Text MakeText(std::string bytes, bool content = false);
// The substring [begin, end) of `t` (byte offsets), content kept exactly.
Text SubText(const Text& t, size_t begin, size_t end);

// ---- UTF-8 ------------------------------------------------------------------
// Strings are handled as Python does, by code point. Invalid UTF-8 cannot come
// from Python, but the engine must not trip on it: an invalid byte counts as a
// code point of its own (0xDC80 + byte, as Python's surrogateescape would).

// Decodes the code point at `pos` and advances `pos`.
uint32_t DecodeUtf8(std::string_view s, size_t& pos);
void AppendUtf8(std::string& out, uint32_t cp);
// Python's backslash escape of one code point, as repr() and
// "backslashreplace" write it: \xhh up to 0xFF, \uhhhh, then \Uhhhhhhhh.
void AppendPyEscape(std::string& out, uint32_t cp);
bool IsAscii(std::string_view s);
// Number of code points.
size_t CodePointCount(std::string_view s);
// Byte offsets where each code point starts, plus s.size() at the end.
std::vector<size_t> CodePointStarts(std::string_view s);
// The code point index of byte offset `byte` (which starts a code point).
size_t CodePointIndex(std::string_view s, size_t byte);

// Python's str.isspace() / the whitespace str.split() and str.strip() use.
bool IsPyWhitespace(uint32_t cp);

}  // namespace prepack::jinja
