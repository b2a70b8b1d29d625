#include "kernels/cpu/cpu_level.h"

#include <cstdio>
#include <cstdlib>
#include <atomic>

#include <oneapi/dnnl/dnnl.h>

namespace prepack::cpu {
namespace {

constexpr const char* kNames[] = {"baseline", "avx2", "avx512", "avx512-bf16"};

// libgcc's CPUID reading also checks, through XGETBV, that the OS saves
// the AVX / AVX-512 registers: a feature it reports can be used.
CpuLevel Detect() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi") &&
                    __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("movbe");
    if (!v3) return CpuLevel::kBaseline;
    const bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl");
    if (!v4) return CpuLevel::kAvx2;
    if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vnni")) return CpuLevel::kAvx512Bf16;
    return CpuLevel::kAvx512;
#else
    return CpuLevel::kBaseline;
#endif
}

dnnl_cpu_isa_t OneDnnCap(CpuLevel level) {
    switch (level) {
        case CpuLevel::kBaseline: return dnnl_cpu_isa_sse41;
        case CpuLevel::kAvx2: return dnnl_cpu_isa_avx2;
        case CpuLevel::kAvx512: return dnnl_cpu_isa_avx512_core;
        case CpuLevel::kAvx512Bf16: return dnnl_cpu_isa_avx512_core_bf16;
    }
    return dnnl_cpu_isa_all;
}

struct Choice {
    CpuLevel detected;
    CpuLevel active;
    std::string requested;   // PREPACK_CPU as given, empty when unset
};

// PREPACK_CPU read and oneDNN capped exactly once, before any kernel runs.
const Choice& TheChoice() {
    static const Choice choice = [] {
        Choice c{Detect(), Detect(), ""};
        const char* env = std::getenv("PREPACK_CPU");
        if (env == nullptr || *env == '\0') return c;
        c.requested = env;
        const std::optional<CpuLevel> asked = ParseCpuLevel(env);
        if (!asked) {
            std::fprintf(stderr, "prepack: PREPACK_CPU=%s is not one of %s; using %s\n", env, CpuLevelNames(),
                         CpuLevelName(c.detected));
            return c;
        }
        if (static_cast<int>(*asked) > static_cast<int>(c.detected)) {
            std::fprintf(stderr, "prepack: PREPACK_CPU=%s is more than this CPU has (%s); using %s\n", env,
                         CpuLevelName(c.detected), CpuLevelName(c.detected));
            return c;
        }
        c.active = *asked;
        // Fails only when oneDNN has already generated code: then it keeps its own choice.
        dnnl_set_max_cpu_isa(OneDnnCap(c.active));
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
    if (static_cast<int>(level) > static_cast<int>(DetectedCpuLevel())) return false;
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
    s += "; oneDNN " + OneDnnIsaName() + ")";
    return s;
}

}  // namespace prepack::cpu
