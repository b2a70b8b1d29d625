// The public CPU kernel functions, forwarded to the table of the active
// level. One indirect call per kernel launch: each does at least a row of
// work, so the call is noise.
#include "kernels/cpu/attention.h"
#include "kernels/cpu/bf16.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_acts.h"

// Bit n set: level n's tables are compiled in (kernels/CMakeLists.txt,
// PREPACK_CPU_LEVELS); only those are referenced, or the link would fail.
#if !defined(PREPACK_BUILT_ISA_LEVELS)
#error "kernels/CMakeLists.txt defines PREPACK_BUILT_ISA_LEVELS"
#endif

namespace prepack::cpu {

// ActiveCpuLevel() and ForceCpuLevel() only ever choose built levels
// (CpuLevelBuilt); for any other, the best built one below it.
const KernelTable& KernelsFor(CpuLevel level) {
#if PREPACK_BUILT_ISA_LEVELS & 0b100
    if (level >= CpuLevel::kAvx512) return isa_avx512::Kernels();   // and avx512-bf16
#endif
#if PREPACK_BUILT_ISA_LEVELS & 0b010
    if (level >= CpuLevel::kAvx2) return isa_avx2::Kernels();
#endif
    (void)level;
    return isa_baseline::Kernels();
}

// ActiveCpuLevel() is decided once (cpu_level.cpp); reading it per launch
// is an atomic load, and lets tests switch levels (ForceCpuLevel).
const KernelTable& ActiveKernels() { return KernelsFor(ActiveCpuLevel()); }

void RmsNorm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps) {
    ActiveKernels().rms_norm(x, weight, out, rows, dim, eps);
}

void Gather(const Matrix& table, const int32_t* ids, float* out, int64_t rows, int64_t dim) {
    ActiveKernels().gather(table, ids, out, rows, dim);
}

void Rope(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim, int rope_dim,
          const int32_t* positions, const float* inv_freq, bool neox) {
    ActiveKernels().rope(x, rows, row_stride, col, n_heads, head_dim, rope_dim, positions, inv_freq, neox);
}

void RmsNormHeads(float* x, int64_t rows, int64_t row_stride, int64_t col, int n_heads, int head_dim,
                  const float* weight, float eps) {
    ActiveKernels().rms_norm_heads(x, rows, row_stride, col, n_heads, head_dim, weight, eps);
}

void AddBias(float* x, const float* bias, int64_t rows, int64_t dim) {
    ActiveKernels().add_bias(x, bias, rows, dim);
}

void SwiGlu(const float* gu, float* out, int64_t rows, int64_t hidden) {
    ActiveKernels().swiglu(gu, out, rows, hidden);
}

void GeGlu(const float* gu, float* out, int64_t rows, int64_t hidden) {
    ActiveKernels().geglu(gu, out, rows, hidden);
}

void SoftCap(float* x, int64_t n, float cap) { ActiveKernels().soft_cap(x, n, cap); }

void Scale(float* x, int64_t n, float s) { ActiveKernels().scale(x, n, s); }

void AddTo(float* x, const float* y, int64_t n) { ActiveKernels().add_to(x, y, n); }

void PagedAttention(const float* q, float* out, const AttentionShape& shape, const AttentionSpan* spans,
                    int32_t n_spans, const PagedKv& kv, const std::vector<SharedPrefixGroup>& shared) {
    ActiveKernels().paged_attention(q, out, shape, spans, n_spans, kv, shared);
}

void LastQueryScores(const float* q, const AttentionShape& shape, const AttentionSpan& span, const PagedKv& kv,
                     const QueryScoring& scoring, float* scores) {
    ActiveKernels().last_query_scores(q, shape, span, kv, scoring, scores);
}

// Rows in parallel once there are enough to pay for waking the threads
// (a prefill's, not a decode step's).
void QuantizeActs(QuantType type, const float* x, int64_t m, int64_t k, uint8_t* out) {
    const KernelTable& kernels = ActiveKernels();
    const int64_t row_bytes = ActRowBytes(type, k);
#pragma omp parallel for schedule(static) if (m * k >= (int64_t{1} << 16))
    for (int64_t i = 0; i < m; ++i) kernels.quantize_act_rows(type, x + i * k, 1, k, out + i * row_bytes);
}

void F32ToBf16Row(const float* src, uint16_t* dst, size_t n) { ActiveKernels().f32_to_bf16_row(src, dst, n); }

void Bf16ToF32Row(const uint16_t* src, float* dst, size_t n) { ActiveKernels().bf16_to_f32_row(src, dst, n); }

}  // namespace prepack::cpu
