// Separates a reasoning model's thinking from its answer as the text
// streams: what lies between <think> and </think> (Qwen3, DeepSeek-R1,
// SmolLM3 style) is reasoning, the rest is the answer, the tags themselves
// are neither. A tag split across tokens is held back until it is whole, so
// no delta ever carries part of one.
#pragma once

#include <string>
#include <string_view>

namespace prepack {

struct ReasoningDelta {
    std::string reasoning;
    std::string content;
};

class ReasoningSplitter {
public:
    // `enabled` false: everything is content (models without thinking).
    // `inside`: the prompt already opened a <think> section (DeepSeek-R1's
    // template ends its generation prompt with "<think>\n").
    ReasoningSplitter(bool enabled = false, bool inside = false) : enabled_(enabled), inside_(inside) {}

    ReasoningDelta Push(std::string_view text);
    // Releases text held back for a possible tag (at the end of generation).
    ReasoningDelta Flush();
    bool inside() const { return inside_; }

private:
    bool        enabled_;
    bool        inside_;
    std::string held_;   // a suffix that may begin the next tag
};

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

}  // namespace prepack
