#include "kernels/cpu/cpu_level.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <atomic>

#include <oneapi/dnnl/dnnl.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

// Bit n set: the kernels of level n are compiled in (kernels/CMakeLists.txt,
// PREPACK_CPU_LEVELS).
#if !defined(PREPACK_BUILT_ISA_LEVELS)
#error "kernels/CMakeLists.txt defines PREPACK_BUILT_ISA_LEVELS"
#endif

namespace prepack::cpu {
namespace {

constexpr const char* kNames[] = {"baseline", "avx2", "avx512", "avx512-bf16"};
#if defined(__x86_64__)
constexpr int kAllLevelsBuilt = 0b111;
#else
constexpr int kAllLevelsBuilt = 0b001;
#endif

#if defined(__x86_64__)
bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

// CPUID read directly (GCC's and Clang's __builtin_cpu_supports know
// different feature names), and XGETBV: the OS must save the YMM (and for
// AVX-512 the ZMM and mask) registers, or the instructions fault.
CpuLevel Detect() {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return CpuLevel::kBaseline;
    const bool fma = Bit(ecx, 12), movbe = Bit(ecx, 22), osxsave = Bit(ecx, 27), avx = Bit(ecx, 28),
               f16c = Bit(ecx, 29);
    if (!(osxsave && avx)) return CpuLevel::kBaseline;
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0x6u) != 0x6u) return CpuLevel::kBaseline;   // XMM and YMM state
    unsigned b7 = 0, c7 = 0, a7 = 0, d7 = 0;
    if (!__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7)) return CpuLevel::kBaseline;
    bool lzcnt = false;
    if (__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx)) lzcnt = Bit(ecx, 5);
    const bool v3 = fma && movbe && f16c && lzcnt && Bit(b7, 3) /* BMI1 */ && Bit(b7, 5) /* AVX2 */ &&
                    Bit(b7, 8) /* BMI2 */;
    if (!v3) return CpuLevel::kBaseline;
    const bool v4 = Bit(b7, 16) /* F */ && Bit(b7, 17) /* DQ */ && Bit(b7, 28) /* CD */ && Bit(b7, 30) /* BW */ &&
                    Bit(b7, 31) /* VL */ && (xcr0_lo & 0xE0u) == 0xE0u;   // opmask, ZMM0-15 high, ZMM16-31
    if (!v4) return CpuLevel::kAvx2;
    unsigned a71 = 0, b71 = 0, c71 = 0, d71 = 0;
    const bool bf16 = a7 >= 1 && __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71) && Bit(a71, 5);
    const bool vnni = Bit(c7, 11);
    return bf16 && vnni ? CpuLevel::kAvx512Bf16 : CpuLevel::kAvx512;
}
#else
CpuLevel Detect() { return CpuLevel::kBaseline; }
#endif

dnnl_cpu_isa_t OneDnnCap(CpuLevel level) {
    switch (level) {
        case CpuLevel::kBaseline: return dnnl_cpu_isa_sse41;
        case CpuLevel::kAvx2: return dnnl_cpu_isa_avx2;
        case CpuLevel::kAvx512: return dnnl_cpu_isa_avx512_core;
        case CpuLevel::kAvx512Bf16: return dnnl_cpu_isa_avx512_core_bf16;
    }
    return dnnl_cpu_isa_all;
}

// The best level at or below `level` whose kernels this build has (the
// baseline always).
CpuLevel BuiltAtMost(CpuLevel level) {
    int l = static_cast<int>(level);
    while (l > 0 && !CpuLevelBuilt(static_cast<CpuLevel>(l))) --l;
    return static_cast<CpuLevel>(l);
}

// "baseline, avx2": the levels compiled, for messages.
std::string BuiltLevelNames() {
    std::string s;
    for (int l = 0; l <= static_cast<int>(CpuLevel::kAvx512); ++l) {
        if ((PREPACK_BUILT_ISA_LEVELS >> l) & 1) s += (s.empty() ? "" : ", ") + std::string(kNames[l]);
    }
    return s;
}

struct Choice {
    CpuLevel detected;
    CpuLevel active;
    std::string requested;   // PREPACK_CPU as given, empty when unset
};

