#!/usr/bin/env bash
# Before/after proxy CPU per request of two httpdns-proxy binaries, measured in ONE run
# (the rule for changes on the request path). Loopback only; every load bounded in time;
# everything started is stopped on exit. Not run by CI.
#
# Build the two binaries from clean snapshots first, e.g. (one Swift build at a time):
#   mkdir -p .build-ab/base-src .build-ab/head-src
#   git archive BASE_REV | tar -x -C .build-ab/base-src; git rev-parse BASE_REV > .build-ab/base-src/.ab-rev
#   git archive HEAD     | tar -x -C .build-ab/head-src; git rev-parse HEAD     > .build-ab/head-src/.ab-rev
#   (cd .build-ab/base-src && flock /tmp/swiftbuild.lock swift build -c release --product httpdns-proxy)
#   (cd .build-ab/head-src && flock /tmp/swiftbuild.lock swift build -c release --product httpdns-proxy)
# then:
#   bench/ab.sh --base-bin .build-ab/base-src/.build/release/httpdns-proxy \
#               --head-bin .build-ab/head-src/.build/release/httpdns-proxy
#
# One binary, two flag sets (e.g. the CPU cost of a feature switched on):
#   bench/ab.sh --base-bin .build/release/httpdns-proxy --head-bin .build/release/httpdns-proxy \
#               --head-args "--proxy-auth user:pass" --proxy-user user:pass --no-access-log
set -euo pipefail

usage() {
  cat <<'EOF2'
usage: bench/ab.sh --base-bin PATH --head-bin PATH [options]

  --base-bin PATH       the "before" httpdns-proxy binary
  --head-bin PATH       the "after" httpdns-proxy binary (may be the same path as --base-bin
                        when --base-args / --head-args make the difference)
  --base-args "ARGS"    extra proxy arguments for base, as shell words; appended after the
                        harness's own flags, so a flag given again overrides (last one wins)
  --head-args "ARGS"    the same for head
  --proxy-user U:P      every request to a proxy (wrk, the sanity curls, the hostile heads)
                        carries Proxy-Authorization: Basic base64(U:P), on both sides; a proxy
                        without authentication strips it. The password is not written to
                        the results.
  --rounds N            wrk rounds; medians are reported (default 3)
  --duration S          length of each wrk run, seconds (default 10)
  --no-access-log       skip the base/head rows with the access log on (stdout -> /dev/null);
                        use it when --base-args/--head-args set --access-log themselves
  --no-64k              skip the 64 KiB keep-alive rows
  --hostile-reps N      hostile heads per binary and variant (default 20)
  --hostile-rounds N    rounds of hostile heads, medians reported (default 3)
  --out DIR             output directory (default bench/out): ab-results.md, ab-results.json,
                        server logs in DIR/ab-logs/
  --max-seconds N       hard limit for the whole run (default 900)
  -h, --help            this text

Keep-alive: wrk -t2 -c64 (bench/absolute.lua) of 1 KiB (and 64 KiB) through each proxy and
direct to nginx; base and head alternate, the one that goes first rotates each round.
Proxy CPU per request = utime+stime delta of the proxy's process tree / requests.
Hostile heads: ~65 KB request heads (14,000-token Connection field + 4,600 short fields,
and 250-field variants) over raw loopback sockets; proxy CPU seconds per head.
The default run (3 rounds of 10 s) takes about 5 minutes.
EOF2
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT=$(pwd)

BASE_BIN=
HEAD_BIN=
ROUNDS=3
DURATION=10
EXTRA=()
BASE_ARGS=
HEAD_ARGS=
PROXY_USER=
HOSTILE_REPS=20
HOSTILE_ROUNDS=3
OUT=bench/out
MAX_SECONDS=900
# the command as typed, for the results (arguments with spaces in single quotes)
COMMAND=bench/ab.sh
for a in "$@"; do
  if [[ "$a" =~ [[:space:]] || -z "$a" ]]; then COMMAND+=" '$a'"; else COMMAND+=" $a"; fi
done

die() { echo "bench/ab.sh: $*" >&2; exit 2; }
# shellcheck source=bench/lib.sh
source bench/lib.sh  # the script runs from the repository root (cd above)
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --base-bin) need_value "$@"; BASE_BIN=$2; shift 2 ;;
    --head-bin) need_value "$@"; HEAD_BIN=$2; shift 2 ;;
    --rounds) need_value "$@"; ROUNDS=$2; shift 2 ;;
    --duration) need_value "$@"; DURATION=$2; shift 2 ;;
    --base-args) [ $# -ge 2 ] || die "$1 needs a value"; BASE_ARGS=$2; shift 2 ;;
    --head-args) [ $# -ge 2 ] || die "$1 needs a value"; HEAD_ARGS=$2; shift 2 ;;
    --proxy-user) need_value "$@"; PROXY_USER=$2; shift 2 ;;
    --no-access-log) EXTRA+=(--no-access-log); shift ;;
    --no-64k) EXTRA+=(--no-with-64k); shift ;;
    --hostile-reps) need_value "$@"; HOSTILE_REPS=$2; shift 2 ;;
    --hostile-rounds) need_value "$@"; HOSTILE_ROUNDS=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --max-seconds) need_value "$@"; MAX_SECONDS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
