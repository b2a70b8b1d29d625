#!/bin/sh
# prepack vs llama.cpp on the same GGUF files (issue 22).
#   [MODELS="f32 q8_0 q4_k_m q6_k"] [THREADS="2"] scripts/bench_vs_llamacpp.sh
# (a) makes the venv build/bench-venv with llama-cpp-python, numpy and gguf
#     (first time only: llama-cpp-python compiles llama.cpp, ~10 minutes on 2 cores);
# (b) writes build/bench-models/llama32-1b-{f32,q8_0,q4_k_m,q6_k}.gguf where missing
#     (a Llama-3.2-1B-shaped model with random weights, quantized by llama.cpp;
#     q5_k_m and q4_0 too when MODELS names them);
# (c) for each model and thread count, runs `prepack bench forward` and then
#     scripts/bench_llamacpp.py on the same file, one after the other; the raw
#     JSON lines go to build/bench-vs-llamacpp.jsonl;
# (d) rewrites the table between the bench_vs_llamacpp markers of docs/benchmarks.md.
# A model that prepack (or llama.cpp) refuses gets "refused: ..." in its row; the
# run goes on. Other knobs: PROMPT_TOKENS (512), DECODE_TOKENS (32), DECODE_BATCH (16),
# PREPACK_KV (bf16: prepack's --kv-dtype, 16-bit as llama.cpp's default f16),
# IDLE_WAIT (300: seconds each run may wait for an idle machine), VENV, MODEL_DIR,
# PREPACK, DOC, JSONL, LLAMACPP_PY (the pip requirement); TABLE_ONLY=1 only redoes (d)
# from the JSONL of an earlier run. MODEL_NAME (llama32-1b) runs other files,
# MODEL_DIR/MODEL_NAME-M.gguf for each M of MODELS; only llama32-1b's are made here.
set -eu
cd "$(dirname "$0")/.."
MODELS=${MODELS:-"f32 q8_0 q4_k_m q6_k"}
THREADS=${THREADS:-2}
PROMPT_TOKENS=${PROMPT_TOKENS:-512}
DECODE_TOKENS=${DECODE_TOKENS:-32}
DECODE_BATCH=${DECODE_BATCH:-16}
# llama.cpp keeps K/V in f16 by default; prepack's KV follows the weights'
# dtype (f32) unless told, so it is given 16-bit K/V too: the same bytes.
PREPACK_KV=${PREPACK_KV:-bf16}
VENV=${VENV:-build/bench-venv}
MODEL_DIR=${MODEL_DIR:-build/bench-models}
MODEL_NAME=${MODEL_NAME:-llama32-1b}
PREPACK=${PREPACK:-build/bin/prepack}
DOC=${DOC:-docs/benchmarks.md}
JSONL=${JSONL:-build/bench-vs-llamacpp.jsonl}
# 0.3.36: the release whose vendored llama.cpp ../shared/models/vocab comes from.
LLAMACPP_PY=${LLAMACPP_PY:-llama-cpp-python==0.3.36}
# The command as it can be rerun: the knobs that differ from their defaults spelled out.
COMMAND="MODELS=\"$MODELS\" THREADS=\"$THREADS\""
[ "$PROMPT_TOKENS" = 512 ] || COMMAND="$COMMAND PROMPT_TOKENS=$PROMPT_TOKENS"
[ "$DECODE_TOKENS" = 32 ] || COMMAND="$COMMAND DECODE_TOKENS=$DECODE_TOKENS"
[ "$DECODE_BATCH" = 16 ] || COMMAND="$COMMAND DECODE_BATCH=$DECODE_BATCH"
[ "$PREPACK_KV" = bf16 ] || COMMAND="$COMMAND PREPACK_KV=$PREPACK_KV"
[ "$VENV" = build/bench-venv ] || COMMAND="$COMMAND VENV=$VENV"
[ "$MODEL_NAME" = llama32-1b ] || COMMAND="$COMMAND MODEL_DIR=$MODEL_DIR MODEL_NAME=$MODEL_NAME"
COMMAND="$COMMAND scripts/bench_vs_llamacpp.sh"
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
say() { echo "bench_vs_llamacpp: $*" >&2; }
# Both engines spin-wait at thread barriers: on 2 shared cores any other load
# (a compile, a test) slows them several-fold, llama.cpp's OpenMP pool most.
# So each engine's run waits (up to IDLE_WAIT seconds, default 300) until no
# other task is runnable, 3 samples in a row; the count seen is kept in the JSON.
IDLE_WAIT=${IDLE_WAIT:-300}
others() { awk '{split($4, a, "/"); print a[1] - 1}' /proc/loadavg; }   # runnable tasks but awk itself
wait_idle() {
  waited=0 quiet=0
  while [ $quiet -lt 3 ] && [ $waited -lt "$IDLE_WAIT" ]; do
    if [ "$(others)" -le 0 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    sleep 1; waited=$((waited + 1))
  done
  [ $quiet -ge 3 ] || [ "$IDLE_WAIT" = 0 ] || say "warning: the machine stayed busy for ${IDLE_WAIT}s; measuring anyway (pessimistic numbers)"
  BUSY=$(others)
}

PY=$VENV/bin/python
if [ "${TABLE_ONLY:-0}" != 1 ]; then
# ---- (a) the venv --------------------------------------------------------------
if ! "$VENV/bin/python" -c "import llama_cpp, gguf, numpy" 2>/dev/null; then
  say "installing $LLAMACPP_PY numpy gguf into $VENV: llama.cpp is compiled from source, ~10 minutes the first time"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  # GGML_NATIVE: llama.cpp is built for this CPU's ISA (-march=native; AVX-512,
  # VNNI and BF16 on this project's Zen 5), as a local llama.cpp build would be.
  # The venv is then only valid on CPUs with the same flags.
  # --no-cache-dir: pip would otherwise reuse a wheel built earlier with other CMAKE_ARGS.
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON}"
  CMAKE_ARGS="$CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "$LLAMACPP_PY" numpy gguf
  # Kept beside the build, so the table can say how llama.cpp was built.
  echo "$CMAKE_ARGS" > "$VENV/llama-cpp-cmake-args"
