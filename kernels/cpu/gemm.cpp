#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/bf16.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_acts.h"

namespace prepack::cpu {

namespace {

// Weights per f32 panel handed to sgemm (32 MiB). Each sgemm call packs all
// of X (4 MiB for 512 rows of 2048, 16 MiB for rows of 8192), so a panel
// must hold many weight rows to amortise that: a Q8_0 prefill at the AVX2
// level (Xeon, 2 threads) ran 81 tok/s with 1 MiB panels, 87 with 8 MiB,
// and 8 MiB against 32 MiB alternately 92.4 against 94.2 (3 runs each), for
// 65 MiB more peak memory (the panel and sgemm's packed copy of it).
constexpr int64_t kF32PanelWeights = int64_t{1} << 23;

// Rows of a panel of `weights` weights for rows of k (at least 16).
int64_t PanelRows(int64_t weights, int64_t k) { return std::max<int64_t>(weights / k / 16 * 16, 16); }

// bf16 weights without native bf16 arithmetic: widen a panel of weight rows
// and multiply it in f32. The widening is exact and costs one pass over the
// panel, small next to the 2*M flops per weight of a many-row product.
void WidenedLinear(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    const int64_t panel_rows = std::min(PanelRows(kF32PanelWeights, k), n);
    static thread_local std::vector<float> panel;
    panel.resize(static_cast<size_t>(panel_rows * k));
    float* dst = panel.data();
    for (int64_t n0 = 0; n0 < n; n0 += panel_rows) {
        const int64_t rows = std::min(panel_rows, n - n0);
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; ++r) Bf16ToF32Row(w + (n0 + r) * k, dst + r * k, static_cast<size_t>(k));
        dnnl_sgemm('N', 'T', m, rows, k, 1.0f, x, k, dst, k, accumulate ? 1.0f : 0.0f, y + n0, n);
    }
}

// Native bf16: oneDNN's matmul (AVX-512 BF16 / AMX kernels) on bf16
// activations, f32 output with rows `ldy` apart, the residual folded in with
// a sum post-op. oneDNN caches the primitives by shape. False when oneDNN
// has no implementation here (then the caller widens).
bool OneDnnBf16Matmul(const uint16_t* xb, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k, int64_t ldy,
                      bool accumulate) {
    using dnnl::memory;
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const memory::desc src({m, k}, memory::data_type::bf16, memory::dims{k, 1});
    const memory::desc wei({k, n}, memory::data_type::bf16, memory::dims{1, k});   // W^T of [n, k] row-major
    const memory::desc dst({m, n}, memory::data_type::f32, memory::dims{ldy, 1});
    dnnl::primitive_attr attr;
    if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
    }
    try {
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, engine);
        dnnl::stream stream(engine);
        dnnl::matmul(pd).execute(stream, {{DNNL_ARG_SRC, memory(src, engine, const_cast<uint16_t*>(xb))},
                                          {DNNL_ARG_WEIGHTS, memory(wei, engine, const_cast<uint16_t*>(w))},
                                          {DNNL_ARG_DST, memory(dst, engine, y)}});
        stream.wait();
    } catch (const dnnl::error&) {
        return false;
    }
    return true;
}

// The activations rounded to bf16 (one buffer per thread, reused).
const uint16_t* Bf16Activations(const float* x, int64_t m, int64_t k) {
    static thread_local std::vector<uint16_t> xb;
    xb.resize(static_cast<size_t>(m * k));
    F32ToBf16Row(x, xb.data(), xb.size());
    return xb.data();
}

bool OneDnnBf16Linear(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
                      bool accumulate) {
    return OneDnnBf16Matmul(Bf16Activations(x, m, k), w, y, m, n, k, n, accumulate);
}

enum class Bf16Path { kOneDnn, kWiden };

// Chosen once; falls back to widening for good if oneDNN cannot run it.
std::atomic<Bf16Path>& Bf16PathState() {
    static std::atomic<Bf16Path> path{HasNativeBf16Gemm() ? Bf16Path::kOneDnn : Bf16Path::kWiden};
    return path;
}

std::atomic<bool>& Int8GemmEnabled() {
    static std::atomic<bool> enabled{true};
    return enabled;
}

