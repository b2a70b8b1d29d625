#!/bin/sh
# The CPU speed table of docs/benchmarks.md (issue 11): `prepack bench
# forward` for each model shape, thread count and weights/KV-cache dtype
# pair, one JSON object per line to OUT (default docs/bench_forward.jsonl),
# then the markdown table on stdout.
#   MODELS="synthetic:tiny synthetic:110m synthetic:1b" THREADS="1 2" DTYPES="f32/f32 f32/bf16 bf16/bf16" \
#     scripts/bench_forward_table.sh [OUT]
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-docs/bench_forward.jsonl}
MODELS=${MODELS:-"synthetic:tiny synthetic:110m synthetic:1b"}
THREADS=${THREADS:-"1 2"}
DTYPES=${DTYPES:-"f32/f32 f32/bf16 bf16/bf16"}
: > "$OUT"
for MODEL in $MODELS; do
  for T in $THREADS; do
    for PAIR in $DTYPES; do
      D=${PAIR%/*} KV=${PAIR#*/}
      echo "bench_forward_table: $MODEL, $T threads, weights $D, KV $KV" >&2
      # The 1b model: fewer repetitions (a 512-token prefill is ~10 s on one core).
      REPS=3
      [ "$MODEL" = synthetic:1b ] && REPS=1
      build/bin/prepack bench forward --model "$MODEL" --threads "$T" --dtype "$D" --kv-dtype "$KV" --prompt-tokens 512 \
        --decode-tokens 32 --decode-batch 16 --reps "$REPS" --json >> "$OUT"
    done
  done
done
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| model | threads | weights | KV | prefill tok/s | prefill GFLOP/s | GEMM peak | prefill / peak | decode tok/s | decode GB/s | read GB/s | decode / bandwidth | x16 decode tok/s | x16 / x1 |")
print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print("| {model} | {threads} | {dtype} | {kv} | {ptps:.0f} | {pg:.1f} | {peak:.1f} | {pe:.0%} | {dtps:.1f} | {dg:.1f} | {bw:.1f} | {de:.0%} | {btps:.1f} | {bs:.2f} |".format(
        model=r["model"], threads=r["threads"], dtype=r["dtype"], kv=r["kv_dtype"], ptps=r["prefill_tokens_per_s"],
        pg=r["prefill_gflops"], peak=r["gemm_peak_gflops"], pe=r["prefill_efficiency"],
        dtps=r["decode_tokens_per_s"], dg=r["decode_gbps"], bw=r["mem_bandwidth_gbps"],
        de=r["decode_efficiency"], btps=r["decode_batch_tokens_per_s"], bs=r["decode_batch_speedup"]))
PY
echo "wrote $OUT" >&2
