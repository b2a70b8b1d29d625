#include "core/lazyllm/lazy_schedule.h"

#include <cmath>

#include <charconv>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prepack {
namespace {

// Parses all of `text` as a T (no sign, space or trailing characters).
template <typename T>
bool ParseWhole(std::string_view text, T* out) {
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, *out);
    return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

LazySchedule DefaultLazySchedule(int32_t n_layers) {
    LazySchedule s;
    const float keeps[] = {0.5f, 0.3f, 0.15f};
    for (int q = 1; q <= 3; ++q) {
        // Last layer of the q-th quarter; pruning after the final layer would save nothing.
        const int32_t layer = std::max(0, static_cast<int32_t>(std::lround(n_layers * q / 4.0)) - 1);
        if (layer >= n_layers - 1) break;
        if (!s.empty() && layer <= s.back().layer) continue;
        s.push_back({layer, keeps[q - 1]});
    }
    return s;
}

absl::StatusOr<LazySchedule> ParseLazySchedule(std::string_view text, int32_t n_layers) {
    if (text.empty()) return DefaultLazySchedule(n_layers);
    LazySchedule s;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string_view::npos) comma = text.size();
        const std::string_view item = text.substr(start, comma - start);
        start = comma + 1;
        const size_t colon = item.find(':');
        int32_t layer = 0;
        float keep = 0.0f;
        auto bad = [&](std::string_view why) {
            return absl::InvalidArgumentError(
                absl::StrCat("lazy schedule item '", std::string(item), "': ", std::string(why)));
        };
        if (colon == std::string_view::npos || !ParseWhole(item.substr(0, colon), &layer) ||
            !ParseWhole(item.substr(colon + 1), &keep)) {
            return bad("expected LAYER:KEEP, e.g. 3:0.5");
        }
        if (layer < 0 || layer >= n_layers - 1) {
            return bad(absl::StrCat("layer must be in [0, ", n_layers - 1, ") for a model of ", n_layers, " layers"));
        }
        if (!(keep > 0.0f && keep <= 1.0f)) return bad("keep fraction must be in (0, 1]");
        if (!s.empty() && layer <= s.back().layer) return bad("layers must be ascending");
        if (!s.empty() && keep > s.back().keep) return bad("keep fractions must not increase");
        s.push_back({layer, keep});
    }
    return s;
}

LazySchedule ScaledLazySchedule(int32_t n_layers, float final_keep) {
    LazySchedule s = DefaultLazySchedule(n_layers);
    for (size_t i = 0; i < s.size(); ++i) {
        s[i].keep = std::pow(final_keep, float(i + 1) / float(s.size()));
    }
    return s;
}

absl::StatusOr<LazySchedule> ResolveLazySchedule(std::string_view text, float keep_ratio, int32_t n_layers) {
    if (!text.empty()) return ParseLazySchedule(text, n_layers);
    if (!(keep_ratio >= 0.0f && keep_ratio <= 1.0f)) {
        return absl::InvalidArgumentError(absl::StrCat("lazy keep ratio must be in (0, 1] (0 = default), got ", keep_ratio));
    }
    if (keep_ratio > 0.0f && keep_ratio < 1.0f) return ScaledLazySchedule(n_layers, keep_ratio);
    if (keep_ratio == 1.0f) {
        LazySchedule s = DefaultLazySchedule(n_layers);
        for (LazyPoint& p : s) p.keep = 1.0f;
        return s;
    }
    return DefaultLazySchedule(n_layers);
}

std::string FormatLazySchedule(const LazySchedule& schedule) {
    return absl::StrJoin(schedule, ",", [](std::string* out, const LazyPoint& p) {
        absl::StrAppend(out, p.layer, ":", p.keep);
    });
}

}  // namespace prepack
