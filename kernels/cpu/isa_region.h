// Opens and closes the per-level part of a kernel source. kernels/CMakeLists.txt
// compiles those sources once per level with PREPACK_ISA_LEVEL set; the whole
// translation unit stays at the baseline -march and only the code between
// PREPACK_ISA_BEGIN and PREPACK_ISA_END is compiled for the level (a target
// pragma, as Highway does). That is why this header comes after every other
// include: inline functions and templates of the standard library and of our
// own headers are then baseline code, so the copy of std::vector<float>::resize
// the linker keeps can never be an AVX-512 one (scripts/check_isa.py checks
// the built library for exactly that). Declarations and definitions of the
// per-level functions must both sit inside a region.
//
// No include guard: each region is opened and closed by the macros.

#if !defined(PREPACK_ISA_LEVEL)
#error "a per-level kernel source: compiled by kernels/CMakeLists.txt with PREPACK_ISA_LEVEL set"
#endif

#if !defined(PREPACK_ISA_REGION_MACROS)
#define PREPACK_ISA_REGION_MACROS

#if PREPACK_ISA_LEVEL == 0
#define PREPACK_ISA_NS isa_baseline
#define PREPACK_ISA_CPU_LEVEL ::prepack::cpu::CpuLevel::kBaseline
#define PREPACK_ISA_PUSH
#define PREPACK_ISA_POP
#elif PREPACK_ISA_LEVEL == 1
#define PREPACK_ISA_NS isa_avx2
#define PREPACK_ISA_CPU_LEVEL ::prepack::cpu::CpuLevel::kAvx2
#define PREPACK_ISA_TARGET "avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt"
#elif PREPACK_ISA_LEVEL == 2
#define PREPACK_ISA_NS isa_avx512
#define PREPACK_ISA_CPU_LEVEL ::prepack::cpu::CpuLevel::kAvx512
#define PREPACK_ISA_TARGET "avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
#else
#error "PREPACK_ISA_LEVEL must be 0 (baseline), 1 (avx2) or 2 (avx512)"
#endif

#if defined(PREPACK_ISA_TARGET)
// Two steps so PREPACK_ISA_TARGET is expanded before it is stringized.
#define PREPACK_ISA_STR_(x) #x
#define PREPACK_ISA_PRAGMA_(x) _Pragma(PREPACK_ISA_STR_(x))
#if defined(__clang__)
#define PREPACK_ISA_PUSH PREPACK_ISA_PRAGMA_(clang attribute push(__attribute__((target(PREPACK_ISA_TARGET))), apply_to = function))
#define PREPACK_ISA_POP _Pragma("clang attribute pop")
#else
#define PREPACK_ISA_PUSH _Pragma("GCC push_options") PREPACK_ISA_PRAGMA_(GCC target(PREPACK_ISA_TARGET))
#define PREPACK_ISA_POP _Pragma("GCC pop_options")
#endif
#endif

#define PREPACK_ISA_BEGIN PREPACK_ISA_PUSH namespace prepack::cpu::PREPACK_ISA_NS {
#define PREPACK_ISA_END } PREPACK_ISA_POP

#endif  // PREPACK_ISA_REGION_MACROS
