#!/bin/sh
# libprepack.so must export the C ABI and nothing else: every defined dynamic
# symbol starts with prepack_, and every function of prepack.h is there.
set -eu
lib=$1
header=$2
defined=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
extra=$(printf '%s\n' "$defined" | grep -v '^prepack_' || true)
fail=0
if [ -n "$extra" ]; then
  echo "symbols outside the prepack_ namespace are exported:"; echo "$extra"; fail=1
fi
declared=$(grep -o 'prepack_[a-z_]*(' "$header" | tr -d '(' | grep -v '_callback$' | sort -u)
for f in $declared; do
  if ! printf '%s\n' "$defined" | grep -qx "$f"; then echo "declared but not exported: $f"; fail=1; fi
done
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
case "$soname" in
  libprepack.so.[0-9]*) ;;
  *) echo "unexpected SONAME '$soname'"; fail=1 ;;
esac
n=$(printf '%s\n' "$declared" | wc -l)
if [ "$fail" -eq 0 ]; then echo "1 passed, 0 failed ($n functions exported, SONAME $soname)"; else echo "0 passed, 1 failed"; fi
exit $fail
