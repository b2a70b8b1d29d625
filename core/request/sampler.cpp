// Token sampling. The pipeline per call is:
//   copy logits -> repetition penalty -> (greedy | temperature -> top-k ->
//   softmax -> top-p -> min-p -> draw).
// With a grammar's mask (SampleAllowed) the copy makes forbidden ids -inf
// and the candidates are the allowed ids only, so every filter after it
// sees the allowed distribution.
// Probabilities are kept as unnormalised weights exp((x - max) / T): the
// largest candidate then has weight exactly 1, which makes the min-p
// threshold trivial, and renormalising is folded into the final draw.
#include "core/request/sampler.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

namespace prepack {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Top-p compares a float running sum against top_p * total. Weights come out
// of expf with a few ulps of error, so a nucleus that reaches top_p exactly in
// real arithmetic (e.g. 0.5 + 0.3 >= 0.8) could otherwise be extended by one
// token purely through rounding. This relative slack absorbs that.
constexpr double kTopPSlack = 1e-6;

// Top-k uses heap selection (partial_sort) while k is at most this fraction
// of the vocabulary, where it beats nth_element; above it, nth_element + sort.
constexpr size_t kPartialSortRatio = 16;

// Ranges this small are finished by sorting instead of partitioning further.
constexpr size_t kQuickselectCutoff = 32;

absl::Status Invalid(const char* field, const char* rule, double value) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be ", rule, ", got ", value));
}

uint64_t SplitMix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Strict total order "larger value first, then lower id", so top-k ties at
// the boundary and nucleus ordering are well defined and library independent.
// Values are never NaN here (Sample maps NaN to -inf first).
struct ByValueDesc {
    const float* values;
    bool operator()(int32_t a, int32_t b) const {
        if (values[a] != values[b]) return values[a] > values[b];
        return a < b;
    }
};

}  // namespace

absl::Status ValidateSamplingParams(const SamplingParams& p) {
    // Comparisons are written so that NaN fails them (every NaN compare is false).
    if (!std::isfinite(p.temperature) || !(p.temperature >= 0.0f)) {
        return Invalid("temperature", "a finite number >= 0", p.temperature);
    }
    if (p.top_k < 0) return Invalid("top_k", ">= 0", p.top_k);
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
        return Invalid("top_p", "a finite number in (0, 1]", p.top_p);
    }
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
        return Invalid("min_p", "a number in [0, 1]", p.min_p);
    }
    if (!std::isfinite(p.repetition_penalty) || !(p.repetition_penalty > 0.0f)) {
        return Invalid("repetition_penalty", "a finite number > 0", p.repetition_penalty);
    }
    if (p.repetition_window < 0) return Invalid("repetition_window", ">= 0", p.repetition_window);
    return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Rng: SplitMix64 expands the 64-bit seed into xoshiro256** state, which is
// the generator's authors' recommended seeding (it can never be all zero).

Rng::Rng(uint64_t seed) {
    for (uint64_t& word : s_) word = SplitMix64(seed);
}

uint64_t Rng::NextU64() {
    const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
}

float Rng::NextFloat() {
    // 24 bits fill a float mantissa exactly, so the result is an exact
    // multiple of 2^-24 and can never round up to 1.0.
    return static_cast<float>(NextU64() >> 40) * 0x1.0p-24f;
}

// ---------------------------------------------------------------------------
// Sampler

