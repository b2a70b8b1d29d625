// Activations quantized to int8 for the dot products with quantized weights
// (quant_linear.cpp), in the two shapes llama.cpp uses, so the integer sums
// line up with the weight blocks: per 32 values for Q4_0 and Q8_0 weights
// (as ggml's Q8_0), per 256 with sums of each 16 for the K-quants (as
// ggml's Q8_K, whose sub-block scales and mins then apply to whole integer
// sums). Scale d = max|x| / 127, q = round(x / d).
#pragma once

#include <cstdint>

#include "kernels/cpu/quant_blocks.h"

namespace prepack::cpu {

struct ActBlock32 {
    float   d;
    int32_t sum;   // of q: Q4_0's "- 8" is applied as 8 * sum
    int8_t  q[32];
};

struct ActBlock256 {
    float   d;
    int16_t bsums[16];   // of each 16 q: the K-quants' mins and Q6_K's "- 32"
    int8_t  q[256];
};

inline bool UsesActBlock256(QuantType type) { return QuantBlockElems(type) == 256; }

// Bytes of one quantized activation row of `k` values (k a multiple of the
// weight type's block size).
inline int64_t ActRowBytes(QuantType type, int64_t k) {
    return UsesActBlock256(type) ? k / 256 * static_cast<int64_t>(sizeof(ActBlock256))
                                 : k / 32 * static_cast<int64_t>(sizeof(ActBlock32));
}

// Quantizes m rows of k activations for weights of `type` into `out`
// (m * ActRowBytes(type, k) bytes).
void QuantizeActs(QuantType type, const float* x, int64_t m, int64_t k, uint8_t* out);

}  // namespace prepack::cpu
