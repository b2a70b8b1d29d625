// Token sampling: greedy, temperature, top-k, top-p, min-p, repetition
// penalty, with a per-request seeded RNG so the same seed gives the same tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/base/status.h"

namespace prepack {

struct SamplingParams {
    float    temperature        = 1.0f;   // 0 = greedy (argmax)
    int32_t  top_k              = 0;      // 0 = off
    float    top_p              = 1.0f;   // 1 = off; keep the smallest set with mass >= top_p
    float    min_p              = 0.0f;   // 0 = off; drop tokens with p < min_p * p_max
    float    repetition_penalty = 1.0f;   // 1 = off; llama.cpp/CTRL style on previously seen ids
    int32_t  repetition_window  = 64;     // how many recent tokens the penalty looks at (0 = all)
    uint64_t seed               = 0;
};

// INVALID_ARGUMENT naming the field when a value is out of range
// (negative or non-finite temperature, top_k < 0, top_p not in (0,1],
// min_p not in [0,1], repetition_penalty <= 0 or non-finite, window < 0).
absl::Status ValidateSamplingParams(const SamplingParams& params);

// Small, portable, seedable generator (SplitMix64 seeding + xoshiro256**),
// so results do not depend on the standard library implementation.
class Rng {
public:
    explicit Rng(uint64_t seed);
    uint64_t NextU64();
    float    NextFloat();   // uniform in [0, 1)
private:
    uint64_t s_[4];
};

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // Picks the next token from `logits` (one row, vocab_size long).
    // `history` holds the prompt and the tokens generated so far (for the
    // repetition penalty). Does not modify `logits`.
    int32_t Sample(std::span<const float> logits, std::span<const int32_t> history);

    // As Sample, drawing only among the allowed ids: bit (id % 64) of
    // allowed[id / 64] (a grammar's token mask, core/grammar/matcher.h;
    // ids past the span are not allowed). The mask applies before the
    // penalty, temperature, top-k, top-p and min-p, so those work over the
    // allowed ids only; greedy is the argmax over them. The draw is the one
    // Sample makes from the same logits with the forbidden ids at -inf (so
    // with every id allowed, exactly Sample's), except that where every
    // allowed logit is -inf the lowest allowed id is taken. -1 when no id
    // of the vocabulary is allowed.
    int32_t SampleAllowed(std::span<const float> logits, std::span<const int32_t> history,
                          std::span<const uint64_t> allowed);

    const SamplingParams& params() const { return params_; }

private:
    // `allowed` null: every id.
    int32_t SampleImpl(std::span<const float> logits, std::span<const int32_t> history,
                       const std::span<const uint64_t>* allowed);

    SamplingParams       params_;
    Rng                  rng_;
    std::vector<float>   work_;      // scratch copy of the logits
    std::vector<int32_t> order_;     // scratch candidate ids
};

// log softmax(logits)[id], computed stably. Used for reporting logprobs.
float LogSoftmaxAt(std::span<const float> logits, int32_t id);
// Index of the largest logit (lowest index on ties).
int32_t ArgMax(std::span<const float> logits);
// The same over the ids `allowed` allows (bits as in SampleAllowed), ties
// and NaN as ArgMax (a number beats NaN; the lowest allowed id when all are
// NaN); -1 when no id is allowed.
int32_t ArgMaxAllowed(std::span<const float> logits, std::span<const uint64_t> allowed);

}  // namespace prepack