namespace {

// Applies the llama.cpp/CTRL penalty once per distinct id seen in the window.
// `ids` is caller-owned scratch so no allocation happens after warm-up.
void ApplyRepetitionPenalty(std::vector<float>& logits, std::span<const int32_t> history,
                            int32_t window, float penalty, std::vector<int32_t>& ids) {
    const size_t count = (window > 0) ? std::min(history.size(), static_cast<size_t>(window))
                                      : history.size();
    const int64_t vocab = static_cast<int64_t>(logits.size());
    ids.clear();
    for (int32_t id : history.subspan(history.size() - count)) {
        if (id >= 0 && id < vocab) ids.push_back(id);
    }
    // Distinct ids only: a token repeated ten times is penalised once, not
    // penalty^10, matching the reference implementations.
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (int32_t id : ids) {
        float& x = logits[id];
        // Dividing a negative logit would raise its probability, so those are
        // multiplied instead: both directions make the token less likely.
        x = (x > 0.0f) ? x / penalty : x * penalty;
    }
}

// Keeps the k best of `ids` (all vocabulary ids), sorted best first, so the
// draw order does not depend on how the standard library permuted them.
void SelectTopK(std::vector<int32_t>& ids, const float* logits, size_t k) {
    const ByValueDesc better{logits};
    if (k * kPartialSortRatio <= ids.size()) {
        // Heap selection: one pass, and most ids are rejected by a single
        // comparison with the heap's worst, so this is close to O(n).
        std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), better);
    } else {
        std::nth_element(ids.begin(), ids.begin() + k, ids.end(), better);
        std::sort(ids.begin(), ids.begin() + k, better);
    }
    ids.resize(k);
}

// Top-p over candidates already sorted best first: keep the shortest prefix
// whose weight reaches `target` (at least one id).
void TruncateSortedToNucleus(std::vector<int32_t>& ids, const float* weights, double target) {
    double cum = 0.0;
    for (size_t i = 0; i < ids.size(); ++i) {
        cum += weights[ids[i]];
        if (cum >= target) {
            ids.resize(i + 1);
            return;
        }
    }
    // Rounding kept the sum just below target: every candidate stays.
}

// Moves the median of ids[a], ids[b], ids[c] (by `better`) to ids[c].
void MedianOfThreeToBack(std::vector<int32_t>& ids, size_t a, size_t b, size_t c,
                         const ByValueDesc& better) {
    if (better(ids[b], ids[a])) std::swap(ids[a], ids[b]);
    if (better(ids[c], ids[b])) std::swap(ids[b], ids[c]);
    if (better(ids[b], ids[a])) std::swap(ids[a], ids[b]);
    std::swap(ids[b], ids[c]);
}

// Finds the worst member of the nucleus of `ids` (unsorted): the id b such
// that the ids ranked at or above b are the shortest best-first prefix whose
// weight reaches `target`. A quickselect that carries the prefix mass along,
// so it costs O(n) expected instead of sorting the vocabulary. Permutes `ids`.
int32_t NucleusBoundary(std::vector<int32_t>& ids, const float* weights, double target) {
    const ByValueDesc better{weights};
    // The best id alone always qualifies, hence a target above zero.
    target = std::max(target, std::numeric_limits<double>::min());
    size_t lo = 0;
    size_t hi = ids.size();
    double cum = 0.0;   // mass of ids[0, lo), which all rank above ids[lo, hi); < target
    while (hi - lo > kQuickselectCutoff) {
        MedianOfThreeToBack(ids, lo, lo + (hi - lo) / 2, hi - 1, better);
        const int32_t pivot = ids[hi - 1];
        const auto first = ids.begin() + lo;
        const auto split = std::partition(first, ids.begin() + (hi - 1),
                                          [&](int32_t id) { return better(id, pivot); });
        double mass = 0.0;
        for (auto it = first; it != split; ++it) mass += weights[*it];
        const size_t m = static_cast<size_t>(split - ids.begin());
        if (cum + mass >= target) {
            hi = m;   // the boundary ranks above the pivot (m > lo since mass > 0)
            continue;
        }
        // Everything above the pivot is in; the pivot is the best of the rest.
        cum += mass;
        std::swap(ids[m], ids[hi - 1]);
        cum += weights[pivot];
        if (cum >= target) return pivot;
        lo = m + 1;
    }
    std::sort(ids.begin() + lo, ids.begin() + hi, better);
    for (size_t i = lo; i < hi; ++i) {
        cum += weights[ids[i]];
        if (cum >= target) return ids[i];
    }
    // Rounding kept the sum just below target: the worst id examined closes it.
    return ids[hi - 1];
}

// Weights lie in [0, 1], and non-negative floats order like their bit
// patterns, so the top bits make a monotone bucket index: 8 buckets per power
// of two, 1017 in all (1.0f = 0x3F800000 lands in the last one).
constexpr int kBucketShift = 20;
constexpr size_t kNumBuckets = (0x3F800000u >> kBucketShift) + 1;

