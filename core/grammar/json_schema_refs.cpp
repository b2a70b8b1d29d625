#include "core/grammar/json_schema_refs.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "core/grammar/json_schema_text.h"

namespace prepack::grammar::schema {
namespace {

int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool PercentDecode(std::string_view in, std::string* out) {
    out->clear();
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            *out += in[i];
            continue;
        }
        if (i + 2 >= in.size()) return false;
        const int hi = HexValue(in[i + 1]);
        const int lo = HexValue(in[i + 2]);
        if (hi < 0 || lo < 0) return false;
        *out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return true;
}

// One reference token with ~1 -> '/' and ~0 -> '~'; false for a bad escape.
bool UnescapeToken(std::string_view token, std::string* out) {
    out->clear();
    for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] != '~') {
            *out += token[i];
            continue;
        }
        if (i + 1 >= token.size()) return false;
        if (token[i + 1] == '0') {
            *out += '~';
        } else if (token[i + 1] == '1') {
            *out += '/';
        } else {
            return false;
        }
        ++i;
    }
    return true;
}

}  // namespace

absl::StatusOr<ResolvedRef> ResolveRef(const nlohmann::ordered_json& root, std::string_view ref, const std::string& where) {
    const auto refuse = [&](std::string_view why) {
        return absl::InvalidArgumentError(absl::StrCat("$ref \"", std::string(ref), "\" at ", where, ": ", std::string(why)));
    };
    if (ref.empty() || ref[0] != '#') return refuse("only references inside the schema (\"#...\") are supported");
    std::string pointer;
    if (!PercentDecode(ref.substr(1), &pointer)) return refuse("bad percent-escape");
    if (!pointer.empty() && pointer[0] != '/') return refuse("anchors are not supported, only JSON pointers");
    const nlohmann::ordered_json* node = &root;
    std::string canonical;
    size_t pos = 0;
    while (pos < pointer.size()) {
        const size_t next = pointer.find('/', pos + 1);
        const std::string_view raw = std::string_view(pointer).substr(pos + 1, next == std::string::npos ? std::string::npos
                                                                                                         : next - pos - 1);
        pos = next == std::string::npos ? pointer.size() : next;
        std::string token;
        if (!UnescapeToken(raw, &token)) return refuse("bad ~ escape in the JSON pointer");
        if (node->is_object()) {
            const auto it = node->find(token);
            if (it == node->end()) return refuse(absl::StrCat("no \"", token, "\" there"));
            node = &*it;
        } else if (node->is_array()) {
            size_t index = 0;
            const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
            if (ec != std::errc() || end != token.data() + token.size() || token.empty() ||
                (token.size() > 1 && token[0] == '0') || index >= node->size()) {
                return refuse(absl::StrCat("no item \"", token, "\" there"));
            }
            node = &(*node)[index];
        } else {
            return refuse("the pointer goes through a value that is not an object or array");
        }
        absl::StrAppend(&canonical, "/", PointerToken(token));
    }
    return ResolvedRef{canonical, node};
}

}  // namespace prepack::grammar::schema
