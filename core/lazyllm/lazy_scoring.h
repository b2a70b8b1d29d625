// How LazyLLM decides which tokens a step keeps, beyond the schedule's keep
// fractions: whose attention scores the tokens, how the heads combine, and
// which tokens are kept whatever their score. The paper's rule is the last
// token's attention averaged over heads, nothing protected (the member
// defaults below); on trained weights that rule drops what a question
// needs (issue 39), so the engine's default (DefaultLazyScoring) was chosen
// by the long-context evaluation (`prepack eval lazy --tasks`,
// docs/benchmarks.md "LazyLLM on a real model").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace prepack {

struct LazyScoring {
    // The last `window` tokens' attention, averaged (SnapKV's observation
    // window: a question's words look at what answers it).
    int32_t window = 1;
    // Heads combined by their maximum instead of their mean.
    bool head_max = false;
    // Each token scores the best of the 2 * pool + 1 tokens around it, so
    // the pieces of a word or a number live or die together.
    int32_t pool = 0;
    // The first `sinks` tokens (attention sinks) and the last `recent`
    // tokens are always kept.
    int32_t sinks = 0;
    int32_t recent = 0;

    bool operator==(const LazyScoring&) const = default;
};

// The paper's rule: the last token alone, the heads' mean, nothing kept
// by position.
inline LazyScoring PaperLazyScoring() { return {}; }

// The engine's default.
LazyScoring DefaultLazyScoring();

// Parses "window=16,heads=max,pool=3,sinks=4,recent=16" (any subset, in
// any order; the rest from the default), or "paper" / "default".
// INVALID_ARGUMENT naming the bad item.
absl::StatusOr<LazyScoring> ParseLazyScoring(std::string_view text);

// "window=W,heads=mean|max,pool=P,sinks=S,recent=R" (what ParseLazyScoring reads).
std::string FormatLazyScoring(const LazyScoring& scoring);

}  // namespace prepack
