#!/usr/bin/env bash
# Steady yardsticks for the forward path: CPU per 1 KiB request on one kept-alive connection with
# origin, proxy and client pinned to one core (alternating targets, read from the proxy's CPU
# clock), and system calls per request under strace, for one or two httpdns-proxy binaries beside
# nginx as a keep-alive proxy. Loopback only; every load bounded in time; not run by CI.
#   bench/pinned.sh --bin head=.build/release/httpdns-proxy
#   bench/pinned.sh --bin base=/path/to/old --bin head=.build/release/httpdns-proxy --rounds 5
#   bench/pinned.sh --bin head=.build/release/httpdns-proxy --floor .build/release/nio-floor
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
die() { echo "bench/pinned.sh: $*" >&2; exit 1; }
. bench/lib.sh
bench_require_tools nginx -- nginx wrk strace
command -v taskset >/dev/null 2>&1 || die "taskset is missing: apt-get install -y util-linux"
exec python3 bench/pinned.py "$@"
