// The CPU kernels of one instruction-set level, as a table of function
// pointers. The sources listed in kernels/CMakeLists.txt as per-level are
// compiled once per level, each time into its own namespace (isa_region.h);
// dispatch.cpp forwards the public kernel functions (elementwise.h, gemm.h,
// attention.h, bf16.h) to the table of ActiveCpuLevel().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/cpu_level.h"
#include "kernels/cpu/matrix.h"

namespace prepack::cpu {

struct KernelTable {
    CpuLevel level;
    void (*rms_norm)(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps);
    void (*gather)(const Matrix& table, const int32_t* ids, float* out, int64_t rows, int64_t dim);
    void (*rope)(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim, int rope_dim,
                 const int32_t* positions, const float* inv_freq, bool neox);
    void (*rms_norm_heads)(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                           const float* weight, float eps);
    void (*add_bias)(float* x, const float* bias, int64_t rows, int64_t dim);
    void (*swiglu)(const float* gu, float* out, int64_t rows, int64_t hidden);
    void (*geglu)(const float* gu, float* out, int64_t rows, int64_t hidden);
    void (*soft_cap)(float* x, int64_t n, float cap);
    void (*scale)(float* x, int64_t n, float s);
    void (*add_to)(float* x, const float* y, int64_t n);
    // Y = X W^T for m <= kSmallLinearRows: the weight rows streamed by
    // register-blocked dot products (decode, batched decode).
    void (*small_linear_f32)(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                             bool accumulate);
    void (*small_linear_bf16)(const float* x, const uint16_t* w, float* y, int64_t m, int64_t n, int64_t k,
                              bool accumulate);
    // The same for quantized weights (quant_linear.cpp): `acts` holds X
    // quantized by QuantizeActs for w.type; y's rows are `ldy` apart.
    void (*quant_linear)(const uint8_t* acts, const QuantSlice& w, float* y, int64_t ldy, int64_t m, int64_t k,
                         bool accumulate);
    // Many rows (quant_gemm.cpp): the same product in int8 on repacked
    // panels; false (nothing written) for the block types and row lengths
    // it does not take, those for which quant_gemm_min_rows is 0. Otherwise
    // that is the fewest rows for which it beats quant_linear (at most 17).
    int64_t (*quant_gemm_min_rows)(QuantType type, int64_t k);
    bool (*quant_gemm)(const uint8_t* acts, const QuantSlice& w, float* y, int64_t ldy, int64_t m, int64_t k,
                       bool accumulate);
    // Rows of activations quantized for the two (quant_act_rows.cpp; QuantizeActs in quant_acts.h).
    void (*quantize_act_rows)(QuantType type, const float* x, int64_t m, int64_t k, uint8_t* out);
    // A quantized row decoded to f32 (quant_decode.cpp; the many-row products' panels).
    void (*decode_quant_row)(QuantType type, const uint8_t* src, float* dst, int64_t n);
    void (*paged_attention)(const float* q, float* out, const AttentionShape& shape, const AttentionSpan* spans,
                            int32_t n_spans, const PagedKv& kv, const std::vector<SharedPrefixGroup>& shared);
    void (*last_query_scores)(const float* q, const AttentionShape& shape, const AttentionSpan& span,
                              const PagedKv& kv, const QueryScoring& scoring, float* scores);
    void (*f32_to_bf16_row)(const float* src, uint16_t* dst, size_t n);
    void (*bf16_to_f32_row)(const uint16_t* src, float* dst, size_t n);
};

// Up to this many rows a linear layer goes to small_linear_* (gemm.cpp).
constexpr int64_t kSmallLinearRows = 16;

// One table per level built (kernels/CMakeLists.txt, PREPACK_CPU_LEVELS: on
// x86-64 all of them by default; elsewhere baseline). Reach them through
// KernelsFor: a level's table exists only when CpuLevelBuilt(level).
namespace isa_baseline { const KernelTable& Kernels(); }
#if defined(__x86_64__)
namespace isa_avx2 { const KernelTable& Kernels(); }
namespace isa_avx512 { const KernelTable& Kernels(); }
#endif

// The table of `level` (avx512-bf16: avx512's) when it is built
// (CpuLevelBuilt), else that of the best built level below it.
const KernelTable& KernelsFor(CpuLevel level);

// The table of the active level (decided at the first call).
const KernelTable& ActiveKernels();

}  // namespace prepack::cpu
