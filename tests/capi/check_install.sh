#!/bin/sh
# Installs prepack into a scratch prefix and uses it as users would:
#  - the installed programs run from the prefix without LD_LIBRARY_PATH
#    (install RPATH $ORIGIN/../lib);
#  - the installed ELF files hold nothing above x86-64-v2 outside the
#    dispatched kernels (scripts/check_isa.py), so they run on any such CPU;
#  - the C examples build against the installed package with pkg-config and
#    with CMake's find_package(prepack), and run on a synthetic model;
#  - one example runs under valgrind's memcheck with 0 errors (skipped, with
#    a message, where valgrind is not installed or the build is sanitized).
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "0 passed, 1 failed"; exit 1; }
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -n1)

for exe in prepack prepackd; do
  [ -x "$tmp/prefix/bin/$exe" ] || { [ "$exe" = prepackd ] && continue; fail "bin/$exe was not installed"; }
  env -u LD_LIBRARY_PATH "$tmp/prefix/bin/$exe" --help >"$tmp/help.txt" 2>&1 ||
    { cat "$tmp/help.txt"; fail "the installed $exe --help failed"; }
  echo "ok   installed $exe --help runs"
done

if [ -z "${PREPACK_NATIVE_BUILD:-}" ]; then
  elves=$(find "$tmp/prefix" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
  python3 "$src/scripts/check_isa.py" $elves || fail "an installed file uses instructions above the baseline"
fi

export PKG_CONFIG_PATH="$libdir/pkgconfig"
for ex in stream batch chat; do
  cc -std=c11 -Wall -Wextra -Werror -pedantic "$src/examples/c/$ex.c" $(pkg-config --cflags --libs prepack) \
     -Wl,-rpath,"$libdir" -o "$tmp/$ex"
done
cmake -S "$src/examples/c" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
out=$(LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/stream" synthetic:tiny "hello")
case "$out" in *"generated tokens"*) ;; *) fail "stream example printed: $out" ;; esac
"$tmp/batch" synthetic:tiny >/dev/null 2>&1 || fail "batch example failed"
# The chat example on the fetched chat model (scripts/get_models.sh), when it is there.
chat_model="$src/build/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ -f "$chat_model" ]; then
  out=$(LD_LIBRARY_PATH="$libdir" "$tmp/chat" "$chat_model" "What is the capital of France?")
  case "$out" in *Paris*) ;; *) fail "chat example printed: $out" ;; esac
fi
echo "ok   pkg-config and find_package builds of the examples ran"

if [ -n "${PREPACK_SANITIZED_BUILD:-}" ]; then
  echo "note: sanitizer build; the valgrind run was skipped (valgrind cannot run ASan/TSan code)"
elif command -v valgrind >/dev/null 2>&1; then
  # One thread: memcheck serialises threads anyway, and a small model keeps
  # the run to seconds. --error-exitcode makes any error fail the check.
  OMP_NUM_THREADS=1 valgrind --error-exitcode=3 --quiet "$tmp/stream" synthetic:tiny "hi" >"$tmp/vg.txt" 2>&1 ||
    { tail -40 "$tmp/vg.txt"; fail "valgrind found errors running the installed library"; }
  echo "ok   valgrind: 0 errors running the stream example against the installed library"
else
  echo "note: valgrind not installed; the memcheck run was skipped"
fi
echo "1 passed, 0 failed"