fi

# ---- (b) the models ------------------------------------------------------------
mkdir -p "$MODEL_DIR"
F32=$MODEL_DIR/llama32-1b-f32.gguf
for M in $MODELS; do
  FILE=$MODEL_DIR/$MODEL_NAME-$M.gguf
  [ -f "$FILE" ] && continue
  if [ "$MODEL_NAME" != llama32-1b ]; then say "no $FILE (only llama32-1b files are made here)"; exit 2; fi
  if [ ! -f "$F32" ]; then
    say "writing $F32 (5 GB, about a minute)"
    "$PY" scripts/make_bench_model.py "$F32"
  fi
  [ "$M" = f32 ] && continue
  say "quantizing $F32 to $M with llama.cpp"
  "$PY" scripts/bench_llamacpp.py quantize "$F32" "$FILE" "$M" --threads 2 >&2
done

# ---- (c) both engines, one after the other on each file ---------------------------
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# First line: how the run was made, so TABLE_ONLY=1 can redo the table from the file alone.
LLAMACPP_BUILD=$(cat "$VENV/llama-cpp-cmake-args" 2>/dev/null || echo "unrecorded CMAKE_ARGS")
"$PY" -c 'import json, sys, datetime; print(json.dumps({"engine": "meta", "command": sys.argv[1], "load_at_start": sys.argv[2], "prepack_commit": sys.argv[3], "llamacpp_cmake_args": sys.argv[4], "date": datetime.date.today().isoformat()}))' \
  "$COMMAND" "$LOAD_AT_START" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$LLAMACPP_BUILD" > "$JSONL"
for M in $MODELS; do
  FILE=$MODEL_DIR/$MODEL_NAME-$M.gguf
  for T in $THREADS; do
    wait_idle; P_BUSY=$BUSY
    say "$FILE, $T threads: prepack"
    # Peak RSS of prepack: ru_maxrss of the only child of this small Python
    # parent (what /usr/bin/time %M reads, without needing Debian's `time`).
    "$PY" - "$TMP/p.out" "$TMP/p.err" "$TMP/p.rss" "$PREPACK" bench forward --model "$FILE" --threads "$T" \
      --prompt-tokens "$PROMPT_TOKENS" --decode-tokens "$DECODE_TOKENS" --decode-batch "$DECODE_BATCH" --reps 1 \
      --kv-dtype "$PREPACK_KV" --json <<'PY' || true