size_t WeightBucket(float w) { return std::bit_cast<uint32_t>(w) >> kBucketShift; }

// Top-p over the whole vocabulary (`weights` holds every token's weight):
// leaves in `ids` the nucleus in id order. A histogram of mass per bucket
// finds the bucket holding the boundary in one pass, so only that bucket's
// ids need ranking; the cost is O(n) with no sort of the vocabulary.
void KeepNucleusOfVocab(std::vector<int32_t>& ids, std::span<const float> weights, double target) {
    std::array<double, kNumBuckets> mass{};   // 8 KB on the stack, no allocation
    for (float w : weights) mass[WeightBucket(w)] += w;

    // Walk buckets best first until the running mass reaches the target.
    double above = 0.0;   // mass of buckets ranked above `edge`
    size_t edge = kNumBuckets;
    while (edge > 0 && above + mass[edge - 1] < target) above += mass[--edge];
    const size_t n = weights.size();
    ids.resize(n);
    if (edge == 0) {
        // Rounding kept the total just below target: every token stays.
        std::iota(ids.begin(), ids.end(), 0);
        return;
    }
    --edge;   // the bucket where the mass is reached; its mass is positive

    // Branch-free compaction: write every id, advance only for the wanted ones.
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) {
        ids[count] = static_cast<int32_t>(i);
        count += WeightBucket(weights[i]) == edge;
    }
    ids.resize(count);
    const int32_t boundary = NucleusBoundary(ids, weights.data(), target - above);

    const ByValueDesc better{weights.data()};
    ids.resize(n);
    count = 0;
    for (size_t i = 0; i < n; ++i) {
        const int32_t id = static_cast<int32_t>(i);
        ids[count] = id;
        count += (id == boundary) | better(id, boundary);
    }
    ids.resize(count);
}

// Picks one of `ids` with probability weights[id] / total, where `total` is
// the sum of their weights (renormalisation over the surviving candidates is
// this division). Consumes exactly one draw.
int32_t DrawWeighted(const std::vector<int32_t>& ids, const std::vector<float>& weights,
                     double total, Rng& rng) {
    const double target = static_cast<double>(rng.NextFloat()) * total;
    double cum = 0.0;
    int32_t last_positive = ids.front();
    for (int32_t id : ids) {
        const float w = weights[id];
        if (!(w > 0.0f)) continue;   // never pick a zero-probability token
        cum += w;
        last_positive = id;
        if (cum > target) return id;
    }
    // Rounding left `cum` a hair below `target`: take the last real candidate.
    return last_positive;
}

// work = logits with NaN and forbidden ids at -inf. A word at a time: a
// mask is mostly whole words of allowed or forbidden ids (a vocabulary's
// ids cluster by their first bytes), and those copy or fill in a tight loop.
void CopyAllowed(std::span<const float> logits, std::span<const uint64_t> allowed, std::vector<float>& work) {
    const size_t vocab = logits.size();
    for (size_t begin = 0; begin < vocab; begin += 64) {
        const size_t end = std::min(begin + 64, vocab);
        const uint64_t bits = (begin >> 6) < allowed.size() ? allowed[begin >> 6] : 0;
        if (bits == 0) {
            std::fill(work.begin() + begin, work.begin() + end, kNegInf);
        } else if (bits == ~uint64_t{0}) {
            for (size_t i = begin; i < end; ++i) work[i] = std::isnan(logits[i]) ? kNegInf : logits[i];
        } else {
            for (size_t i = begin; i < end; ++i) {
                work[i] = ((bits >> (i - begin)) & 1) && !std::isnan(logits[i]) ? logits[i] : kNegInf;
            }
        }
    }
}

// Weight 0 for the forbidden ids (their -inf logits), a word at a time.
void ZeroForbidden(std::span<const uint64_t> allowed, std::vector<float>& weights) {
    const size_t vocab = weights.size();
    for (size_t begin = 0; begin < vocab; begin += 64) {
        const uint64_t bits = (begin >> 6) < allowed.size() ? allowed[begin >> 6] : 0;
        if (bits == ~uint64_t{0}) continue;
        const size_t end = std::min(begin + 64, vocab);
        for (size_t i = begin; i < end; ++i) {
            if (!((bits >> (i - begin)) & 1)) weights[i] = 0.0f;
        }
    }
}

