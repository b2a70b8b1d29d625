// CUDA device discovery (host-side API; no CUDA headers needed to include it).
#pragma once

namespace prepack::cuda {

// Number of usable CUDA devices; 0 when there is no GPU, no driver, or the
// driver is older than the runtime.
int DeviceCount();

}  // namespace prepack::cuda
