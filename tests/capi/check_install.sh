#!/bin/sh
# Installs prepack into a scratch prefix and builds the C examples against
# the installed package twice, as users would: with pkg-config and with
# CMake's find_package(prepack). Then runs both on a synthetic model.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -n1)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
for ex in stream batch; do
  cc -std=c11 -Wall -Wextra -Werror -pedantic "$src/examples/c/$ex.c" $(pkg-config --cflags --libs prepack) \
     -Wl,-rpath,"$libdir" -o "$tmp/$ex"
done
cmake -S "$src/examples/c" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
out=$(LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/stream" synthetic:tiny "hello")
case "$out" in *"generated tokens"*) ;; *) echo "stream example printed: $out"; echo "0 passed, 1 failed"; exit 1 ;; esac
"$tmp/batch" synthetic:tiny >/dev/null 2>&1 || { echo "batch example failed"; echo "0 passed, 1 failed"; exit 1; }
echo "1 passed, 0 failed (pkg-config and find_package builds of the examples ran)"