import resource, subprocess, sys
out, err, rss, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with open(out, "w") as o, open(err, "w") as e:
    try:
        rc = subprocess.call(cmd, stdout=o, stderr=e)
    except OSError as x:   # no binary yet
        e.write("prepack: cannot run %s: %s\n" % (cmd[0], x.strerror)); rc = 127
open(rss, "w").write("%d %d\n" % (rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
PY
    wait_idle; L_BUSY=$BUSY
    say "$FILE, $T threads: llama.cpp"
    "$PY" scripts/bench_llamacpp.py "$FILE" --threads "$T" --prompt-tokens "$PROMPT_TOKENS" \
      --decode-tokens "$DECODE_TOKENS" --seqs "$DECODE_BATCH" > "$TMP/l.out" 2> "$TMP/l.err" || true
    # One JSON line per engine, tagged with the file; a failure becomes an "error" line.
    "$PY" - "$TMP" "$FILE" "$T" "$P_BUSY" "$L_BUSY" >> "$JSONL" <<'PY'
import json, os, sys
tmp, file, threads, p_busy, l_busy = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def read(name):
    p = os.path.join(tmp, name)
    return open(p).read() if os.path.exists(p) else ""
def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None
def first_error(err):
    lines = [l.strip() for l in err.splitlines() if l.strip()]
    picked = [l for l in lines if l.startswith("prepack:") or "rror" in l] or lines[-1:] or ["no output"]
    return picked[0]
rc, maxrss = (int(x) for x in (read("p.rss") or "127 0").split())
p = last_json(read("p.out"))
if rc != 0 or p is None:
    p = {"error": first_error(read("p.err")), "exit_code": rc}
# prepack's own figure is its peak after it measured its GEMM and bandwidth
# ceilings (whose buffers it frees), as llama.cpp's is without them; the
# process's whole peak is kept beside it.
own_peak = p.get("peak_rss_bytes", 0) / 1048576.0
p.update(engine="prepack", model_file=file, threads=threads,
         peak_rss_mib=round(own_peak or maxrss / 1024.0, 1), process_peak_rss_mib=round(maxrss / 1024.0, 1),
         other_runnable_at_start=p_busy)
l = last_json(read("l.out")) or {"error": first_error(read("l.err"))}
l.update(engine="llama.cpp", model_file=file, other_runnable_at_start=l_busy)
for r in (p, l):
    print(json.dumps(r))
PY
    rm -f "$TMP"/p.* "$TMP"/l.*
  done
done
fi   # TABLE_ONLY

# ---- (d) the table in docs/benchmarks.md --------------------------------------------
"$PY" - "$JSONL" "$DOC" "$COMMAND" "$LOAD_AT_START" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" <<'PY'
import datetime, json, os, sys
jsonl, doc, command, load, commit = sys.argv[1:6]
rows = [json.loads(l) for l in open(jsonl) if l.strip()]
meta = ([r for r in rows if r["engine"] == "meta"] or [{}])[0]
rows = [r for r in rows if r["engine"] != "meta"]
command, load, commit = meta.get("command", command), meta.get("load_at_start", load), meta.get("prepack_commit", commit)
BEGIN, END = "<!-- bench_vs_llamacpp:begin -->", "<!-- bench_vs_llamacpp:end -->"
HEADING = "## prepack vs llama.cpp on the same GGUF files (issue 22)"

cpu, flags = "unknown", set()
for line in open("/proc/cpuinfo"):
    k, _, v = line.partition(":")
    if k.strip() == "model name" and cpu == "unknown":
        cpu = v.strip()
    if k.strip() == "flags" and not flags:
        flags = set(v.split())
isa = " ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16") if f in flags) or "none of avx2/avx512f"
ok_p = [r for r in rows if r["engine"] == "prepack" and "error" not in r]
any_l = [r for r in rows if r["engine"] == "llama.cpp" and "llama_cpp_python" in r]
kernels = ok_p[0].get("cpu_kernels", "?") if ok_p else "n/a (no prepack run succeeded)"
llver = any_l[0]["llama_cpp_python"] if any_l else "?"
sysinfo = any_l[0].get("system_info", "?") if any_l else "?"
n_seq = (any_l or [{}])[0].get("decode_batch", os.environ.get("DECODE_BATCH", "16"))

def cell(r, key, fmt):
    if r is None:
        return "–"
    if "error" in r:
        return None
    v = r.get(key)
    return fmt % v if isinstance(v, (int, float)) else "–"

