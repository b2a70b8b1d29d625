#!/bin/sh
# Runs the OpenAI-API tests (test_openai_http.py, pytest with the official
# `openai` client) in a virtual environment at VENV, made on first use with
# openai and pytest from PyPI (the only place the official client comes
# from). Exits 77, which ctest reports as skipped (SKIP_RETURN_CODE), when
# the environment cannot be made: no python3-venv, or no network to PyPI.
#   run_pytest.sh VENV [pytest args]
set -u
VENV=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)

ready() { "$VENV/bin/python" -c 'import openai, pytest' >/dev/null 2>&1; }

if ! ready; then
  mkdir -p "$(dirname "$VENV")"
  (
    # One maker at a time (two build trees may run this suite at once).
    flock 9
    if ! ready; then
      rm -rf "$VENV"
      python3 -m venv "$VENV" >/dev/null 2>&1 || {
        echo "SKIP: python3 -m venv failed (Debian: apt-get install python3-venv)"; exit 77; }
      "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 30 \
          "openai>=1.40,<4" "pytest>=7,<10" || {
        rm -rf "$VENV"
        echo "SKIP: cannot install openai and pytest from PyPI into $VENV (offline?)"; exit 77; }
    fi
  ) 9>"$VENV.lock" || exit $?
fi
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs "$HERE/test_openai_http.py" "$@"