// Greedy over CopyAllowed's output: forbidden ids are -inf there, so the
// plain argmax is allowed unless every allowed logit is -inf too; then the
// lowest allowed id (ArgMaxAllowed's rule).
int32_t ArgMaxOfAllowedCopy(std::span<const float> work, std::span<const uint64_t> allowed) {
    const int32_t best = ArgMax(work);
    if (work[best] != kNegInf) return best;
    return ArgMaxAllowed(work, allowed);
}

// The allowed ids below `vocab`, ascending (the order Sample's candidates
// have, so that an all-ones mask draws exactly what no mask draws). One
// count-trailing-zeros per allowed id: cheap when the mask is sparse.
void AllowedIds(std::span<const uint64_t> allowed, size_t vocab, std::vector<int32_t>& ids) {
    ids.clear();
    const size_t words = std::min(allowed.size(), (vocab + 63) / 64);
    for (size_t w = 0; w < words; ++w) {
        for (uint64_t bits = allowed[w]; bits != 0; bits &= bits - 1) {
            const size_t id = (w << 6) + static_cast<size_t>(std::countr_zero(bits));
            if (id >= vocab) return;
            ids.push_back(static_cast<int32_t>(id));
        }
    }
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history) {
    return SampleImpl(logits, history, nullptr);
}

int32_t Sampler::SampleAllowed(std::span<const float> logits, std::span<const int32_t> history,
                               std::span<const uint64_t> allowed) {
    return SampleImpl(logits, history, &allowed);
}

int32_t Sampler::SampleImpl(std::span<const float> logits, std::span<const int32_t> history,
                            const std::span<const uint64_t>* allowed) {
    const size_t vocab = logits.size();
    if (vocab == 0) return -1;   // nothing to choose from; no valid id exists

    // NaN would break every comparison below (and the sort's ordering
    // contract), so a corrupt logit simply becomes an impossible token; so
    // does a token the mask forbids, which then stays out of every filter.
    work_.resize(vocab);
    if (allowed == nullptr) {
        for (size_t i = 0; i < vocab; ++i) work_[i] = std::isnan(logits[i]) ? kNegInf : logits[i];
    } else {
        CopyAllowed(logits, *allowed, work_);
    }

    if (params_.repetition_penalty != 1.0f && !history.empty()) {
        ApplyRepetitionPenalty(work_, history, params_.repetition_window,
                               params_.repetition_penalty, order_);
    }

    // Written as !(t > 0) so a NaN temperature (unvalidated params) is greedy too.
    const float temperature = params_.temperature;
    if (!(temperature > 0.0f)) return allowed ? ArgMaxOfAllowedCopy(work_, *allowed) : ArgMax(work_);

    // Candidate ids: the (allowed) vocabulary in id order, or the top k sorted.
    if (allowed == nullptr) {
        order_.resize(vocab);
        std::iota(order_.begin(), order_.end(), 0);
    } else {
        AllowedIds(*allowed, vocab, order_);
        if (order_.empty()) return -1;
    }
    // Top-k as if forbidden ids were -inf logits: with fewer allowed ids than
    // k they are all kept, sorted best first as top-k leaves them, so the
    // draw is the one Sample makes with those logits.
    const bool top_k_active = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab;
    if (top_k_active) {
        SelectTopK(order_, work_.data(), std::min(static_cast<size_t>(params_.top_k), order_.size()));
    }

    // (Forbidden ids are -inf in work_, so its max is the allowed ids' max.)
    const float max_logit = top_k_active ? work_[order_.front()]
                                         : *std::max_element(work_.begin(), work_.end());
    // All -inf: no token has mass. +inf: it dominates every finite logit.
    // Both are degenerate for softmax, so pick the argmax directly.
    if (std::isinf(max_logit)) return allowed ? ArgMaxOfAllowedCopy(work_, *allowed) : ArgMax(work_);

    const bool top_p_active = params_.top_p < 1.0f;
    const bool min_p_active = params_.min_p > 0.0f;
    // Without top-p, min-p does not depend on the softmax total, so it can be
    // applied to logits: w < min_p  <=>  (x - max) / T < log(min_p). That
    // skips the exp for every dropped token (usually nearly all of them).
    if (min_p_active && !top_p_active) {
        const float log_min_p = std::log(std::min(params_.min_p, 1.0f));
        std::erase_if(order_, [&](int32_t id) {
            return (work_[id] - max_logit) / temperature < log_min_p;
        });
    }

    // Softmax numerators in place; the best candidate gets exactly 1.
    // Dividing the shifted logit by T equals shifting the divided logits,
    // since max(x / T) = max(x) / T for T > 0.
    double total = 0.0;
    for (int32_t id : order_) {
        const float w = std::exp((work_[id] - max_logit) / temperature);
        work_[id] = w;
        total += w;
    }

    if (top_p_active) {
        const double target = std::max(0.0, static_cast<double>(params_.top_p) - kTopPSlack) * total;
        if (top_k_active) {
            TruncateSortedToNucleus(order_, work_.data(), target);
        } else {
            // The nucleus is found over the whole vocabulary's weights:
            // forbidden ids still hold their -inf logit, which is weight 0.
            if (allowed != nullptr) ZeroForbidden(*allowed, work_);
            KeepNucleusOfVocab(order_, work_, target);
        }
        if (min_p_active) {
            // p_max is the best candidate's weight, exactly 1 (exp(0));
            // clamping to 1 guarantees that candidate always survives.
            const float threshold = std::min(params_.min_p, 1.0f);
            std::erase_if(order_, [&](int32_t id) { return work_[id] < threshold; });
        }
        total = 0.0;   // renormalise over the survivors
        for (int32_t id : order_) total += work_[id];
    }

    return DrawWeighted(order_, work_, total, rng_);
}

