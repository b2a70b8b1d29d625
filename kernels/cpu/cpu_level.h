// The instruction-set levels the CPU kernels are compiled for, and which one
// this process uses. The kernels are built once per level (kernel_table.h)
// and one is chosen at run time, so a single build runs on any x86-64-v2 CPU
// and at full speed where the CPU has more.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace prepack::cpu {

// Ordered: each level includes the ones below it.
//   kBaseline   x86-64-v2 (SSE4.2, POPCNT): what everything else is built for
//   kAvx2       x86-64-v3 (AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE)
//   kAvx512     x86-64-v4 (AVX-512 F, BW, CD, DQ, VL)
//   kAvx512Bf16 + AVX-512 BF16 and VNNI: the kernels of kAvx512 but for
//               Q8_0's dot products (VNNI); oneDNN uses its native bf16 GEMM
//               from this level up
enum class CpuLevel : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };

// "baseline", "avx2", "avx512", "avx512-bf16": the values PREPACK_CPU takes.
const char* CpuLevelName(CpuLevel level);
std::optional<CpuLevel> ParseCpuLevel(std::string_view name);
// Every level name, comma-separated, for error messages.
const char* CpuLevelNames();

// The best level this CPU and OS support (CPUID and XGETBV, read once).
CpuLevel DetectedCpuLevel();

// Whether this build compiled the kernels of `level` (CMake's
// PREPACK_CPU_LEVELS: the sanitizer and fuzz trees compile only the baseline
// and their machine's level). The baseline always is; avx512-bf16 is when
// avx512 is (it shares that table).
bool CpuLevelBuilt(CpuLevel level);

// The level the kernels use: the detected one, capped by the environment
// variable PREPACK_CPU when it is set, then lowered to the best level this
// build compiled. Decided once, at the first kernel call; with PREPACK_CPU
// set, oneDNN's ISA is capped at the requested level (before it generates
// any code). An unknown value, one above the detected level or one this
// build lacks is reported on stderr once and the nearest valid choice is used.
CpuLevel ActiveCpuLevel();

// Tests compare the kernels of every level in one process: forces the level
// of the kernel table (not oneDNN's). False, and nothing changed, when the
// CPU lacks `level` or the build did not compile it.
bool ForceCpuLevel(CpuLevel level);

// For `prepack inspect` / `bench`: e.g. "avx2 (CPU has avx2; PREPACK_CPU
// unset; oneDNN avx2)".
std::string KernelChoiceSummary();
// oneDNN's effective ISA, by name ("avx2", "avx512_core_bf16", ...).
std::string OneDnnIsaName();

}  // namespace prepack::cpu
