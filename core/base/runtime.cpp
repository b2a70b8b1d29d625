#include "core/base/runtime.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace prepack {

void SetNumThreads(int n) {
    if (n <= 0) n = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    if (n <= 0) n = 1;
    // A cap from the environment (not OMP_THREAD_LIMIT, which makes OpenMP
    // grant fewer threads than oneDNN partitioned its GEMM for).
    if (const char* cap = std::getenv("PREPACK_MAX_THREADS"); cap != nullptr && std::atoi(cap) >= 1) {
        n = std::min(n, std::atoi(cap));
    }
    omp_set_num_threads(n);
}

int NumThreads() { return omp_get_max_threads(); }

uint64_t AvailableMemoryBytes() {
    FILE* f = std::fopen("/proc/meminfo", "r");
    if (f == nullptr) return 0;
    char line[256];
    uint64_t kb = 0;
    while (std::fgets(line, sizeof line, f) != nullptr) {
        unsigned long long v = 0;
        if (std::sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
            kb = v;
            break;
        }
    }
    std::fclose(f);
    return kb * 1024;
}

double NowSeconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace prepack
