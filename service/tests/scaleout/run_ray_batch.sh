#!/bin/sh
# Runs the sharded batch on Ray test (test_ray_batch.py, pytest) from the
# venv VENV, made on first use with PyPI's ray and pytest
# (scripts/pypi_venv.sh: exit 77, skipped, when it cannot be made). ctest
# passes PREPACK_CLI and PREPACK_STORIES.
#   run_ray_batch.sh VENV [pytest args]
set -u
VENV=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
sh "$HERE/../../../scripts/pypi_venv.sh" "$VENV" "ray, ray.cluster_utils, pytest" \
    "ray>=2.10,<3" "pytest>=7,<10" || exit $?
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs "$HERE/test_ray_batch.py" "$@"
