// Activation quantization for the quantized linear kernels (quant_acts.h).
// Baseline code: it reads each activation once, a few microseconds per
// linear layer next to the milliseconds of the weight stream.
#include "kernels/cpu/quant_acts.h"

#include <algorithm>
#include <cmath>

namespace prepack::cpu {
namespace {

// Scale of n values and their int8 codes; the scale is 0 for an all-zero block.
float QuantizeBlock(const float* x, int n, int8_t* q) {
    float amax = 0;
    for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float inv = d > 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < n; ++j) q[j] = static_cast<int8_t>(std::nearbyint(x[j] * inv));
    return d;
}

}  // namespace

void QuantizeActs(QuantType type, const float* x, int64_t m, int64_t k, uint8_t* out) {
    const int64_t row_bytes = ActRowBytes(type, k);
    for (int64_t i = 0; i < m; ++i) {
        const float* xi = x + i * k;
        uint8_t* row = out + i * row_bytes;
        if (UsesActBlock256(type)) {
            auto* blocks = reinterpret_cast<ActBlock256*>(row);
            for (int64_t b = 0; b < k / 256; ++b) {
                ActBlock256& a = blocks[b];
                a.d = QuantizeBlock(xi + 256 * b, 256, a.q);
                for (int g = 0; g < 16; ++g) {
                    int sum = 0;
                    for (int j = 0; j < 16; ++j) sum += a.q[16 * g + j];
                    a.bsums[g] = static_cast<int16_t>(sum);
                }
            }
        } else {
            auto* pairs = reinterpret_cast<ActPair32*>(row);
            const int64_t nb = k / 32;
            if (nb % 2 == 1) pairs[nb / 2] = ActPair32{};   // the unused half of the last pair
            for (int64_t b = 0; b < nb; ++b) {
                ActPair32& p = pairs[b / 2];
                int8_t* q = p.q + 32 * (b % 2);
                p.d[b % 2] = QuantizeBlock(xi + 32 * b, 32, q);
                int32_t sum = 0;
                for (int j = 0; j < 32; ++j) sum += q[j];
                p.sum[b % 2] = sum;
            }
        }
    }
}

}  // namespace prepack::cpu
