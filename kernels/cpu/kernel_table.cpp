// Per level: this level's functions gathered into its table. Kernels() is
// plain baseline code (outside the region) so its declaration in
// kernel_table.h matches it.
#include "kernels/cpu/kernel_table.h"

#include "kernels/cpu/level_kernels.h"

namespace prepack::cpu::PREPACK_ISA_NS {

const KernelTable& Kernels() {
    static const KernelTable table{
        .level = PREPACK_ISA_CPU_LEVEL,
        .rms_norm = RmsNorm,
        .gather = Gather,
        .rope = Rope,
        .rms_norm_heads = RmsNormHeads,
        .add_bias = AddBias,
        .swiglu = SwiGlu,
        .geglu = GeGlu,
        .soft_cap = SoftCap,
        .scale = Scale,
        .add_to = AddTo,
        .small_linear_f32 = SmallLinearF32,
        .small_linear_bf16 = SmallLinearBf16,
        .quant_linear = QuantLinear,
        .quant_gemm_min_rows = QuantGemmMinRows,
        .quant_gemm = QuantGemm,
        .quantize_act_rows = QuantizeActRows,
        .decode_quant_row = DecodeQuantRow,
        .paged_attention = PagedAttention,
        .last_query_scores = LastQueryScores,
        .f32_to_bf16_row = F32ToBf16Row,
        .bf16_to_f32_row = Bf16ToF32Row,
    };
    return table;
}

}  // namespace prepack::cpu::PREPACK_ISA_NS
