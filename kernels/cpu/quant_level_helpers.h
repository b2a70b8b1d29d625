// Small inline helpers of the per-level quantized kernels (quant_linear.cpp,
// quant_gemm.cpp, quant_decode.cpp), compiled for the level of the source
// that includes them. Include after level_kernels.h: this header opens its
// own per-level region (isa_region.h), so _cvtsh_ss below is F16C code only
// at the levels that have F16C, never baseline code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/quant_blocks.h"

#include "kernels/cpu/isa_region.h"   // last: the region below

PREPACK_ISA_BEGIN

// The fp16 scale at p (blocks store them unaligned): through F16C from the
// AVX2 level up; HalfToFloat, an out-of-line call, at the baseline.
inline float LoadHalf(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof(h));
#if PREPACK_ISA_LEVEL >= 1
    return _cvtsh_ss(h);
#else
    return HalfToFloat(h);
#endif
}

#if PREPACK_ISA_LEVEL >= 1
inline __m256i Load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
#endif

// -DPREPACK_QUANT_PREFETCH=N measures another distance.
#ifndef PREPACK_QUANT_PREFETCH
#define PREPACK_QUANT_PREFETCH 2048
#endif
// How far ahead of the block being summed the weight stream is fetched. The
// hardware prefetchers alone kept one-row Q4_K decode at 11 GB/s from memory
// on an AMX Xeon (2 threads), under half of what the machine delivers, though
// in cache the kernel ran as fast as Q6_K's; fetching 2 KiB ahead (about 14
// Q4_K blocks, into the next row when a row ends) took it to about 25 GB/s
// (1 KiB: 10% slower, 4 KiB: the same). The rows a thread reads are
// consecutive, so the stream runs on across rows. The int8 GEMM's repack
// (quant_gemm.cpp) reads 8 rows side by side and fetches ahead in each.
// The lines go to L2 (prefetcht1), not L1: one-row decode from memory went
// 17-19 -> 19-21 GB/s in `bench kernels` and Q4_K_M batch-1 decode 20.6-20.8
// -> 22.4-23.0 tokens/s at AVX2 (same Xeon, alternating binaries). Filling L1
// ties up its few miss buffers for the whole trip to memory; the L2's are
// more, and an L1 miss that hits L2 is short enough for out-of-order
// execution to hide. (prefetcht2: the same; prefetchnta: 25% slower.)
constexpr int64_t kPrefetchBytes = PREPACK_QUANT_PREFETCH;

// Prefetches the cache lines that begin within [block, block + kBytes) moved
// kPrefetchBytes on: called once per block of a stream, every line is fetched once.
inline void PrefetchAhead(const uint8_t* block, int64_t bytes) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(block) + kPrefetchBytes;
    for (uintptr_t line = (begin + 63) & ~uintptr_t{63}; line < begin + bytes; line += 64) {
        __builtin_prefetch(reinterpret_cast<const void*>(line), /*rw=*/0, /*locality=*/2);   // prefetcht1
    }
}

PREPACK_ISA_END
