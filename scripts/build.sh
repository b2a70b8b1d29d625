#!/bin/sh
# Configures (Release) and builds prepack into ./build. Extra arguments go to
# CMake's configure step, e.g. -DPREPACK_CUDA=OFF.
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j "$(nproc)"
