#!/bin/sh
# On the GPU machine: runs the CUDA tests and GPU benchmarks that
# scripts/gpu-pack.sh packed into .gpu/, writing to OUT four files (the
# device tool brings back at most eight): log.txt (everything printed),
# cuda_kernels_test.json and cuda_forward_test.json (gtest results) and
# bench.jsonl (one JSON line per benchmark). Sized for well under 8 minutes
# on an H200: each step has its own timeout, and a failed step does not
# stop the others.
#   scripts/gpu-check.sh OUT_DIR
set -u
OUT=${1:?usage: scripts/gpu-check.sh OUT_DIR}
cd "$(dirname "$0")/.."
if [ ! -x .gpu/bin/cuda_kernels_test ]; then
  echo "gpu-check: .gpu/ is missing: run scripts/gpu-pack.sh first and carry .gpu" >&2
  exit 2
fi
mkdir -p "$OUT"
LOG="$OUT/log.txt"
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PREPACK_MODELS_DIR="$PWD/.gpu/models"
say() { echo "gpu-check: $*" | tee -a "$LOG" >&2; }
gpu=yes
nvidia-smi >> "$LOG" 2>&1 || gpu=no
status=0
for t in cuda_device_test cuda_kernels_test cuda_forward_test; do
  say "$t"
  json=""
  [ "$t" = cuda_device_test ] || json="--gtest_output=json:$OUT/$t.json"
  timeout 240 ".gpu/bin/$t" $json > "$OUT/$t.out" 2>&1 || { status=1; say "$t FAILED"; }
  cat "$OUT/$t.out" >> "$LOG"
  tail -3 "$OUT/$t.out" >&2
  # On a machine with a GPU a skipped test means the binary did not see it
  # (the one test that checks the GPU-less answer skips there by design).
  if [ "$gpu" = yes ] && grep "SKIPPED \]" "$OUT/$t.out" | grep -vq "WithoutAGpu"; then
    say "$t skipped tests although nvidia-smi sees a GPU"
    status=1
  fi
  rm -f "$OUT/$t.out"
done
# Benchmarks (issue 9's targets): prefill MFU and decode bandwidth on 1b
# and 7b in bf16, against the cuBLAS peak and copy bandwidth measured by the
# same run; padded vs packed vs ragged prefill on the uniform 16..1024
# workload; LazyLLM's TTFT; BatchLLM against FCFS on a shared-prefix batch.
# Synthetic weights are generated on the CPU first (7b: about a minute).
bench() {
  name=$1
  limit=$2
  shift 2
  say "bench $name: prepack bench $* --device cuda --json"
  if timeout "$limit" .gpu/bin/prepack bench "$@" --device cuda --json > "$OUT/b.json" 2>> "$LOG"; then
    printf '{"bench": "%s", "result": %s}\n' "$name" "$(cat "$OUT/b.json")" >> "$OUT/bench.jsonl"
  else
    status=1
    say "bench $name FAILED"
  fi
  rm -f "$OUT/b.json"
}
bench forward_1b 120 forward --model synthetic:1b --dtype bf16 --prompt-tokens 2048 --decode-tokens 32 --decode-batch 64
bench forward_7b 240 forward --model synthetic:7b --dtype bf16 --prompt-tokens 2048 --decode-tokens 16 --decode-batch 16 --reps 2
bench prefill_1b 120 prefill --model synthetic:1b --dtype bf16 --prompts 64 --lengths uniform:16:1024 --reps 3
bench lazy_1b 90 lazy --model synthetic:1b --dtype bf16 --prompt-tokens 1024,2048 --reps 2
bench batch_1b 90 batch --model synthetic:1b --dtype bf16 --workload shared-prefix --requests 64 --policies fcfs,batchllm
say "done, status $status"
exit $status
