// Kernel launches and dynamic shared memory spelled as macros, so the same
// kernel sources also build as plain C++ against tests/cuda_emulation (a
// CPU emulator of the CUDA subset these kernels use): their indexing,
// masking, tiling and barrier logic is then tested on every machine,
// GPU or not. Under nvcc they are the usual syntax.
#pragma once

#ifdef PREPACK_CUDA_EMULATION
#include "cuda_emu.h"
#define PP_LAUNCH(kernel, grid, block, shared) ::cuda_emu::Launch((grid), (block), (shared), kernel)
#define PP_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::cuda_emu::DynamicShared())
#else
#define PP_LAUNCH(kernel, grid, block, shared) kernel<<<(grid), (block), (shared)>>>
#define PP_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
