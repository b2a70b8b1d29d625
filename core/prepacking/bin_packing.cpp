#include "core/prepacking/bin_packing.h"

#include <algorithm>
#include <numeric>

namespace prepack {

absl::StatusOr<BinPacking> ParseBinPacking(std::string_view name) {
    if (name == "bfd") return BinPacking::kBestFitDecreasing;
    if (name == "ffd") return BinPacking::kFirstFitDecreasing;
    return absl::InvalidArgumentError(absl::StrCat("unknown bin packing '", std::string(name), "' (use bfd or ffd)"));
}

absl::StatusOr<std::vector<std::vector<int32_t>>> PackBins(const std::vector<int32_t>& lengths,
                                                           int32_t capacity, BinPacking algo) {
    if (capacity < 1) return absl::InvalidArgumentError(absl::StrCat("bin capacity must be >= 1, got ", capacity));
    for (size_t i = 0; i < lengths.size(); ++i) {
        if (lengths[i] < 1 || lengths[i] > capacity) {
            return absl::InvalidArgumentError(absl::StrCat("item ", i, " has length ", lengths[i],
                                                           ", outside [1, capacity ", capacity, "]"));
        }
    }
    std::vector<int32_t> order(lengths.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return lengths[a] > lengths[b]; });

    std::vector<std::vector<int32_t>> bins;
    std::vector<int64_t> fill;
    // Quadratic in the number of bins, which is fine for batches of
    // thousands; a balanced tree keyed on fill would make it n log n.
    for (int32_t item : order) {
        int64_t best = -1;
        for (size_t b = 0; b < bins.size(); ++b) {
            if (fill[b] + lengths[item] > capacity) continue;
            if (algo == BinPacking::kFirstFitDecreasing) {
                best = static_cast<int64_t>(b);
                break;
            }
            if (best < 0 || fill[b] > fill[best]) best = static_cast<int64_t>(b);
        }
        if (best < 0) {
            bins.emplace_back();
            fill.push_back(0);
            best = static_cast<int64_t>(bins.size()) - 1;
        }
        bins[best].push_back(item);
        fill[best] += lengths[item];
    }
    return bins;
}

}  // namespace prepack
