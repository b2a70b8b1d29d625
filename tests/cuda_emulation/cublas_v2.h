// Emulator stand-in for CUDA's <cublas_v2.h> (see cuda_emu.h).
#pragma once
#include "cuda_emu.h"
