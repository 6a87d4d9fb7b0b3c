#!/usr/bin/env bash
# Benchmark httpdns-proxy against a direct connection, tinyproxy, squid and nginx as a
# keep-alive proxy (issues 6 and 16).
# Loopback only; every load is bounded in time and count; everything started is stopped on
# exit. Not run by CI. Results: a markdown table on stdout, bench/out/results.json and
# bench/out/results.md; server logs in bench/out/logs/. See docs/benchmarks.md.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/run.sh [options]

  --scenarios LIST        comma-separated: keepalive,light,tunnel,idle,resolver,footprint
                          (default: all six)
                            keepalive  wrk -t2 -c64 absolute-form GET of 1 KiB and 64 KiB
                            light      wrk -t1 -c1 GET of 1 KiB (latency one app pays)
                            tunnel     curl -p -x: 1 GiB through a CONNECT tunnel
                            idle       RSS growth with N idle CONNECT tunnels
                            resolver   cached resolve ns/lookup and cold resolve through a
                                       fake HTTPDNS service (Benchmarks/ResolverBench)
                            footprint  RSS of httpdns-proxy and nginx-proxy fresh, after the
                                       1 KiB keep-alive load and after an idle minute;
                                       binary size as built and stripped
                          optional (not in the default set):
                            ceiling    1 GiB through minimal relays (bench/relay.py: 64 KiB
                                       and 1 MiB read/write, splice) next to direct and
                                       httpdns-proxy: what the tunnel path could reach
                            pinned     CPU per 1 KiB request on one kept-alive connection,
                                       origin, proxy and client pinned to one core, and
                                       system calls per request (strace), httpdns-proxy
                                       beside nginx-proxy (bench/pinned.py; with
                                       --before-bin that binary too; floors and
                                       allocation counts: bench/pinned.sh)
  --targets LIST          comma-separated: direct,tinyproxy,squid,nginx-proxy,httpdns-proxy
                          (default: all). nginx-proxy is nginx with 2 workers and an upstream
                          keep-alive pool: the anchor for HTTP figures (it has no CONNECT, so
                          tunnel and idle leave it out)
  --duration SECONDS      length of each wrk run (default 10)
  --rounds N              wrk rounds over all targets; medians are reported (default 3:
                          the median of 3 sets one disturbed run aside)
  --tunnels N             idle tunnels for squid and httpdns-proxy (default 9000)
  --tinyproxy-tunnels N   idle tunnels for tinyproxy (default 9000)
  --tunnel-runs N         1 GiB downloads per target, the median is reported (default 5)
  --access-log on|off     httpdns-proxy's access log, to a file (default on: how users run it;
                          the reference proxies run with theirs off)
  --idle-seconds N        idle time in the footprint scenario (default 60)
  --profile               also record a perf profile of httpdns-proxy (1 KiB keep-alive and
                          a 1 GiB tunnel); reports in bench/out/perf-*.txt
  --proxy-bin PATH        use this httpdns-proxy binary instead of building one
  --before-bin PATH       also measure this httpdns-proxy binary (the "before" of a change) as
                          target httpdns-proxy-before, in the same rounds as httpdns-proxy
                          (keepalive, light, tunnel, idle) and in the pinned scenario beside
                          it; footprint, resolver, ceiling and --profile measure only the
                          httpdns-proxy binary
  --rev REV               build a clean snapshot of git revision REV (git archive into
                          .build-bench/src) instead of the working tree, e.g. --rev HEAD
  --no-build              use the binary from a previous bench build (.build-bench)
  --out DIR               output directory (default bench/out)
  --max-seconds N         hard limit for the whole run (default 1800)
  -h, --help              this text

The default full run takes about 14 minutes (plus the first release build).
EOF
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO_ROOT=$(pwd)

