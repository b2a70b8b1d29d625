// Process-wide runtime settings: the CPU thread pool size and what the
// machine offers (memory), so budgets can be checked before allocating.
#pragma once

#include <cstdint>

namespace prepack {

// Threads used by our kernels and by oneDNN (they share one OpenMP pool).
// n <= 0 selects the number of online CPUs.
void SetNumThreads(int n);
int  NumThreads();

// MemAvailable from /proc/meminfo, or 0 when it cannot be read.
uint64_t AvailableMemoryBytes();

// Monotonic wall clock in seconds.
double NowSeconds();

}  // namespace prepack
