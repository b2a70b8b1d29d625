#!/bin/sh
# Runs the OpenAI-API tests (pytest with the official `openai` client) in a
# virtual environment at VENV, made on first use with openai, pytest,
# prometheus-client (whose parser reads /metrics) and jsonschema (which
# validates structured output) from PyPI (the only place the official
# client comes from; scripts/pypi_venv.sh, which exits 77, ctest's
# "skipped", when it cannot make it). TEST_FILE defaults to
# test_openai_http.py.
#   run_pytest.sh VENV [TEST_FILE.py] [pytest args]
set -u
VENV=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
TEST_FILE=test_openai_http.py
case "${1:-}" in
  *.py) TEST_FILE=$1; shift ;;
esac
sh "$HERE/../../../scripts/pypi_venv.sh" "$VENV" "openai, pytest, prometheus_client, jsonschema" \
    "openai>=1.40,<4" "pytest>=7,<10" "prometheus-client>=0.16,<1" "jsonschema>=4.17,<5" || exit $?
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs "$HERE/$TEST_FILE" "$@"
