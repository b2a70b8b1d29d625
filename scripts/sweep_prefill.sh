#!/bin/sh
# Prefill layouts across prompt-length variance: runs `prepack bench prefill`
# for lognormal lengths at several coefficients of variation and writes one
# JSON object per line to the output file (default docs/prefill_sweep.jsonl).
# Plot it with scripts/plot_prefill.py.
#   MODEL=synthetic:tiny PROMPTS=32 MEAN=256 THREADS=2 scripts/sweep_prefill.sh [OUT]
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-docs/prefill_sweep.jsonl}
MODEL=${MODEL:-synthetic:tiny}
PROMPTS=${PROMPTS:-32}
MEAN=${MEAN:-256}
THREADS=${THREADS:-2}
: > "$OUT"
for CV in 0 0.1 0.25 0.5 0.75 1.0 1.5; do
  echo "sweep: lognormal:$MEAN:$CV" >&2
  build/bin/prepack bench prefill --model "$MODEL" --prompts "$PROMPTS" --lengths "lognormal:$MEAN:$CV" \
    --seed 42 --threads "$THREADS" --json >> "$OUT"
done
echo "wrote $OUT" >&2
