#!/bin/sh
# The Kubernetes deployment files (service/deploy/kubernetes/*.yaml)
# validated offline: every resource against the API's OpenAPI schema in
# strict mode (unknown fields rejected) by PyPI's kubernetes-validate, in
# the venv VENV (made on first use; exit 77 = skipped when it cannot be
# made), and the Envoy ConfigMap compared with a fresh render of
# envoy-local.yaml (render_config.py), so the two configs cannot drift.
# The ConfigMap's envoy.yaml itself goes through `envoy --mode validate` in
# validate_envoy_config.sh (ctest envoy_config_validate).
#   validate_kubernetes.sh VENV
set -u
VENV=$1
# The oldest release whose schema this checks against: Indexed Jobs'
# backoffLimitPerIndex is GA from 1.33 (beta, on by default, from 1.29).
K8S_VERSION=${PREPACK_K8S_VERSION:-1.33.0}
HERE=$(cd "$(dirname "$0")" && pwd)
DEPLOY=$(cd "$HERE/../../deploy" && pwd)
sh "$(cd "$HERE/../../.." && pwd)/scripts/pypi_venv.sh" "$VENV" "kubernetes_validate, yaml" \
    "kubernetes-validate>=1.28" || exit $?
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
files=$(ls "$DEPLOY"/kubernetes/*.yaml)
[ -n "$files" ] || { echo "FAILED: no manifests in $DEPLOY/kubernetes"; exit 1; }
for f in $files; do
  # One file at a time: its verdict, and its output only when it fails.
  if "$VENV/bin/kubernetes-validate" --strict --kubernetes-version "$K8S_VERSION" "$f" >"$TMP/out" 2>&1 \
      && grep -q "passed for resource" "$TMP/out" && ! grep -qE "^(ERROR|WARN)" "$TMP/out"; then
    echo "OK: $(basename "$f"): $(grep -o 'passed for resource [^ ]*' "$TMP/out" | cut -d' ' -f4 | tr '\n' ' ')(Kubernetes $K8S_VERSION, strict)"
  else
    echo "FAILED: $(basename "$f")"; cat "$TMP/out"; status=1
  fi
done
# The command in the ConfigMap's header, run again.
"$VENV/bin/python" "$DEPLOY/envoy/render_config.py" --dns \
    --upstreams prepackd-headless.default.svc.cluster.local:50051 \
    --listen 0.0.0.0:50050 --admin 0.0.0.0:9901 --configmap prepack-envoy >"$TMP/configmap.yaml" \
  && if diff -u "$DEPLOY/kubernetes/envoy-configmap.yaml" "$TMP/configmap.yaml" >"$TMP/diff"; then
       echo "OK: envoy-configmap.yaml is envoy-local.yaml rendered for the headless Service"
     else
       echo "FAILED: envoy-configmap.yaml differs from a fresh render (render it again; see its header):"
       cat "$TMP/diff"; status=1
     fi \
  || { echo "FAILED: render_config.py --configmap"; status=1; }
exit $status
