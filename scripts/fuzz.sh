#!/bin/sh
# Builds the libFuzzer targets (fuzz/) with clang into build-fuzz/ and runs
# each for SECONDS (default 60):
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# Everything (engine, C ABI, service request code and the targets) is
# compiled with -fsanitize=fuzzer-no-link,address,undefined, so coverage
# guides the fuzzers through our code and any memory error, leak, UB,
# timeout (-timeout=10 s per input) or RSS over 2 GiB fails the run.
# Seeds come from fuzz/corpus/<target>/ (read only); new inputs go to
# build-fuzz/corpus/<target>/, crashes to build-fuzz/artifacts/<target>/.
# Executions per target are printed and written to build-fuzz/fuzz-summary.json.
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
[ $# -gt 0 ] && shift
TARGETS=${*:-"fuzz_gguf fuzz_tokenizer fuzz_jinja fuzz_grammar fuzz_capi_request fuzz_service_request"}
DIR=build-fuzz
JOBS=${JOBS:-2}

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
# -Wno-pass-failed: instrumentation stops some `omp simd` loops from vectorizing (clang warns).
# -g1: line tables, all a crash report prints (scripts/sanitize.sh says why).
# PREPACK_CPU_LEVELS=native: the kernels of the baseline and this machine's
# level only, the ones the fuzzers run here (CI time; scripts/sanitize.sh).
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wno-pass-failed"
CC=clang CXX=clang++ cmake -S . -B "$DIR" -DCMAKE_BUILD_TYPE=Debug -DPREPACK_CUDA=OFF -DPREPACK_CPU_LEVELS=native \
  -DPREPACK_FUZZ=ON -DPREPACK_BUILD_TESTS=OFF -DPREPACK_BUILD_SERVICE=ON -DPREPACK_BUILD_BINDINGS=OFF \
  -DCMAKE_C_FLAGS="$SAN -O1 -g1" -DCMAKE_CXX_FLAGS="$SAN -O1 -g1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
for t in $TARGETS; do cmake --build "$DIR" -j "$JOBS" --target "$t"; done

# One OpenMP thread: the engine fuzzers run one request at a time, and two
# OpenMP runtimes are loaded (clang's libomp for our kernels, libgomp under
# oneDNN), which should not each spin a thread per core.
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

SUMMARY="$DIR/fuzz-summary.json"
status=0
entries=""
for t in $TARGETS; do
  work="$DIR/corpus/$t"
  art="$DIR/artifacts/$t/"
  log="$DIR/$t.log"
  mkdir -p "$work" "$art"
  dict=""
  [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
  echo "fuzz: $t for ${SECONDS_EACH}s" >&2
  rc=0
  # shellcheck disable=SC2086
  "$DIR/bin/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art" $dict "$work" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -n 1)
  rate=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log" | tail -n 1)
  corpus=$(find "$work" -type f | wc -l)
  result=ok
  # A sanitizer report that did not stop the run is a failure too.
  if [ "$rc" -ne 0 ] || grep -Eq 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
    result=failed
    status=1
    echo "fuzz: $t FAILED (exit $rc); log: $log, reproducer in $art" >&2
    grep -E -A30 'ERROR:|runtime error:|==[0-9]+==' "$log" | head -n 60 >&2 || true
  fi
  echo "fuzz: $t: ${execs:-0} executions (${rate:-0}/s), corpus $corpus, $result" >&2
  entries="$entries${entries:+,}
    \"$t\": {\"seconds\": $SECONDS_EACH, \"executions\": ${execs:-0}, \"exec_per_sec\": ${rate:-0}, \"corpus_files\": $corpus, \"result\": \"$result\"}"
done
printf '{\n  "targets": {%s\n  }\n}\n' "$entries" >"$SUMMARY"
cat "$SUMMARY"
exit $status
