// Process-wide runtime settings: the CPU thread pool size and what the
// machine offers (memory), so budgets can be checked before allocating.
#pragma once

#include <cstdint>

namespace prepack {

// Threads used by our kernels and by oneDNN (they share one OpenMP pool).
// n <= 0 selects the number of online CPUs. The environment variable
// PREPACK_MAX_THREADS, when set to N >= 1, caps the result at N (used by
// scripts/sanitize.sh tsan: TSan cannot see libgomp's synchronisation).
void SetNumThreads(int n);
int  NumThreads();

// MemAvailable from /proc/meminfo, or 0 when it cannot be read.
uint64_t AvailableMemoryBytes();

// Monotonic wall clock in seconds.
double NowSeconds();

}  // namespace prepack
