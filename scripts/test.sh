#!/bin/sh
# Builds prepack and runs every test (ctest). Tests that need ../shared/models,
# build/models (scripts/get_models.sh, which this script never runs: it needs
# the network) or a GPU skip themselves with a message when those are absent.
set -eu
cd "$(dirname "$0")/.."
./scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j 2
