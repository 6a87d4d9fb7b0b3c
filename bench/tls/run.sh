#!/usr/bin/env bash
# TLS origination benchmark (issue 5): builds the release proxy into .build-tls (unless
# --proxy-bin is given) and runs bench/tls/tls_bench.py. Loopback only; about 40 seconds.
# Needs nginx, wrk and openssl. Arguments go to tls_bench.py (see --help).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [[ " $* " != *" --proxy-bin "* ]]; then
  swift build -c release --scratch-path .build-tls --product httpdns-proxy >&2
fi
exec python3 bench/tls/tls_bench.py "$@"
