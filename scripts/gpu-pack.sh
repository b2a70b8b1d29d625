#!/bin/sh
# Builds the CUDA tests on this (GPU-less) machine and packs them, with the
# shared libraries the GPU machine's image lacks (abseil, oneDNN, the C++
# runtime), into .gpu/ (ignored by git). The GPU machine has nvcc, cuBLAS
# and the driver but none of the project's Debian packages and no registry
# to fetch them from, so the build happens here and travels:
#   scripts/gpu-pack.sh
#   device run: command "scripts/gpu-check.sh $OUT", carry [".gpu"]
# Baseline x86-64 code (PREPACK_NATIVE=OFF): the GPU machine's CPU is not this one.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPREPACK_CUDA=ON -DPREPACK_NATIVE=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target cuda_kernels_test cuda_device_test
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib
cp "$BUILD/bin/cuda_kernels_test" "$BUILD/bin/cuda_device_test" .gpu/bin/
# Everything the binaries load but the C library, the driver and cuBLAS
# (hundreds of MB; the GPU machine's CUDA 13 has them).
for b in .gpu/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*|libcuda.so*|libcublas*) ;;
    *) cp -L "$lib" .gpu/lib/ ;;
  esac
done
du -sh .gpu >&2