// Whether the level's int8 GEMM takes m rows of k weights of this type (Q4_0
// and the K-quants from AVX2 up, rows of whole 256-weight blocks; below 17
// rows only where it beats the few-row kernels).
bool Int8Gemm(const KernelTable& kernels, QuantType type, int64_t m, int64_t k) {
    const int64_t min_rows = kernels.quant_gemm_min_rows(type, k);
    return Int8GemmEnabled().load() && min_rows > 0 && m >= min_rows;
}

// X quantized for the slices of one product: once per activation shape
// (Q4_0/Q8_0's blocks of 32 or the K-quants' of 256), on first need.
class QuantizedActs {
public:
    QuantizedActs(const float* x, int64_t m, int64_t k) : x_(x), m_(m), k_(k) {}

    const uint8_t* For(QuantType type) {
        const bool wide = UsesActBlock256(type);
        std::vector<uint8_t>& acts = wide ? Buffer256() : Buffer32();
        bool& have = wide ? have256_ : have32_;
        if (!have) {
            acts.resize(static_cast<size_t>(m_ * ActRowBytes(type, k_)));
            QuantizeActs(type, x_, m_, k_, acts.data());
            have = true;
        }
        return acts.data();
    }

private:
    // One pair of buffers per thread, reused across calls.
    static std::vector<uint8_t>& Buffer32() {
        static thread_local std::vector<uint8_t> b;
        return b;
    }
    static std::vector<uint8_t>& Buffer256() {
        static thread_local std::vector<uint8_t> b;
        return b;
    }

    const float* x_;
    int64_t m_, k_;
    bool have32_ = false, have256_ = false;
};

// Quantized weights, few rows: integer dot products, each slice writing its
// own columns of Y; from a dozen rows or so (batched decode) the int8 GEMM
// instead where it is faster.
void SmallQuantLinear(const float* x, const Matrix& w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    const KernelTable& kernels = ActiveKernels();
    QuantizedActs acts(x, m, k);
    int64_t col = 0;
    for (int s = 0; s < w.n_quant; ++s) {
        const QuantSlice& slice = w.quant[s];
        const uint8_t* a = acts.For(slice.type);
        if (!Int8Gemm(kernels, slice.type, m, k) || !kernels.quant_gemm(a, slice, y + col, n, m, k, accumulate)) {
            kernels.quant_linear(a, slice, y + col, n, m, k, accumulate);
        }
        col += slice.rows;
    }
}

// Quantized weights, many rows (prefill): decode a panel of weight rows
// (kF32PanelWeights in f32; 4 MiB of bf16, which measured the same as 1 MiB
// for oneDNN's matmul) and multiply it there: in bf16 through oneDNN where
// the CPU has native bf16 GEMM (twice the f32 rate; the activations rounded
// to bf16 once per call), else in f32 through sgemm. The decoding is one
// pass over the panel, small next to the 2 * M flops per weight of a
// many-row product. Without native bf16, Q4_0 and the K-quants go to the
// int8 GEMM instead (quant_gemm.cpp), which beats sgemm on the decoded
// panels (docs/benchmarks.md); the panels are then not even allocated.
void DequantizedLinear(const float* x, const Matrix& w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    const bool bf16 = Bf16PathState().load() == Bf16Path::kOneDnn;
    const KernelTable& kernels = ActiveKernels();
    QuantizedActs acts(x, m, k);
    const int64_t panel_rows = PanelRows(bf16 ? int64_t{1} << 21 : kF32PanelWeights, k);
    // The calling thread's buffers (thread_local: the workers below have their own).
    static thread_local std::vector<float> panel;
    static thread_local std::vector<uint16_t> panel_bf16;
    const uint16_t* xb = nullptr;
    int64_t col = 0;
    for (int s = 0; s < w.n_quant; ++s) {
        const QuantSlice& slice = w.quant[s];
        if (!bf16 && Int8Gemm(kernels, slice.type, m, k) &&
            kernels.quant_gemm(acts.For(slice.type), slice, y + col, n, m, k, accumulate)) {
            col += slice.rows;
            continue;
        }
        // No larger than the slice: a small model's matrices are far below
        // the panel budget, whose f32 bytes (and sgemm's packed copy of them)
        // would otherwise add tens of MiB to its resident memory.
        panel.resize(static_cast<size_t>(std::min(panel_rows, slice.rows) * k));
        if (bf16) {
            panel_bf16.resize(panel.size());
            if (xb == nullptr) xb = Bf16Activations(x, m, k);
        }
        float* dst = panel.data();
        uint16_t* dst_bf16 = panel_bf16.data();
        const int64_t row_bytes = QuantRowBytes(slice.type, k);
        for (int64_t r0 = 0; r0 < slice.rows; r0 += panel_rows) {
            const int64_t rows = std::min(panel_rows, slice.rows - r0);
#pragma omp parallel for schedule(static)
            for (int64_t r = 0; r < rows; ++r) {
                kernels.decode_quant_row(slice.type, slice.data + (r0 + r) * row_bytes, dst + r * k, k);
                if (bf16) F32ToBf16Row(dst + r * k, dst_bf16 + r * k, static_cast<size_t>(k));
            }
            if (bf16 && OneDnnBf16Matmul(xb, dst_bf16, y + col + r0, m, rows, k, n, accumulate)) continue;
            dnnl_sgemm('N', 'T', m, rows, k, 1.0f, x, k, dst, k, accumulate ? 1.0f : 0.0f, y + col + r0, n);
        }
        col += slice.rows;
    }
}

}  // namespace

