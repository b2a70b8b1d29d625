#!/bin/sh
# Makes the tokenizer vocabularies the tests compare with their makers' own
# encoders but that no model file in the repo carries: today Mistral Nemo's
# tekken vocabulary, build/models/vocab-tekken-240911.gguf, written from the
# tekken_240911.json that PyPI's mistral-common ships, the way llama.cpp's
# converter writes it (scripts/make_tekken_vocab.py). Everything comes from
# PyPI (mistral-common, gguf) into a virtual environment under build/; a
# file already there is kept. Takes about a minute with a fresh venv (pip),
# ten seconds after. tests/tokenizer_tekken_test.cc skips while it is absent.
# Usage: scripts/get_vocabs.sh [OUT_DIR]   (default build/models)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-build/models}
DEST=$OUT/vocab-tekken-240911.gguf
VENV=${PREPACK_VOCAB_VENV:-build/venv-vocabs}

if [ -f "$DEST" ]; then
  echo "get_vocabs: $DEST is present"
  exit 0
fi
sh scripts/pypi_venv.sh "$VENV" "mistral_common, gguf" "mistral-common>=1.5" "gguf>=0.17" || exit $?
"$VENV/bin/python" scripts/make_tekken_vocab.py --out "$DEST"
