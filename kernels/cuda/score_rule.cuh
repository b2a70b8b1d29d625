// How an attention score is formed and which keys a query sees, as
// cpu::AttentionShape says (scale, soft-cap, sliding window), in the form the
// CUDA kernels take by value. One definition for every kernel that scores
// (paged, split, tiled, cascade prefix, LazyLLM), so that they cannot drift
// from one another or from the CPU's MaskAndSoftmax / LastQueryScores.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cpu/attention.h"

namespace prepack::cuda {

struct ScoreRule {
    float   scale;     // applied to the query as it is loaded (the CPU's AddRow does the same)
    float   softcap;   // 0: none; else score = softcap * tanh(score / softcap), after the scale
    int32_t window;    // 0: none; else a query at token p sees keys p - window < k <= p only

    static ScoreRule Of(const cpu::AttentionShape& s) { return {s.Scale(), s.softcap, s.window}; }

    // The score of an already scaled dot product.
    __device__ __forceinline__ float Capped(float s) const { return softcap > 0.0f ? softcap * tanhf(s / softcap) : s; }
    // The first key a query whose last key is `horizon` sees (cpu::AttentionShape::FirstKey).
    __device__ __forceinline__ int32_t FirstKey(int32_t horizon) const {
        return window > 0 && horizon - window + 1 > 0 ? horizon - window + 1 : 0;
    }
};

}  // namespace prepack::cuda
