#!/usr/bin/env bash
# Soak test: proves the proxy leaks neither memory nor descriptors under a long, mixed and
# hostile load (issue: "Soak, in bench/soak.sh (not CI)"). Loopback only; the load is bounded
# in count and time; everything started is stopped on exit. Not run by CI.
# Results: OUT/soak-results.md (the table for docs/reliability.md), soak-results.json,
# soak-samples.csv (RSS and descriptors every second), soak.png (the plot), soak-logs/.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/soak.sh --bin PATH [options]

  --bin PATH             the httpdns-proxy binary (default: .build/release/httpdns-proxy;
                         build it first: swift build -c release --product httpdns-proxy)
  --requests N           HTTP requests in the load phase, at least (default 1000000)
  --tunnels N            CONNECT tunnels opened and closed in the load phase (default 20000)
  --round-seconds S      longest wrk round; rounds repeat until --requests (default 60)
  --max-seconds N        hard limit for the whole run (default 5400)
  --proxy-args "ARGS"    extra proxy arguments (appended, so they override the soak's own)
  --proxy-user USER:PASS send Proxy-Authorization: Basic with every request and CONNECT
  --docs                 also copy the plot to docs/img/soak-YYYYMMDD-HHMM.png (and link it from
                         OUT/soak-results.md)
  --out DIR              output directory (default bench/out)
  -h, --help             this text

A short run for development: bench/soak.sh --requests 20000 --tunnels 500 (about 1 minute).
The full run (1,000,000 requests, 20,000 tunnels) takes about 5 minutes on 2 cores (about
4,000 requests/s with everything on the same cores); 3,000,000 about 14.

What runs, all at once, while the fake HTTPDNS service is stopped and restarted every few
seconds (names cached with --max-ttl 2s, so refreshes keep hitting it):
  wrk (bench/soak.lua), one process per mix: keep-alive GETs (1/16/64 KiB), one request per
  connection, keep-alive POSTs with 1/4/64 KiB bodies, origins that close after every response
  or after 5 requests / 2 s idle, and an origin that resets before answering (502 expected);
  bench/soak_peers.py: slow readers (4 KiB receive buffer, 1 MiB bodies), clients that vanish
  mid-response or mid-request, an origin that resets mid-body, POSTs to the resetting origin,
  and the CONNECT tunnels (echo, then closed by the client, by a reset, by the origin, or by a
  half-close).
Pass: zero unexpected client-visible errors, and after the load (drained, idle) RSS at most
10 % above the baseline (idle after a warm-up) and descriptors within 16 of it. Exit 0 on
pass, 1 on fail or an incomplete run, 2 on a usage or setup error.
EOF
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN=.build/release/httpdns-proxy
REQUESTS=1000000
TUNNELS=20000
ROUND_SECONDS=60
MAX_SECONDS=5400
PROXY_ARGS=
PROXY_USER=
DOCS=0
OUT=bench/out
COMMAND="bench/soak.sh $*"

die() { echo "bench/soak.sh: $*" >&2; exit 2; }
# shellcheck source=bench/lib.sh
source bench/lib.sh  # the script runs from the repository root (cd above)
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --bin) need_value "$@"; BIN=$2; shift 2 ;;
    --requests) need_value "$@"; REQUESTS=$2; shift 2 ;;
    --tunnels) need_value "$@"; TUNNELS=$2; shift 2 ;;
    --round-seconds) need_value "$@"; ROUND_SECONDS=$2; shift 2 ;;
    --max-seconds) need_value "$@"; MAX_SECONDS=$2; shift 2 ;;
    --proxy-args) [ $# -ge 2 ] || die "$1 needs a value"; PROXY_ARGS=$2; shift 2 ;;
    --proxy-user) need_value "$@"; PROXY_USER=$2; shift 2 ;;
    --docs) DOCS=1; shift ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
done

for n in "$REQUESTS" "$TUNNELS" "$ROUND_SECONDS" "$MAX_SECONDS"; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || die "not a positive number: $n"
done
[ "$REQUESTS" -le 100000000 ] || die "--requests: at most 100000000"
[ "$TUNNELS" -le 1000000 ] || die "--tunnels: at most 1000000"
[ "$ROUND_SECONDS" -ge 3 ] && [ "$ROUND_SECONDS" -le 600 ] || die "--round-seconds must be 3..600"
[ "$MAX_SECONDS" -ge 120 ] || die "--max-seconds must be at least 120"
[[ -z "$PROXY_USER" || "$PROXY_USER" == *:* ]] || die "--proxy-user must be USER:PASS"
[ "$(uname -s)" = Linux ] || die "Linux only (reads /proc)"
[ -x "$BIN" ] || die "no proxy binary at $BIN: build one (swift build -c release --product httpdns-proxy) or pass --bin PATH"

# ---------------------------------------------------------------- tools (as bench/run.sh)
bench_require_tools nginx -- nginx wrk curl python3
# the plot: matplotlib from PyPI
if ! python3 -c 'import matplotlib' >/dev/null 2>&1; then
  echo "bench/soak.sh: installing matplotlib (python3 -m pip install matplotlib)" >&2
  python3 -m pip install --quiet matplotlib >&2 \
    || die "could not install matplotlib; install it with: python3 -m pip install matplotlib"
fi

HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] && HARD=65536
ulimit -n "$HARD" || die "could not raise the open-file limit to $HARD"
[ "$HARD" -ge 4096 ] || die "open-file hard limit is $HARD; the soak needs at least 4096"

DOCS_PNG=
if [ "$DOCS" = 1 ]; then
  DOCS_PNG=docs/img/soak-$(date -u +%Y%m%d-%H%M).png
fi

# ---------------------------------------------------------------- run, and always clean up
WORKDIR=$(mktemp -d -t httpdns-soak.XXXXXX)
RUNNER_PID=

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$RUNNER_PID" ] && kill -0 "$RUNNER_PID" 2>/dev/null; then
    kill -TERM "$RUNNER_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do kill -0 "$RUNNER_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL "$RUNNER_PID" 2>/dev/null || true
  fi
  bench_kill_groups "$WORKDIR/pids"
  rm -rf "$WORKDIR"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$OUT"
# the load phase gets what is left of --max-seconds after start-up, warm-up and the drain
MAX_LOAD=$(( MAX_SECONDS - 420 ))
[ "$MAX_LOAD" -ge 60 ] || MAX_LOAD=60
timeout -s TERM -k 30 "$MAX_SECONDS" python3 bench/soak.py \
  --workdir "$WORKDIR" --out "$OUT" --bin "$BIN" --requests "$REQUESTS" --tunnels "$TUNNELS" \
  --round-seconds "$ROUND_SECONDS" --max-load-seconds "$MAX_LOAD" \
  --proxy-args "$PROXY_ARGS" --proxy-user "$PROXY_USER" --docs-png "$DOCS_PNG" \
  --command "$COMMAND" &
RUNNER_PID=$!
wait "$RUNNER_PID"
