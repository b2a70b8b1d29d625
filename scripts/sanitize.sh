#!/bin/sh
# Builds prepack with a sanitizer into its own tree and runs the tests there.
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer
#                              (build-asan/): the unit suites (ctest label
#                              `unit`): every C++ unit test, the C ABI tests
#                              and prepackd's own suites; not the end-to-end
#                              ones (CLI, load, HTTP, Envoy), run once in build/.
#   scripts/sanitize.sh tsan   ThreadSanitizer (build-tsan/): the engine and
#                              C ABI tests that run threads against each
#                              other (listed below); not the service.
# Extra arguments go to ctest (e.g. -R Engine). The compiler is the default
# one (g++ 12): its runtimes are the ones Debian's libgomp/oneDNN are built
# against, so nothing needs an LLVM OpenMP. SWIG bindings stay off: the JVM,
# Mono and Go runtimes cannot load an ASan/TSan library without preloading the
# runtime into them, which tests nothing of ours. CUDA stays off (no GPU here).
set -eu
cd "$(dirname "$0")/.."
MODE=${1:-}
[ $# -gt 0 ] && shift
ROOT=$(pwd)
JOBS=${JOBS:-2}

case "$MODE" in
  asan)
    DIR=build-asan
    # -fno-sanitize-recover: any UB report aborts the test, so ctest sees it.
    SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    SERVICE=ON
    ;;
  tsan)
    DIR=build-tsan
    SAN="-fsanitize=thread"
    # Off under TSan: Debian's gRPC and abseil are not built with TSan, and
    # their pollers, timers and allocations handed between threads flood
    # every prepackd test with reports TSan cannot attribute (tried: dozens
    # per test, all inside libgrpc/libabsl). A meaningful run needs gRPC
    # built from source with -fsanitize=thread, which is not a Debian package.
    SERVICE=OFF
    ;;
  *)
    echo "usage: $0 asan|tsan [ctest args]" >&2
    exit 2
    ;;
esac

# -O1: fast enough to run the suites, still precise stacks. The kernels and
# the core keep their own -O3 (their target options come later on the line).
# -g1: line tables only, what a sanitizer's stack trace prints (function,
# file, line); full -g made each object 2.7x larger and its compile ~15%
# slower, and these trees are most of CI's time.
# No CUDA emulator: its fibers switch stacks, which the sanitizers cannot follow.
# PREPACK_CPU_LEVELS=native: the kernels of the baseline and of this
# machine's level only, not all three (each level is ~105 s of compile under
# ASan, CI's largest cost). These trees check the memory and thread safety of
# the code this machine runs; the release build (scripts/test.sh) still
# compiles and tests every level.
cmake -S . -B "$DIR" -DCMAKE_BUILD_TYPE=Debug -DPREPACK_CUDA=OFF -DPREPACK_CUDA_EMULATION=OFF -DPREPACK_NATIVE=ON \
  -DPREPACK_CPU_LEVELS=native \
  -DPREPACK_BUILD_TESTS=ON -DPREPACK_BUILD_SERVICE=$SERVICE -DPREPACK_BUILD_BINDINGS=OFF \
  -DCMAKE_C_FLAGS="$SAN -O1 -g1" -DCMAKE_CXX_FLAGS="$SAN -O1 -g1" \
  -DCMAKE_EXE_LINKER_FLAGS="$SAN" -DCMAKE_SHARED_LINKER_FLAGS="$SAN" >/dev/null

if [ "$MODE" = asan ]; then
  # The unit suites only (CMakeLists.txt, prepack_unit_suite): the
  # end-to-end suites run once, in the main build.
  cmake --build "$DIR" -j "$JOBS" --target unit_tests
  # detect_leaks: LeakSanitizer fails any process that exits with leaks.
  # verify_asan_link_order=0: capi_install_and_examples links plain C
  # examples (not instrumented) against the instrumented libprepack.so.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  # The end-to-end suites (labelled e2e, or unlabelled scripts) are left
  # out: the CLI's, prepackd's load, soak, fairness and hostile-input runs,
  # the HTTP API's pytest, Envoy and Kubernetes. Their request paths run in
  # the unit suites here, prepackd's through prepackd_test and
  # prepackd_fault (a real server checked by LeakSanitizer at its exit);
  # under ASan they took most of CI's time (stop 42 ran past its 90 minutes).
  ctest --test-dir "$DIR" --output-on-failure -j "$JOBS" --timeout 900 -L unit "$@"
else
  # The concurrency tests: the engine's scheduler thread against client
  # threads (engine_test: batching, preemption, cancel, deadlines, shutdown,
  # policies; fault_engine_test: KV exhaustion with 32 clients, a 300-cancel
  # storm from 4 threads, 1 ms deadlines) and the C ABI from many threads
  # (capi_engine_test). The service is left out (see above), and so are the
  # single-request fault tests (a 2042-token prefill alone takes 4+ minutes
  # under TSan and has no second thread to race with), and the prompt
  # log-probability check, whose cost is a 300-step single-threaded
  # reference pass (its engine half runs in the ASan unit suites).
  TARGETS="engine_test fault_engine_test capi_engine_test"
  for t in $TARGETS; do cmake --build "$DIR" -j "$JOBS" --target "$t"; done
  # libgomp is not built with TSan: its barriers are invisible to it, so
  # data handed between OpenMP threads (weights built by two threads, read
  # by the engine thread) looks like a race, and checking those reports made
  # tests run for many minutes. PREPACK_MAX_THREADS=1 caps every
  # SetNumThreads() (the engine's and the tests' threads=2) at one OpenMP
  # thread, so no region has a second thread; tsan.supp covers libgomp's
  # and oneDNN's own bookkeeping. What this run checks is the engine's
  # cross-thread state: queues, streams, cancel flags, stats, KV tables.
  # (Not OMP_THREAD_LIMIT=1: oneDNN partitions its GEMM for the thread count
  # it asked for and silently skips work when OpenMP grants fewer.)
  export OMP_NUM_THREADS=1 PREPACK_MAX_THREADS=1
  export TSAN_OPTIONS="suppressions=$ROOT/scripts/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=4${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
  ctest --test-dir "$DIR" --output-on-failure -j "$JOBS" --timeout 900 \
    -R '^(Engine|EngineLazy|EnginePolicies|FaultEngine|capi_engine_test)' \
    -E 'FaultEngine\.(HugeMaxTokens|StopStrings|NonFinite)|EnginePolicies\.PromptLogprobsEqualTheReferencePass' "$@"
fi