done

[ -n "$BASE_BIN" ] && [ -n "$HEAD_BIN" ] || { usage >&2; die "--base-bin and --head-bin are required"; }
for b in "$BASE_BIN" "$HEAD_BIN"; do [ -x "$b" ] || die "not an executable: $b"; done
if [ "$BASE_BIN" -ef "$HEAD_BIN" ] && [ "$BASE_ARGS" = "$HEAD_ARGS" ]; then
  die "base and head are the same binary with the same arguments: nothing to compare (--base-args/--head-args)"
fi
[[ -z "$PROXY_USER" || "$PROXY_USER" == *:* ]] || die "--proxy-user must be USER:PASS"
python3 -c 'import shlex, sys; [shlex.split(a) for a in sys.argv[1:]]' "$BASE_ARGS" "$HEAD_ARGS" 2>/dev/null \
  || die "--base-args/--head-args: unbalanced quotes"
for n in "$ROUNDS" "$DURATION" "$HOSTILE_REPS" "$HOSTILE_ROUNDS" "$MAX_SECONDS"; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || die "not a positive number: $n"
done
[ "$DURATION" -ge 2 ] && [ "$DURATION" -le 120 ] || die "--duration must be 2..120 seconds"
[ "$ROUNDS" -le 10 ] || die "--rounds must be 1..10"
[ "$HOSTILE_REPS" -le 1000 ] && [ "$HOSTILE_ROUNDS" -le 10 ] || die "--hostile-reps ≤ 1000, --hostile-rounds ≤ 10"
[ "$(uname -s)" = Linux ] || die "Linux only (reads /proc)"

# ---------------------------------------------------------------- tools (as bench/run.sh)
bench_require_tools nginx -- nginx wrk curl python3

HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] && HARD=65536
ulimit -n "$HARD" || die "could not raise the open-file limit to $HARD"

# ---------------------------------------------------------------- run, and always clean up
WORKDIR=$(mktemp -d -t httpdns-ab.XXXXXX)
RUNNER_PID=

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$RUNNER_PID" ] && kill -0 "$RUNNER_PID" 2>/dev/null; then
    kill -TERM "$RUNNER_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$RUNNER_PID" 2>/dev/null || break; sleep 1; done
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
timeout -s TERM -k 30 "$MAX_SECONDS" python3 bench/ab.py \
  --workdir "$WORKDIR" --out "$OUT" --base-bin "$BASE_BIN" --head-bin "$HEAD_BIN" \
  --rounds "$ROUNDS" --duration "$DURATION" --hostile-reps "$HOSTILE_REPS" \
  --hostile-rounds "$HOSTILE_ROUNDS" --command "$COMMAND" \
  --base-args "$BASE_ARGS" --head-args "$HEAD_ARGS" --proxy-user "$PROXY_USER" \
  ${EXTRA[@]+"${EXTRA[@]}"} &
RUNNER_PID=$!
wait "$RUNNER_PID"
