#!/usr/bin/env bash
# Lints the deployment files (no Docker engine or cluster needed): hadolint on the Dockerfile,
# the compose file (and its commented shared-network variant) against the compose-spec schema, the
# systemd unit with systemd-analyze (verify, and its security exposure),
# the Kubernetes manifests against the Kubernetes API schemas, the ServiceMonitor (a CRD the
# Kubernetes schemas do not have) against the schema in scripts/schemas/, the example Prometheus
# alert rules with promtool, and scripts/check-deploy-examples.py (the example credentials pass the
# proxy's start-up checks, every HTTPDNS_PROXY_* variable is documented, the sidecar's admin
# listener stays on loopback). Run by scripts/test.sh; the tools come from
# scripts/ensure-deps.sh --with-test-tools.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== hadolint docker/Dockerfile"
hadolint docker/Dockerfile && echo "ok -- no findings"

echo "== docker/.dockerignore and docker/Dockerfile.dockerignore"
# BuildKit reads the one beside the Dockerfile; the other is where people look for it.
cmp docker/.dockerignore docker/Dockerfile.dockerignore && echo "ok -- identical"

echo "== compose-spec schema: docker/compose.yaml"
check-jsonschema --builtin-schema vendor.compose-spec docker/compose.yaml
variant="$(mktemp --suffix=.yaml)"
trap 'rm -f "$variant"' EXIT
sed -n '/^# services:$/,$p' docker/compose.yaml | sed -E 's/^# ?//' >"$variant"
[ -s "$variant" ] || { echo "the commented shared-network variant is missing from docker/compose.yaml"; exit 1; }
echo "== compose-spec schema: the commented shared-network variant in docker/compose.yaml"
check-jsonschema --builtin-schema vendor.compose-spec "$variant"

echo "== compose-spec schema: docker/compose.transparent.yaml"
check-jsonschema --builtin-schema vendor.compose-spec docker/compose.transparent.yaml

echo "== kubernetes-validate --strict deploy/kubernetes/*.yaml"
kubernetes-validate --strict deploy/kubernetes/*.yaml

echo "== check-jsonschema deploy/prometheus/servicemonitor.yaml (a CRD: against scripts/schemas/servicemonitor.schema.json)"
check-jsonschema --check-metaschema scripts/schemas/servicemonitor.schema.json
check-jsonschema --schemafile scripts/schemas/servicemonitor.schema.json deploy/prometheus/servicemonitor.yaml

echo "== promtool check rules deploy/prometheus/httpdns-proxy-alerts.yaml"
promtool check rules deploy/prometheus/httpdns-proxy-alerts.yaml

echo "== scripts/check-deploy-examples.py"
# PyYAML is a dependency of kubernetes-validate: use the interpreter that runs it.
python="$(sed -n '1s/^#![[:space:]]*//p' "$(command -v kubernetes-validate)")"
case "$python" in
  */env\ *|"") python=python3 ;;
esac
"$python" scripts/check-deploy-examples.py

echo "== systemd-analyze verify deploy/systemd/httpdns-proxy.service"
# verify checks that ExecStart's binary exists: a copy with /bin/true in its place is verified.
# It reports unknown keys and bad values as warnings with exit 0, so any output is a failure.
unit_dir="$(mktemp -d)"
trap 'rm -f "$variant"; rm -rf "$unit_dir"' EXIT
sed 's|/usr/local/bin/httpdns-proxy|/bin/true|g' deploy/systemd/httpdns-proxy.service >"$unit_dir/httpdns-proxy.service"
verify_out="$(systemd-analyze verify "$unit_dir/httpdns-proxy.service" 2>&1)" || { echo "$verify_out"; exit 1; }
[ -z "$verify_out" ] || { echo "$verify_out"; exit 1; }
# The hardening, as systemd scores it (0 = fully sandboxed, 10 = none; --threshold counts tenths): the unit scores 1.6, at most 2.0 passes.
systemd-analyze security --offline=true --threshold=20 "$unit_dir/httpdns-proxy.service" >/dev/null \
  || { systemd-analyze security --offline=true "$unit_dir/httpdns-proxy.service" | tail -20; exit 1; }
echo "ok -- no findings, exposure $(systemd-analyze security --offline=true "$unit_dir/httpdns-proxy.service" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')"
