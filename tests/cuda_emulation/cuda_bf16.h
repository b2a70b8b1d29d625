// Emulator stand-in for CUDA's <cuda_bf16.h> (see cuda_emu.h).
#pragma once
#include "cuda_emu.h"
