#!/bin/sh
# The offline-batch table of docs/benchmarks.md (issues 4, 18): `prepack
# bench batch` under fcfs, lru and batchllm for each generated workload at
# each KV budget, one JSON object per line to OUT (default
# docs/bench_batch.jsonl), then the markdown table on stdout.
#   MODEL=synthetic:110m THREADS=2 WORKLOADS="shared-prefix shared-prefix-nested few-shot no-sharing" \
#     BUDGETS="default 67108864" scripts/bench_batch_table.sh [OUT]
# A budget of "default" leaves the engine's own (256 MiB); 67108864 is a
# quarter of the peak KV fcfs reaches on these batches at the default.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-docs/bench_batch.jsonl}
MODEL=${MODEL:-synthetic:110m}
THREADS=${THREADS:-2}
WORKLOADS=${WORKLOADS:-"shared-prefix shared-prefix-nested few-shot no-sharing"}
BUDGETS=${BUDGETS:-"default 67108864"}
: > "$OUT"
for W in $WORKLOADS; do
  for B in $BUDGETS; do
    echo "bench_batch_table: $W, KV budget $B" >&2
    BUDGET_FLAG=""
    [ "$B" != default ] && BUDGET_FLAG="--kv-budget $B"
    # shellcheck disable=SC2086
    build/bin/prepack bench batch --model "$MODEL" --threads "$THREADS" --workload "$W" $BUDGET_FLAG --json |
      python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["kv_budget"]=sys.argv[1]; print(json.dumps(d))' "$B" >> "$OUT"
  done
done
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| workload | KV budget | policy | seconds | total tok/s | vs lru | prefill computed | computed / tree minimum | recomputed | preemptions | peak KV MiB |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for d in rows:
    budget = "default" if d["kv_budget"] == "default" else "%d MiB" % (int(d["kv_budget"]) >> 20)
    by = {r["policy"]: r for r in d["results"]}
    lru = by.get("lru")
    for r in d["results"]:
        vs = "%.2fx" % (r["total_tokens_per_s"] / lru["total_tokens_per_s"]) if lru else ""
        print("| %s | %s | %s | %.1f | %.1f | %s | %d | %.2f | %d | %d | %.0f |" % (
            d["workload"]["name"], budget, r["policy"], r["seconds"], r["total_tokens_per_s"], vs,
            r["prefill_tokens_computed"], r["computed_vs_unique"], r["recomputed_prompt_tokens"],
            r["preemptions"], r["peak_kv_bytes"] / 2**20))
PY
