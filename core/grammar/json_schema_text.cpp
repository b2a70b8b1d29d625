#include "core/grammar/json_schema_text.h"

#include <cstdio>

namespace prepack::grammar::schema {
namespace {

std::string HexByte(uint8_t b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
    return buf;
}

bool IsAsciiAlnum(uint32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Length of the UTF-8 sequence starting at s[i] (1..4), 0 when invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i, uint32_t* code_point) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t b0 = byte(i);
    if (b0 < 0x80) {
        *code_point = b0;
        return 1;
    }
    size_t len = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        len = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (i + len > s.size()) return 0;
    for (size_t k = 1; k < len; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    *code_point = cp;
    return len;
}

}  // namespace

std::string GbnfLiteral(std::string_view bytes) {
    std::string out = "\"";
    for (size_t i = 0; i < bytes.size();) {
        const uint8_t b = static_cast<uint8_t>(bytes[i]);
        if (b == '"' || b == '\\') {
            out += '\\';
            out += static_cast<char>(b);
            ++i;
        } else if (b == '\n') {
            out += "\\n", ++i;
        } else if (b == '\r') {
            out += "\\r", ++i;
        } else if (b == '\t') {
            out += "\\t", ++i;
        } else if (b < 0x20 || b == 0x7F) {
            out += HexByte(b), ++i;
        } else if (b < 0x80) {
            out += static_cast<char>(b), ++i;
        } else {
            uint32_t cp = 0;
            const size_t len = Utf8SequenceLength(bytes, i, &cp);
            if (len == 0) {
                out += HexByte(b), ++i;
            } else {
                out.append(bytes.substr(i, len));
                i += len;
            }
        }
    }
    out += '"';
    return out;
}

std::string GbnfClassChar(uint32_t code_point) {
    if (code_point < 0x80) {
        if (IsAsciiAlnum(code_point)) return std::string(1, static_cast<char>(code_point));
        return HexByte(static_cast<uint8_t>(code_point));
    }
    return EncodeUtf8(code_point);
}

std::string Seq(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (const std::string_view p : parts) {
        if (p.empty()) continue;
        if (!out.empty()) out += ' ';
        out += p;
    }
    return out;
}

char JsonShortEscape(uint32_t c) {
    switch (c) {
        case '"': return '"';
        case '\\': return '\\';
        case '\b': return 'b';
        case '\f': return 'f';
        case '\n': return 'n';
        case '\r': return 'r';
        case '\t': return 't';
        default: return 0;
    }
}

std::string JsonStringText(std::string_view utf8) {
    std::string out = "\"";
    for (const char ch : utf8) {
        const uint8_t b = static_cast<uint8_t>(ch);
        if (const char e = JsonShortEscape(b); e != 0) {
            out += '\\';
            out += e;
        } else if (b < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", b);
            out += buf;
        } else {
            out += ch;
        }
    }
    out += '"';
    return out;
}

bool DecodeUtf8(std::string_view utf8, std::vector<uint32_t>* code_points) {
    code_points->clear();
    for (size_t i = 0; i < utf8.size();) {
        uint32_t cp = 0;
        const size_t len = Utf8SequenceLength(utf8, i, &cp);
        if (len == 0) return false;
        code_points->push_back(cp);
        i += len;
    }
    return true;
}

std::string EncodeUtf8(uint32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

std::string PointerToken(std::string_view name) {
    std::string out;
    for (const char c : name) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

std::string RuleNameFragment(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (IsAsciiAlnum(static_cast<uint8_t>(c))) {
            out += c;
        } else if (!out.empty() && out.back() != '-') {
            out += '-';
        }
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    if (out.empty()) out.push_back('x');
    return out;
}

}  // namespace prepack::grammar::schema
