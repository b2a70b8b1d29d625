// Activations quantized to int8 for the dot products with quantized weights
// (quant_linear.cpp, quant_gemm.cpp), in the two shapes llama.cpp uses, so the integer sums
// line up with the weight blocks: per 32 values for Q4_0, Q4_1, Q5_0, Q5_1
// and Q8_0 weights (as ggml's Q8_0; the block sums serve Q4_1's and Q5_1's
// "+ m"), per 256 with sums of each 16 for the K-quants (as
// ggml's Q8_K, whose sub-block scales and mins then apply to whole integer
// sums). Scale d = max|x| / 127, q = x * (1 / d) rounded to the nearest
// integer, ties to even, at every CPU level (quant_act_rows.cpp).
#pragma once

#include <cstdint>

#include "kernels/cpu/quant_blocks.h"

namespace prepack::cpu {

// Blocks of 32 in pairs (blocks 2p and 2p + 1 of a row side by side), so a
// 512-bit kernel loads both blocks' values and scales at once; a row of an
// odd number of blocks ends with a half-filled pair (zeros, scale 0).
struct ActPair32 {
    float   d[2];
    int32_t sum[2];   // of q: Q4_0's "- 8" is applied as 8 * sum
    int8_t  q[64];
};

// Block b of a row of pairs.
inline const int8_t* ActQ32(const ActPair32* row, int64_t b) { return row[b >> 1].q + 32 * (b & 1); }
inline float ActD32(const ActPair32* row, int64_t b) { return row[b >> 1].d[b & 1]; }
inline int32_t ActSum32(const ActPair32* row, int64_t b) { return row[b >> 1].sum[b & 1]; }

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
                                 : (k / 32 + 1) / 2 * static_cast<int64_t>(sizeof(ActPair32));
}

// Quantizes m rows of k activations for weights of `type` into `out`
// (m * ActRowBytes(type, k) bytes).
void QuantizeActs(QuantType type, const float* x, int64_t m, int64_t k, uint8_t* out);

}  // namespace prepack::cpu
