#!/bin/sh
# Builds the CUDA tests, the prepack CLI and the CUDA module on this
# (GPU-less) machine and packs them, with the shared libraries the GPU
# machine's image lacks (abseil, oneDNN, the C++ runtime) and the
# stories260K model, into .gpu/ (ignored by git). The GPU machine has nvcc,
# cuBLAS and the driver but none of the project's Debian packages and no
# registry to fetch them from, so the build happens here and travels:
#   scripts/gpu-pack.sh
#   device run: command "scripts/gpu-check.sh $OUT", carry [".gpu"]
# Baseline x86-64 code (PREPACK_NATIVE=OFF): the GPU machine's CPU is not this one.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
TESTS="cuda_device_test cuda_kernels_test cuda_forward_test"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPREPACK_CUDA=ON -DPREPACK_NATIVE=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD" -j"$(nproc)" --target $TESTS prepack prepack_cuda
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib .gpu/models/stories260K
for t in $TESTS prepack; do cp "$BUILD/bin/$t" .gpu/bin/; done
# bin/../lib is where the binaries look for the module (core/forward/cuda_module.cpp).
cp "$BUILD/lib/libprepack_cuda.so" .gpu/lib/
MODELS=${PREPACK_MODELS_DIR:-../shared/models}
if [ -f "$MODELS/stories260K/stories260K.gguf" ]; then
  cp "$MODELS/stories260K/stories260K.gguf" "$MODELS/stories260K/reference.json" .gpu/models/stories260K/
fi
# Everything the binaries load but the C library, the driver and CUDA's own
# libraries (hundreds of MB; the GPU machine's CUDA 13 has them).
for b in .gpu/bin/* .gpu/lib/libprepack_cuda.so; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*|libcuda.so*|libcublas*|libcudart*) ;;
      *) cp -L "$lib" .gpu/lib/ ;;
    esac
  done
du -sh .gpu >&2
