#!/bin/sh
# Writes the F32 real-shape models that tests/realshape_test.cc compares with
# llama.cpp (../shared/models/realshape/README.md): runs
# ../shared/tools/make_realshape_models.py in a virtual environment with
# PyPI's numpy and gguf 0.19.0 (the version the reference checksums were
# made with), then checks every file against reference-f32.sha256.
# Also writes llama-spm-gqa-fallback-{types,decoded}.gguf from llama-spm-gqa.gguf
# (scripts/make_fallback_quant_models.py: the Q4_1/Q5_0/Q5_1 blocks that
# K-quant files fall back to, and the same weights decoded by gguf-py).
# Usage: scripts/make_realshape_f32.sh [OUT_DIR]   (default build/realshape-f32)
# About 1.2 GB on disk, a minute or two. Files already there and correct are kept.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-build/realshape-f32}
SHARED=../shared
REF=$SHARED/models/realshape/reference-f32.sha256
if [ ! -f "$REF" ] || [ ! -f $SHARED/tools/make_realshape_models.py ]; then
  echo "make_realshape_f32: $REF or $SHARED/tools/make_realshape_models.py is absent; nothing to make" >&2
  exit 0
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REF_ABS=$(cd "$(dirname "$REF")" && pwd)/$(basename "$REF")
VENV=${REALSHAPE_VENV:-build/realshape-venv}
venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check numpy gguf==0.19.0
  fi
}
if (cd "$OUT" && sha256sum --quiet -c "$REF_ABS") >/dev/null 2>&1; then
  echo "make_realshape_f32: $OUT is complete"
else
  venv
  NAMES=$(awk '{print $2}' "$REF" | sed 's/\.gguf$//' | paste -sd, -)
  echo "make_realshape_f32: writing $NAMES into $OUT"
  "$VENV/bin/python" $SHARED/tools/make_realshape_models.py --vocab-dir $SHARED/models/vocab --out-dir "$OUT" --only "$NAMES"
  (cd "$OUT" && sha256sum --quiet -c "$REF_ABS")
  echo "make_realshape_f32: $OUT verified against $REF"
fi
if [ ! -f "$OUT/llama-spm-gqa-fallback-decoded.gguf" ]; then
  venv
  echo "make_realshape_f32: writing llama-spm-gqa-fallback-{types,decoded}.gguf into $OUT"
  "$VENV/bin/python" scripts/make_fallback_quant_models.py "$OUT/llama-spm-gqa.gguf" \
    "$OUT/llama-spm-gqa-fallback-types.gguf" "$OUT/llama-spm-gqa-fallback-decoded.gguf"
fi
