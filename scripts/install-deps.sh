#!/bin/sh
# Installs every system dependency of prepack from Debian 12 packages.
# Idempotent: safe to run again. Needs root (or sudo).
set -eu
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  build-essential cmake pkg-config git ca-certificates \
  libgtest-dev libgmock-dev \
  libabsl-dev \
  libdnnl-dev \
  libcli11-dev nlohmann-json3-dev \
  python3
# CUDA is not a Debian package. When /usr/local/cuda (nvcc) exists the build
# compiles the CUDA backend too; otherwise it is skipped automatically.