def ratio(p, l, key):
    a, b = (p or {}).get(key), (l or {}).get(key)
    if "error" in (p or {"error": 1}) or "error" in (l or {"error": 1}) or not a or not b:
        return "–"
    return "%.2f" % (a / b)

def esc(s):
    return s.replace("|", "\\|").replace("\n", " ")[:160]

keys = [("prefill_tokens_per_s", "%.1f"), ("decode_tokens_per_s", "%.2f"),
        ("decode_batch_tokens_per_s", "%.1f"), ("peak_rss_mib", "%.0f")]
out = ["", "Run %s on %s (%s), %s threads, %s prompt tokens, %s decode tokens; machine load at start %s "
       "(2 shared cores: a load above ~0.5 makes both engines slower). Ratios are prepack / llama.cpp "
       "(above 1: prepack faster, or for RSS larger)." % (
           meta.get("date", datetime.date.today().isoformat()), cpu, isa, " ".join(sorted({str(r.get("threads")) for r in rows if r["engine"] == "prepack"})),
           (any_l or [{}])[0].get("prompt_tokens", "?"), (any_l or [{}])[0].get("decode_tokens", "?"), load),
       "",
       "- runs that started while another task was runnable (contended): %d of %d" % (
           sum(1 for r in rows if r.get("other_runnable_at_start", 0) > 0), len(rows)),
       "- prepack at commit %s (plus whatever the working tree held when build/bin/prepack was built), CPU kernels: %s" % (commit, kernels),
       "- llama-cpp-python %s (llama.cpp built with CMAKE_ARGS `%s`); llama.cpp system info: `%s`" % (
           llver, meta.get("llamacpp_cmake_args", "-DGGML_NATIVE=ON"), sysinfo),
       "- command: `%s` (raw JSON lines: %s)" % (command, jsonl),
       "",
       "| model file | threads | prepack prefill tok/s | llama.cpp prefill tok/s | ratio | prepack decode tok/s | "
       "llama.cpp decode tok/s | ratio | prepack %s-seq decode tok/s | llama.cpp %s-seq decode tok/s | ratio | "
       "prepack peak RSS MiB | llama.cpp peak RSS MiB | ratio |" % (n_seq, n_seq),
       "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
pairs = []
for r in rows:   # the driver writes prepack then llama.cpp for each file and thread count
    if r["engine"] == "prepack":
        pairs.append([r, None])
    elif pairs and pairs[-1][1] is None:
        pairs[-1][1] = r
for p, l in pairs:
    cells = [os.path.basename(p["model_file"]), str(p["threads"])]
    for key, fmt in keys:
        pc, lc = cell(p, key, fmt), cell(l, key, fmt)
        cells += [pc, lc, ratio(p, l, key)]
    # A refusal (or failure) is spelled out once, in the engine's first cell; its
    # other cells (RSS too: that of a process that stopped early) are blank.
    for word, r, idx in (("refused", p, 2), ("failed", l, 3)):
        if r is not None and "error" in r:
            msg = "%s: %s" % (word, esc(r["error"][len("prepack: "):] if r["error"].startswith("prepack: ") else r["error"]))
            cells = [msg if i == idx else ("–" if c is None else c) for i, c in enumerate(cells)]
    out.append("| " + " | ".join(cells) + " |")
notes = sorted({"%s: weights %s (%.0f MiB resident), KV %s" % (
                    os.path.basename(p["model_file"]), p.get("weights", p.get("dtype")),
                    p.get("weight_resident_bytes", 0) / 1048576.0, p.get("kv_dtype"))
                for p, _ in pairs if "error" not in p})
if notes:
    out += ["", "prepack's JSON: " + "; ".join(notes) + ". llama.cpp: weights as stored in the file, KV f16."]
out.append("")

text = open(doc).read() if os.path.exists(doc) else ""
if BEGIN not in text or END not in text:
    text = text.rstrip("\n") + "\n\n" + HEADING + "\n\n" + BEGIN + "\n" + END + "\n"
head, rest = text.split(BEGIN, 1)
_, tail = rest.split(END, 1)
tmp = doc + ".tmp"
with open(tmp, "w") as f:
    f.write(head + BEGIN + "\n".join(out) + END + tail)
os.replace(tmp, doc)
print("\n".join(out))
PY
say "table from $JSONL written into $DOC"