// dnnl_sgemm is row-major, uses oneDNN's JIT kernels for the CPU and the
// shared OpenMP pool (docs/toolchain.md).
void Linear(const float* x, const Matrix& w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
    const KernelTable& kernels = ActiveKernels();   // first: it may cap oneDNN's ISA
    if (w.quantized()) {
        if (m <= kSmallLinearRows) {
            SmallQuantLinear(x, w, y, m, n, k, accumulate);
        } else {
            DequantizedLinear(x, w, y, m, n, k, accumulate);
        }
        return;
    }
    if (w.bf16 == nullptr) {
        if (m <= kSmallLinearRows) {
            kernels.small_linear_f32(x, w.f32, y, m, n, k, accumulate);
        } else {
            dnnl_sgemm('N', 'T', m, n, k, 1.0f, x, k, w.f32, k, accumulate ? 1.0f : 0.0f, y, n);
        }
        return;
    }
    if (m <= kSmallLinearRows) {
        kernels.small_linear_bf16(x, w.bf16, y, m, n, k, accumulate);   // memory-bound: half the bytes of f32
        return;
    }
    if (Bf16PathState().load() == Bf16Path::kOneDnn) {
        if (OneDnnBf16Linear(x, w.bf16, y, m, n, k, accumulate)) return;
        Bf16PathState().store(Bf16Path::kWiden);
    }
    WidenedLinear(x, w.bf16, y, m, n, k, accumulate);
}

void MatMul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
    ActiveKernels();   // oneDNN's ISA is capped (PREPACK_CPU) before its first use
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

// ISA values are nested bit masks (avx2_vnni = 0x407 is numerically above
// avx512_core_bf16 = 0xe7 without containing it): test the bits.
bool HasNativeBf16Gemm() {
    ActiveKernels();
    const unsigned isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

void SetInt8PrefillGemm(bool enabled) { Int8GemmEnabled().store(enabled); }

const char* QuantPrefillArithmetic(QuantType type, int64_t k) {
    if (Bf16PathState().load() == Bf16Path::kOneDnn) return "bf16";
    return Int8Gemm(ActiveKernels(), type, kSmallLinearRows + 1, k) ? "int8" : "f32";
}

const char* Bf16GemmPath() { return Bf16PathState().load() == Bf16Path::kOneDnn ? "onednn" : "widen"; }

bool SetBf16GemmPath(const char* path) {
    if (std::strcmp(path, "onednn") == 0) {
        Bf16PathState().store(Bf16Path::kOneDnn);
    } else if (std::strcmp(path, "widen") == 0) {
        Bf16PathState().store(Bf16Path::kWiden);
    } else {
        return false;
    }
    return true;
}

}  // namespace prepack::cpu
