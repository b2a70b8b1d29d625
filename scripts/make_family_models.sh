#!/bin/sh
# Writes the random-weight real-shape files of the families of issue 48
# (gemma, gemma2, gemma3, granite, phi3, phi3-short) that
# tests/family_realshape_test.cc compares with llama.cpp
# (tests/data/families/reference.json): runs scripts/make_family_models.py
# in a virtual environment with PyPI's numpy and gguf 0.19.0 (the version the
# checksums were made with; the venv of scripts/make_realshape_f32.sh is
# reused), then checks every file against tests/data/families/models.sha256.
# Usage: scripts/make_family_models.sh [OUT_DIR]
#   (default $PREPACK_FAMILY_DIR, else build/family-models)
# About 390 MB on disk, ~15 s on 2 cores. Files already there and correct are kept.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-${PREPACK_FAMILY_DIR:-build/family-models}}
SUMS=tests/data/families/models.sha256
VOCAB=../shared/models/vocab
if [ ! -d "$VOCAB" ]; then
  echo "make_family_models: $VOCAB is absent; nothing to make" >&2
  exit 0
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMS_ABS=$(pwd)/$SUMS
if (cd "$OUT" && sha256sum --quiet -c "$SUMS_ABS") >/dev/null 2>&1; then
  echo "make_family_models: $OUT is complete"
  exit 0
fi
VENV=${REALSHAPE_VENV:-build/realshape-venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check numpy gguf==0.19.0
fi
# Only the files missing or wrong are written again.
NAMES=$(cd "$OUT" && sha256sum -c "$SUMS_ABS" 2>/dev/null | awk -F': ' '$2 != "OK" {print $1}' | sed 's/\.gguf$//' | paste -sd, -)
echo "make_family_models: writing $NAMES into $OUT"
"$VENV/bin/python" scripts/make_family_models.py --vocab-dir "$VOCAB" --out-dir "$OUT" --only "$NAMES" >/dev/null
(cd "$OUT" && sha256sum --quiet -c "$SUMS_ABS")
echo "make_family_models: $OUT verified against $SUMS"
