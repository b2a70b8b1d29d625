// The one symbol libprepack_cuda.so exports (core/forward/cuda_module.h).
#include "core/forward/cuda_module.h"
#include "core/forward/cuda_pass.h"
#include "kernels/cuda/ceilings.h"
#include "kernels/cuda/device.h"

namespace {

absl::StatusOr<std::unique_ptr<prepack::StepRunner>> CreateRunner(const prepack::Model& model,
                                                                  prepack::KvBlockPool& pool) {
    PP_ASSIGN_OR_RETURN(std::unique_ptr<prepack::CudaForwardPass> runner,
                        prepack::CudaForwardPass::Create(model, pool));
    return std::unique_ptr<prepack::StepRunner>(std::move(runner));
}

const prepack::CudaModule kModule = {
    prepack::cuda::DeviceCount,
    prepack::CudaKvStorage,
    prepack::AutoCudaKvBudget,
    CreateRunner,
    [](prepack::cpu::DType dtype) { return prepack::cuda::GemmPeakGflops(dtype); },
    [] { return prepack::cuda::CopyBandwidthGbps(); },
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const prepack::CudaModule* prepack_cuda_module_v1() {
    return &kModule;
}
