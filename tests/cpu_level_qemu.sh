#!/bin/sh
# The CLI run as other CPUs would run it, through qemu-user: as a Haswell
# (AVX2, no AVX-512) and as a Nehalem (x86-64-v2: no AVX at all). Executing
# any instruction those CPUs lack ends in SIGILL, so this shows that the
# dispatch picks the right kernels and that nothing else reaches past the
# baseline. Each must choose its level and print the same greedy text as the
# native run. Exit 77 (skipped) without qemu-x86_64 or the model.
# $3: the kernel levels the build compiled, comma-separated (CMake's
# PREPACK_CPU_LEVELS; default all): a CPU whose level was not compiled must
# get the baseline kernels instead.
set -eu
cli=$1
model=$2/stories260K/stories260K.gguf
built=${3:-0,1,2}
command -v qemu-x86_64 >/dev/null 2>&1 || { echo "skipped: qemu-x86_64 not installed (Debian qemu-user)"; exit 77; }
[ -f "$model" ] || { echo "skipped: $model absent"; exit 77; }
gen="generate --model $model --prompt Once --max-tokens 24 --temperature 0"
expected=$("$cli" $gen)
failed=0
for triple in Haswell:avx2:1 Nehalem:baseline:0; do
  cpu=${triple%%:*}
  level=${triple#*:}
  number=${level#*:}
  level=${level%:*}
  want=$level
  case ",$built," in
    *",$number,"*) ;;
    *) want=baseline; echo "note $cpu: no $level kernels in this build (levels $built): expecting $want" ;;
  esac
  kernels=$(qemu-x86_64 -cpu "$cpu" "$cli" inspect --model "$model" --json |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["cpu_kernels"])')
  case "$kernels" in
    "$want (CPU has $level;"*) echo "ok   $cpu: kernels $kernels" ;;
    *) echo "FAIL $cpu: expected the $want kernels, inspect says: $kernels"; failed=1 ;;
  esac
  got=$(qemu-x86_64 -cpu "$cpu" "$cli" $gen) || { echo "FAIL $cpu: generate failed (status $?)"; failed=1; continue; }
  if [ "$got" = "$expected" ]; then
    echo "ok   $cpu: same greedy text as the native run"
  else
    echo "FAIL $cpu: greedy text differs"; echo "  native: $expected"; echo "  $cpu: $got"; failed=1
  fi
done
exit $failed
