#!/bin/sh
# The CLI run as other CPUs would run it, through qemu-user: as a Haswell
# (AVX2, no AVX-512) and as a Nehalem (x86-64-v2: no AVX at all). Executing
# any instruction those CPUs lack ends in SIGILL, so this shows that the
# dispatch picks the right kernels and that nothing else reaches past the
# baseline. Each must choose its level and print the same greedy text as the
# native run. Exit 77 (skipped) without qemu-x86_64 or the model.
set -eu
cli=$1
model=$2/stories260K/stories260K.gguf
command -v qemu-x86_64 >/dev/null 2>&1 || { echo "skipped: qemu-x86_64 not installed (Debian qemu-user)"; exit 77; }
[ -f "$model" ] || { echo "skipped: $model absent"; exit 77; }
gen="generate --model $model --prompt Once --max-tokens 24 --temperature 0"
expected=$("$cli" $gen)
failed=0
for pair in Haswell:avx2 Nehalem:baseline; do
  cpu=${pair%%:*}
  level=${pair#*:}
  kernels=$(qemu-x86_64 -cpu "$cpu" "$cli" inspect --model "$model" --json |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["cpu_kernels"])')
  case "$kernels" in
    "$level (CPU has $level;"*) echo "ok   $cpu: kernels $kernels" ;;
    *) echo "FAIL $cpu: expected the $level kernels, inspect says: $kernels"; failed=1 ;;
  esac
  got=$(qemu-x86_64 -cpu "$cpu" "$cli" $gen) || { echo "FAIL $cpu: generate failed (status $?)"; failed=1; continue; }
  if [ "$got" = "$expected" ]; then
    echo "ok   $cpu: same greedy text as the native run"
  else
    echo "FAIL $cpu: greedy text differs"; echo "  native: $expected"; echo "  $cpu: $got"; failed=1
  fi
done
exit $failed
