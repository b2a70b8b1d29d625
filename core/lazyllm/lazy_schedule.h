// LazyLLM's progressive pruning schedule: at each listed layer, a sequence
// keeps the `keep` fraction of its context that the last token attends to
// most; the rest skip every later layer of this step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace prepack {

struct LazyPoint {
    int32_t layer;   // pruning happens after this layer
    float   keep;    // fraction of the sequence's tokens (so far) kept after it, in (0, 1]
};

// Ascending layers, non-increasing keep fractions.
using LazySchedule = std::vector<LazyPoint>;

// The default for a model of `n_layers`: every token through the first
// quarter of the layers, then 50%, 30% and 15% after the first, second and
// third quarters (LazyLLM's progressive pruning, Fu et al. 2024, Fig. 3).
LazySchedule DefaultLazySchedule(int32_t n_layers);

// Parses "L1:K1,L2:K2,..." (layers 0-based, keeps in (0, 1]). INVALID_ARGUMENT
// naming the bad item: malformed, a layer outside [0, n_layers - 1), layers
// not ascending, keeps outside (0, 1] or increasing. An empty string is the
// default schedule.
absl::StatusOr<LazySchedule> ParseLazySchedule(std::string_view text, int32_t n_layers);

// The default schedule's layers with keep fractions final^(1/3), final^(2/3)
// and final: one knob for how hard to prune. `final` in (0, 1].
LazySchedule ScaledLazySchedule(int32_t n_layers, float final_keep);

// A request's schedule: `text` when set, else ScaledLazySchedule when
// keep_ratio is in (0, 1), else the default. INVALID_ARGUMENT for a bad text
// or a keep_ratio outside [0, 1].
absl::StatusOr<LazySchedule> ResolveLazySchedule(std::string_view text, float keep_ratio, int32_t n_layers);

// "L1:K1,L2:K2" (what ParseLazySchedule reads).
std::string FormatLazySchedule(const LazySchedule& schedule);

}  // namespace prepack