SCENARIOS=keepalive,light,tunnel,idle,resolver,footprint
TARGETS=direct,tinyproxy,squid,nginx-proxy,httpdns-proxy
ACCESS_LOG=on
IDLE_SECONDS=60
DURATION=10
ROUNDS=3
TUNNELS=9000
TINY_TUNNELS=9000
TUNNEL_RUNS=5
PROFILE=
PROXY_BIN=
BEFORE_BIN=
REV=
BUILD=1
OUT=bench/out
MAX_SECONDS=1800
COMMAND="bench/run.sh $*"

die() { echo "bench/run.sh: $*" >&2; exit 2; }
# shellcheck source=bench/lib.sh
source bench/lib.sh  # the script runs from the repository root (cd above)
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --scenarios) need_value "$@"; SCENARIOS=$2; shift 2 ;;
    --targets) need_value "$@"; TARGETS=$2; shift 2 ;;
    --duration) need_value "$@"; DURATION=$2; shift 2 ;;
    --rounds) need_value "$@"; ROUNDS=$2; shift 2 ;;
    --tunnels) need_value "$@"; TUNNELS=$2; shift 2 ;;
    --tinyproxy-tunnels) need_value "$@"; TINY_TUNNELS=$2; shift 2 ;;
    --tunnel-runs) need_value "$@"; TUNNEL_RUNS=$2; shift 2 ;;
    --profile) PROFILE=--profile; shift ;;
    --access-log) need_value "$@"; ACCESS_LOG=$2; shift 2 ;;
    --idle-seconds) need_value "$@"; IDLE_SECONDS=$2; shift 2 ;;
    --proxy-bin) need_value "$@"; PROXY_BIN=$2; shift 2 ;;
    --before-bin) need_value "$@"; BEFORE_BIN=$2; shift 2 ;;
    --rev) need_value "$@"; REV=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --max-seconds) need_value "$@"; MAX_SECONDS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
done

case "$ACCESS_LOG" in on|off) ;; *) die "--access-log must be on or off" ;; esac
for n in "$DURATION" "$ROUNDS" "$TUNNELS" "$TINY_TUNNELS" "$TUNNEL_RUNS" "$MAX_SECONDS" "$IDLE_SECONDS"; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || die "not a positive number: $n"
done
[ "$DURATION" -ge 2 ] && [ "$DURATION" -le 120 ] || die "--duration must be 2..120 seconds"
[ "$ROUNDS" -le 10 ] || die "--rounds must be 1..10"
[ "$TUNNELS" -le 9500 ] && [ "$TINY_TUNNELS" -le 9500 ] || die "at most 9500 tunnels (two sockets each)"

[ "$(uname -s)" = Linux ] || die "Linux only (reads /proc)"

# ---------------------------------------------------------------- tools
bench_require_tools nginx squid tinyproxy -- nginx wrk squid tinyproxy curl python3 strace
if [[ ",$SCENARIOS," == *,profile,* ]]; then die "use --profile, not a profile scenario"; fi
if [ -n "$PROFILE" ] && ! command -v perf >/dev/null 2>&1; then
  echo "bench/run.sh: perf not found; the profile will be skipped" >&2
fi

# ---------------------------------------------------------------- open files
HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] && HARD=65536
ulimit -n "$HARD" || die "could not raise the open-file limit to $HARD"
if [[ ",$SCENARIOS," == *,idle,* ]]; then
  max_tunnels=$(( TUNNELS > TINY_TUNNELS ? TUNNELS : TINY_TUNNELS ))
  [ "$HARD" -ge $(( 2 * max_tunnels + 200 )) ] \
    || die "open-file hard limit is $HARD; $max_tunnels tunnels need $(( 2 * max_tunnels + 200 )) (lower --tunnels)"
fi

