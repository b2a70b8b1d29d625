// The CUDA backend lives in its own shared library, libprepack_cuda.so,
// loaded the first time something asks for `--device cuda`. Linking cuBLAS
// into every binary would map it into every process: ~220 MB of resident
// memory and 0.1 s at start-up for users who never touch a GPU (measured on
// `prepack --help`). The module holds a copy of the core it needs; objects
// cross the boundary as the same C++ types (one build, one compiler).
#pragma once

#include <cstdint>

#include "core/kv/kv_cache.h"
#include "core/model/model.h"
#include "core/base/status.h"
#include "core/step/step_runner.h"

namespace prepack {

struct CudaModule {
    int (*device_count)();
    // See core/forward/cuda_pass.h.
    KvStorageAllocator (*kv_storage)();
    uint64_t (*auto_kv_budget)(const ModelConfig& config, int64_t min_tokens, cpu::DType kv_dtype,
                               uint64_t reserved_bytes);
    absl::StatusOr<std::unique_ptr<StepRunner>> (*create_runner)(const Model& model, KvBlockPool& pool);
    // The GPU's ceilings for `prepack bench` (kernels/cuda/ceilings.h).
    absl::StatusOr<double> (*gemm_peak_gflops)(cpu::DType dtype);
    absl::StatusOr<double> (*copy_bandwidth_gbps)();
};

// The symbol the module exports: `const CudaModule* prepack_cuda_module_v1()`.
constexpr char kCudaModuleSymbol[] = "prepack_cuda_module_v1";
constexpr char kCudaModuleFile[] = "libprepack_cuda.so";

// Loads the module once (thread-safe) from $PREPACK_CUDA_MODULE, else next
// to the binary or library calling this (or in ../lib from it), else through
// the loader's search path. UNIMPLEMENTED when this build has no CUDA
// backend; UNAVAILABLE, with the loader's message, when it cannot be loaded.
absl::StatusOr<const CudaModule*> LoadCudaModule();

}  // namespace prepack