// PREPACK_CPU read and oneDNN capped exactly once, before any kernel runs.
const Choice& TheChoice() {
    static const Choice choice = [] {
        Choice c{DetectedCpuLevel(), BuiltAtMost(DetectedCpuLevel()), ""};
        const char* env = std::getenv("PREPACK_CPU");
        if (env == nullptr || *env == '\0') return c;
        c.requested = env;
        const std::optional<CpuLevel> asked = ParseCpuLevel(env);
        if (!asked) {
            std::fprintf(stderr, "prepack: PREPACK_CPU=%s is not one of %s; using %s\n", env, CpuLevelNames(),
                         CpuLevelName(c.active));
            return c;
        }
        if (static_cast<int>(*asked) > static_cast<int>(c.detected)) {
            std::fprintf(stderr, "prepack: PREPACK_CPU=%s is more than this CPU has (%s); using %s\n", env,
                         CpuLevelName(c.detected), CpuLevelName(c.active));
            return c;
        }
        c.active = BuiltAtMost(*asked);
        if (c.active != *asked) {
            std::fprintf(stderr, "prepack: PREPACK_CPU=%s is not a level this build compiled (%s); using %s\n", env,
                         BuiltLevelNames().c_str(), CpuLevelName(c.active));
        }
        // oneDNN has every level, so it takes the request as asked. Fails only
        // when oneDNN has already generated code: then it keeps its own choice.
        dnnl_set_max_cpu_isa(OneDnnCap(*asked));
        return c;
    }();
    return choice;
}

}  // namespace

const char* CpuLevelName(CpuLevel level) { return kNames[static_cast<int>(level)]; }

std::optional<CpuLevel> ParseCpuLevel(std::string_view name) {
    for (int i = 0; i < 4; ++i) {
        if (name == kNames[i]) return static_cast<CpuLevel>(i);
    }
    return std::nullopt;
}

const char* CpuLevelNames() { return "baseline, avx2, avx512, avx512-bf16"; }

bool CpuLevelBuilt(CpuLevel level) {
    // avx512-bf16 runs avx512's table (dispatch.cpp).
    const int table = std::min(static_cast<int>(level), static_cast<int>(CpuLevel::kAvx512));
    return ((PREPACK_BUILT_ISA_LEVELS >> table) & 1) != 0;
}

CpuLevel DetectedCpuLevel() {
    static const CpuLevel detected = Detect();
    return detected;
}

// -1: not forced.
std::atomic<int> forced_level{-1};

CpuLevel ActiveCpuLevel() {
    const int forced = forced_level.load(std::memory_order_relaxed);
    return forced >= 0 ? static_cast<CpuLevel>(forced) : TheChoice().active;
}

bool ForceCpuLevel(CpuLevel level) {
    if (static_cast<int>(level) > static_cast<int>(DetectedCpuLevel()) || !CpuLevelBuilt(level)) return false;
    forced_level.store(static_cast<int>(level));
    return true;
}

std::string OneDnnIsaName() {
    TheChoice();   // the cap, if any, first
    const unsigned isa = dnnl_get_effective_cpu_isa();
    // Nested bit masks: the richest whose bits are all present names it.
    struct Named { dnnl_cpu_isa_t isa; const char* name; };
    static constexpr Named kIsas[] = {
        {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"}, {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
        {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"}, {dnnl_cpu_isa_avx512_core, "avx512_core"},
        {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"}, {dnnl_cpu_isa_avx2, "avx2"}, {dnnl_cpu_isa_avx, "avx"},
        {dnnl_cpu_isa_sse41, "sse41"},
    };
    for (const Named& n : kIsas) {
        if ((isa & n.isa) == static_cast<unsigned>(n.isa)) return n.name;
    }
    return "none";
}

std::string KernelChoiceSummary() {
    const Choice& c = TheChoice();
    std::string s = CpuLevelName(ActiveCpuLevel());
    s += " (CPU has ";
    s += CpuLevelName(c.detected);
    s += c.requested.empty() ? "; PREPACK_CPU unset" : "; PREPACK_CPU=" + c.requested;
    if (PREPACK_BUILT_ISA_LEVELS != kAllLevelsBuilt) s += "; kernels built: " + BuiltLevelNames();
    s += "; oneDNN " + OneDnnIsaName() + ")";
    return s;
}

}  // namespace prepack::cpu
