// Emulator stand-in for CUDA's <cuda_runtime.h> (see cuda_emu.h).
#pragma once
#include "cuda_emu.h"
