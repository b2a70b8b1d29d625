#!/bin/sh
# On the GPU machine: runs the CUDA tests that scripts/gpu-pack.sh packed
# into .gpu/ and writes their logs and gtest JSON to OUT (at most 8 files:
# what the device tool brings back). Sized for well under 8 minutes.
#   scripts/gpu-check.sh OUT_DIR
set -u
OUT=${1:?usage: scripts/gpu-check.sh OUT_DIR}
cd "$(dirname "$0")/.."
if [ ! -x .gpu/bin/cuda_kernels_test ]; then
  echo "gpu-check: .gpu/ is missing: run scripts/gpu-pack.sh first and carry .gpu" >&2
  exit 2
fi
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
gpu=yes
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || gpu=no
status=0
for t in cuda_device_test cuda_kernels_test; do
  echo "gpu-check: $t" >&2
  timeout 300 ".gpu/bin/$t" --gtest_output="json:$OUT/$t.json" > "$OUT/$t.log" 2>&1 || status=1
  tail -3 "$OUT/$t.log" >&2
  # On a machine with a GPU a skipped test means the binary did not see it.
  if [ "$gpu" = yes ] && grep -q "SKIPPED \]" "$OUT/$t.log"; then
    echo "gpu-check: $t skipped tests although nvidia-smi sees a GPU" >&2
    status=1
  fi
done
exit $status
