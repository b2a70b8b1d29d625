#include "core/chat/reasoning.h"

#include <algorithm>

namespace prepack {
namespace {

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t PartialTagAtEnd(std::string_view text, std::string_view tag) {
    for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
        if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
    }
    return 0;
}

}  // namespace

ReasoningDelta ReasoningSplitter::Push(std::string_view text) {
    ReasoningDelta out;
    if (!enabled_) {
        out.content.assign(text);
        return out;
    }
    std::string buf = std::move(held_);
    buf.append(text);
    held_.clear();
    std::string_view rest = buf;
    while (!rest.empty()) {
        const std::string_view tag = inside_ ? kThinkClose : kThinkOpen;
        std::string& sink = inside_ ? out.reasoning : out.content;
        const size_t at = rest.find(tag);
        if (at != std::string_view::npos) {
            sink.append(rest.substr(0, at));
            rest.remove_prefix(at + tag.size());
            inside_ = !inside_;
            continue;
        }
        const size_t partial = PartialTagAtEnd(rest, tag);
        sink.append(rest.substr(0, rest.size() - partial));
        held_.assign(rest.substr(rest.size() - partial));
        break;
    }
    return out;
}

ReasoningDelta ReasoningSplitter::Flush() {
    ReasoningDelta out;
    (inside_ ? out.reasoning : out.content) = std::move(held_);
    held_.clear();
    return out;
}

}  // namespace prepack
