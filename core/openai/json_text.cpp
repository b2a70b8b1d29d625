#include "openai/json_text.h"

#include <algorithm>
#include <cstdint>

namespace prepack::openai {
namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 when the bytes there
// are not one.
size_t SequenceLength(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
        len = 1, cp = c;
    } else if ((c & 0xE0) == 0xC0) {
        len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + k]);
        ok = (cc & 0xC0) == 0x80;
        cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    return ok ? len : 0;
}

}  // namespace

int JsonNestingDepth(std::string_view text) {
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
            if (deepest > kMaxJsonDepth) break;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

absl::Status ParseObject(std::string_view text, const std::string& field, Json* out) {
    const std::string at = field.empty() ? "" : field + ": ";
    if (JsonNestingDepth(text) > kMaxJsonDepth) {
        return absl::InvalidArgumentError(at + "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                          " levels");
    }
    try {
        *out = Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error& e) {
        const std::string what = e.what();
        const bool utf8 = what.find("UTF-8") != std::string::npos || what.find("utf-8") != std::string::npos;
        return absl::InvalidArgumentError(at + (utf8 ? "invalid UTF-8" : "not valid JSON") +
                                          " (error at byte " + std::to_string(e.byte) + ")");
    }
    if (!out->is_object()) {
        return absl::InvalidArgumentError(at + "must be a JSON object, got " +
                                          (out->is_number_integer() ? "integer" : out->type_name()));
    }
    return absl::OkStatus();
}

std::string ToValidUtf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const size_t len = SequenceLength(s, i);
        if (len > 0) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out.append("\xEF\xBF\xBD");
            i += 1;
        }
    }
    return out;
}

size_t ValidUtf8Prefix(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const size_t len = SequenceLength(s, i);
        if (len == 0) break;
        i += len;
    }
    return i;
}

size_t CodePoints(std::string_view s) {
    size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace prepack::openai