// ---------------------------------------------------------------------------

float LogSoftmaxAt(std::span<const float> logits, int32_t id) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) return kNegInf;
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    if (std::isinf(max_logit)) {
        // Degenerate rows: all -inf has no defined distribution (report the
        // token as impossible); +inf logits share all the mass equally.
        if (max_logit < 0.0f || logits[id] != max_logit) return kNegInf;
        const auto ties = std::count(logits.begin(), logits.end(), max_logit);
        return -std::log(static_cast<float>(ties));
    }
    // Subtracting the max keeps every exp in (0, 1], so huge logits cannot
    // overflow; the sum is accumulated in double for large vocabularies.
    double sum = 0.0;
    for (float x : logits) sum += std::exp(x - max_logit);
    return static_cast<float>(static_cast<double>(logits[id] - max_logit) - std::log(sum));
}

int32_t ArgMax(std::span<const float> logits) {
    int32_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        // Strict > keeps the lowest index on ties. NaN never wins, and a NaN
        // in slot 0 must not block every later comparison.
        const bool best_is_nan = std::isnan(logits[best]);
        if (logits[i] > logits[best] || (best_is_nan && !std::isnan(logits[i]))) {
            best = static_cast<int32_t>(i);
        }
    }
    return best;
}

int32_t ArgMaxAllowed(std::span<const float> logits, std::span<const uint64_t> allowed) {
    int32_t best = -1;
    const size_t words = std::min(allowed.size(), (logits.size() + 63) / 64);
    for (size_t w = 0; w < words; ++w) {
        for (uint64_t bits = allowed[w]; bits != 0; bits &= bits - 1) {
            const size_t id = (w << 6) + static_cast<size_t>(std::countr_zero(bits));
            if (id >= logits.size()) return best;
            // As ArgMax: strict > keeps the lowest id on ties, NaN never wins
            // over a number, and the first allowed id stands when none does.
            const bool best_is_nan = best >= 0 && std::isnan(logits[best]);
            if (best < 0 || logits[id] > logits[best] || (best_is_nan && !std::isnan(logits[id]))) {
                best = static_cast<int32_t>(id);
            }
        }
    }
    return best;
}

}  // namespace prepack
