#include "kernels/cpu/matrix.h"

#include <cstring>

#include "kernels/cpu/bf16.h"

namespace prepack::cpu {

void DecodeMatrixRow(const Matrix& w, int64_t row, int64_t k, float* out) {
    if (w.f32 != nullptr) {
        std::memcpy(out, w.f32 + row * k, static_cast<size_t>(k) * sizeof(float));
        return;
    }
    if (w.bf16 != nullptr) {
        Bf16ToF32Row(w.bf16 + row * k, out, static_cast<size_t>(k));
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
