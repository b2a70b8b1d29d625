#!/bin/sh
# Runs the OpenAI-API tests (test_openai_http.py, pytest with the official
# `openai` client) in a virtual environment at VENV, made on first use with
# openai, pytest and prometheus-client (whose parser reads /metrics) from
# PyPI (the only place the official client comes from; scripts/pypi_venv.sh,
# which exits 77, ctest's "skipped", when it cannot make it).
#   run_pytest.sh VENV [pytest args]
set -u
VENV=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
sh "$HERE/../../../scripts/pypi_venv.sh" "$VENV" "openai, pytest, prometheus_client" \
    "openai>=1.40,<4" "pytest>=7,<10" "prometheus-client>=0.16,<1" || exit $?
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs "$HERE/test_openai_http.py" "$@"