# ---------------------------------------------------------------- the proxy binary
if [ -z "$PROXY_BIN" ]; then
  command -v swift >/dev/null 2>&1 || die "swift not found (or pass --proxy-bin PATH)"
  BUILD_ARGS=(-c release --product httpdns-proxy --scratch-path .build-bench)
  if [ -n "$REV" ]; then
    # a clean tree of one revision: others may be editing the working tree
    SRC=.build-bench/src
    if [ "$BUILD" = 1 ]; then
      commit=$(git rev-parse --verify -q "$REV^{commit}") || die "unknown git revision: $REV"
      if [ "$(cat "$SRC/.bench-rev" 2>/dev/null)" != "$commit" ]; then  # else: keep it, builds incrementally
        rm -rf "$SRC" && mkdir -p "$SRC"
        git archive "$commit" | tar -x -C "$SRC"
        if [ -f Package.resolved ] && [ ! -f "$SRC/Package.resolved" ]; then cp Package.resolved "$SRC/"; fi
        echo "$commit" > "$SRC/.bench-rev"
      fi
    fi
    [ -f "$SRC/Package.swift" ] || die "no snapshot in $SRC (drop --no-build)"
    BUILD_ARGS+=(--package-path "$SRC")
    export BENCH_PROXY_REV
    BENCH_PROXY_REV=$(cat "$SRC/.bench-rev")
  fi
  if [ "$BUILD" = 1 ]; then
    echo "bench/run.sh: building httpdns-proxy (release, .build-bench)" >&2
    swift build "${BUILD_ARGS[@]}" >&2 || die "release build failed"
  fi
  PROXY_BIN="$(swift build "${BUILD_ARGS[@]}" --show-bin-path)/httpdns-proxy"
fi
[ -x "$PROXY_BIN" ] || die "no proxy binary at $PROXY_BIN (build it or drop --no-build)"
BEFORE_ARGS=()
if [ -n "$BEFORE_BIN" ]; then
  [ -x "$BEFORE_BIN" ] || die "no binary at $BEFORE_BIN (--before-bin)"
  BEFORE_ARGS=(--before-bin "$BEFORE_BIN")
fi

# the resolver micro-benchmark: same sources and build directory as the proxy (or the working
# tree when --proxy-bin names a binary)
RESOLVER_BENCH=
if [[ ",$SCENARIOS," == *,resolver,* ]]; then
  command -v swift >/dev/null 2>&1 || die "swift not found (needed for the resolver scenario)"
  RB_ARGS=(-c release --product resolver-bench --scratch-path .build-bench)
  if [ -n "$REV" ]; then RB_ARGS+=(--package-path .build-bench/src); fi
  if [ "$BUILD" = 1 ]; then
    echo "bench/run.sh: building resolver-bench (release, .build-bench)" >&2
    swift build "${RB_ARGS[@]}" >&2 || die "resolver-bench build failed"
  fi
  RESOLVER_BENCH="$(swift build "${RB_ARGS[@]}" --show-bin-path)/resolver-bench"
  [ -x "$RESOLVER_BENCH" ] || die "no resolver-bench at $RESOLVER_BENCH (drop --no-build)"
fi

# ---------------------------------------------------------------- run, and always clean up
WORKDIR=$(mktemp -d -t httpdns-bench.XXXXXX)
HARNESS_PID=

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$HARNESS_PID" ] && kill -0 "$HARNESS_PID" 2>/dev/null; then
    kill -TERM "$HARNESS_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$HARNESS_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL "$HARNESS_PID" 2>/dev/null || true
  fi
  bench_kill_groups "$WORKDIR/pids"
  rm -rf "$WORKDIR"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$OUT"
timeout -s TERM -k 30 "$MAX_SECONDS" python3 bench/harness.py \
  --workdir "$WORKDIR" --out "$OUT" --proxy-bin "$PROXY_BIN" \
  --scenarios "$SCENARIOS" --targets "$TARGETS" --duration "$DURATION" --rounds "$ROUNDS" \
  --tunnels "$TUNNELS" --tinyproxy-tunnels "$TINY_TUNNELS" --tunnel-runs "$TUNNEL_RUNS" \
  --nofile "$HARD" --command "$COMMAND" --resolver-bench "$RESOLVER_BENCH" \
  --access-log "$ACCESS_LOG" --idle-seconds "$IDLE_SECONDS" $PROFILE "${BEFORE_ARGS[@]}" &
HARNESS_PID=$!
wait "$HARNESS_PID"
