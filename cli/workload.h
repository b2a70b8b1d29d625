// Synthetic prompt-length workloads for benchmarks: distributions given on
// the command line ("uniform:MIN:MAX", "lognormal:MEAN:CV", "fixed:L") or a
// file of whitespace-separated lengths, and their summary statistics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace prepack::cli {

// `n` lengths drawn from `spec` with `seed`, each clamped to [1, max_len].
// INVALID_ARGUMENT names a malformed spec.
absl::StatusOr<std::vector<int32_t>> SampleLengths(const std::string& spec, int32_t n, uint64_t seed,
                                                   int32_t max_len);
// Lengths from a file (whitespace-separated positive integers, each <= max_len).
absl::StatusOr<std::vector<int32_t>> ReadLengthsFile(const std::string& path, int32_t max_len);

// count, mean, cv (stddev / mean), min, max, total.
nlohmann::json LengthStats(const std::vector<int32_t>& lengths);

// Deterministic random prompts of the given lengths, ids in [3, vocab).
std::vector<std::vector<int32_t>> RandomPrompts(const std::vector<int32_t>& lengths, int32_t vocab, uint64_t seed);

}  // namespace prepack::cli
