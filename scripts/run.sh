#!/usr/bin/env bash
# Builds httpdns-proxy (release) and runs it. Arguments go to the proxy, e.g.
#   ./scripts/run.sh --provider system --listen 127.0.0.1:8080
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
swift build -c release --product httpdns-proxy >&2
exec .build/release/httpdns-proxy "$@"
