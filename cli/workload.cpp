#include "cli/workload.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/request/sampler.h"

namespace prepack::cli {
namespace {

absl::Status BadSpec(const std::string& spec, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("bad --lengths '", spec, "': ", why,
                                                   " (use uniform:MIN:MAX, lognormal:MEAN:CV or fixed:L)"));
}

// Standard normal from two uniforms (Box-Muller); deterministic given the Rng.
double Normal(Rng& rng) {
    const double u1 = (static_cast<double>(rng.NextU64() >> 11) + 1.0) / 9007199254740993.0;   // (0, 1]
    const double u2 = static_cast<double>(rng.NextU64() >> 11) / 9007199254740992.0;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> SampleLengths(const std::string& spec, int32_t n, uint64_t seed,
                                                   int32_t max_len) {
    const std::vector<std::string> parts = absl::StrSplit(spec, ':');
    std::vector<double> args;
    for (size_t i = 1; i < parts.size(); ++i) {
        double v;
        if (!absl::SimpleAtod(parts[i], &v) || !std::isfinite(v)) return BadSpec(spec, "'" + parts[i] + "' is not a number");
        args.push_back(v);
    }
    Rng rng(seed);
    std::vector<double> raw;
    const std::string& kind = parts[0];
    if (kind == "uniform") {
        if (args.size() != 2 || args[0] < 1 || args[1] < args[0]) return BadSpec(spec, "needs 1 <= MIN <= MAX");
        const int64_t lo = static_cast<int64_t>(args[0]), hi = static_cast<int64_t>(args[1]);
        for (int32_t i = 0; i < n; ++i) raw.push_back(double(lo + static_cast<int64_t>(rng.NextU64() % uint64_t(hi - lo + 1))));
    } else if (kind == "lognormal") {
        if (args.size() != 2 || args[0] < 1 || args[1] < 0) return BadSpec(spec, "needs MEAN >= 1 and CV >= 0");
        // Parameters of the underlying normal that give this mean and CV.
        const double sigma2 = std::log(1.0 + args[1] * args[1]);
        const double mu = std::log(args[0]) - sigma2 / 2.0;
        for (int32_t i = 0; i < n; ++i) raw.push_back(std::exp(mu + std::sqrt(sigma2) * Normal(rng)));
    } else if (kind == "fixed") {
        if (args.size() != 1 || args[0] < 1) return BadSpec(spec, "needs L >= 1");
        raw.assign(n, args[0]);
    } else {
        return BadSpec(spec, "unknown distribution '" + kind + "'");
    }
    std::vector<int32_t> lengths;
    for (double v : raw) lengths.push_back(static_cast<int32_t>(std::clamp(std::llround(v), 1ll, (long long)max_len)));
    return lengths;
}

absl::StatusOr<std::vector<int32_t>> ReadLengthsFile(const std::string& path, int32_t max_len) {
    std::ifstream f(path);
    if (!f) return absl::NotFoundError(absl::StrCat("cannot open lengths file '", path, "'"));
    std::vector<int32_t> lengths;
    std::string word;
    while (f >> word) {
        int64_t v;
        if (!absl::SimpleAtoi(word, &v) || v < 1 || v > max_len) {
            return absl::InvalidArgumentError(absl::StrCat("lengths file '", path, "': '", word,
                                                           "' is not a length in [1, ", max_len, "]"));
        }
        lengths.push_back(static_cast<int32_t>(v));
    }
    if (lengths.empty()) return absl::InvalidArgumentError(absl::StrCat("lengths file '", path, "' has no lengths"));
    return lengths;
}

nlohmann::json LengthStats(const std::vector<int32_t>& lengths) {
    double sum = 0, sq = 0;
    int32_t lo = lengths.empty() ? 0 : lengths[0], hi = lo;
    for (int32_t l : lengths) {
        sum += l;
        sq += double(l) * l;
        lo = std::min(lo, l);
        hi = std::max(hi, l);
    }
    const double n = std::max<size_t>(lengths.size(), 1);
    const double mean = sum / n;
    const double var = std::max(0.0, sq / n - mean * mean);
    return {{"count", lengths.size()}, {"mean", mean}, {"cv", mean > 0 ? std::sqrt(var) / mean : 0.0},
            {"min", lo}, {"max", hi}, {"total", static_cast<int64_t>(sum)}};
}

std::vector<std::vector<int32_t>> RandomPrompts(const std::vector<int32_t>& lengths, int32_t vocab, uint64_t seed) {
    Rng rng(seed ^ 0x5EED5EED5EEDull);
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t n : lengths) {
        std::vector<int32_t> ids(n);
        for (int32_t& id : ids) id = 3 + static_cast<int32_t>(rng.NextU64() % uint64_t(vocab - 3));
        prompts.push_back(std::move(ids));
    }
    return prompts;
}

}  // namespace prepack::cli
