// Bin packing of prompt lengths into rows of fixed capacity, as Prepacking
// (Zhao et al. 2024) does with binpacking 1.5.2's to_constant_volume:
// Best-Fit Decreasing — longest item first, each into the fullest bin where
// it still fits, a new bin only when none fits. First-Fit Decreasing (the
// first bin where it fits) is kept for comparison.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace prepack {

enum class BinPacking { kBestFitDecreasing, kFirstFitDecreasing };

// "bfd" or "ffd"; INVALID_ARGUMENT otherwise.
absl::StatusOr<BinPacking> ParseBinPacking(std::string_view name);

// Returns the bins as lists of item indices, each bin in the order items were
// placed (longest first). Ties in length keep input order; among equally full
// bins the earliest wins. INVALID_ARGUMENT when an item is longer than
// `capacity`, non-positive, or capacity < 1.
absl::StatusOr<std::vector<std::vector<int32_t>>> PackBins(const std::vector<int32_t>& lengths,
                                                           int32_t capacity, BinPacking algo);

}  // namespace prepack
