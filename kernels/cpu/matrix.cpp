#include "kernels/cpu/matrix.h"

#include <bit>
#include <cstring>

namespace prepack::cpu {

void DecodeMatrixRow(const Matrix& w, int64_t row, int64_t k, float* out) {
    if (w.f32 != nullptr) {
        std::memcpy(out, w.f32 + row * k, static_cast<size_t>(k) * sizeof(float));
        return;
    }
    if (w.bf16 != nullptr) {
        const uint16_t* src = w.bf16 + row * k;
        for (int64_t j = 0; j < k; ++j) out[j] = std::bit_cast<float>(static_cast<uint32_t>(src[j]) << 16);
        return;
    }
    for (int s = 0; s < w.n_quant; ++s) {
        const QuantSlice& slice = w.quant[s];
        if (row < slice.rows) {
            DequantizeQuantRow(slice.type, slice.data + row * QuantRowBytes(slice.type, k), out, k);
            return;
        }
        row -= slice.rows;
    }
}

}  // namespace prepack::cpu
