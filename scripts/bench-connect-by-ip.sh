#!/usr/bin/env bash
# Time to first byte through the proxy when the first of two IPs of a name is dead, cold (a fresh
# proxy that has not learned it yet) and warm (it has), against both IPs alive. Loopback only:
# origins on 127.0.0.1 and 127.0.0.2 (same port), "dead" = nothing listening on 127.0.0.2.
# "Dropping" = a listener on 127.0.0.2 whose accept queue is full, so the kernel drops further SYNs
# (what an unreachable address looks like from outside). Bounded: N requests per case (default
# 30), each curl capped at 5 s.
#
#   swift build -c release --scratch-path .build-he --product httpdns-proxy
#   scripts/bench-connect-by-ip.sh .build-he/release/httpdns-proxy [N]
set -euo pipefail

BIN=${1:?usage: $0 PATH/TO/httpdns-proxy [N]}
N=${2:-30}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

ORIGIN_PORT=$(free_port)
mkdir -p "$WORK/www" && echo hello > "$WORK/www/index.html"
cat > "$WORK/list.json" <<EOF
{"service":"bench","enable":1,"domainlist":[{"domain":"bench.test","ips":["127.0.0.2","127.0.0.1"]}]}
EOF

start_origin() { # $1 = address
    (cd "$WORK/www" && exec python3 -m http.server "$ORIGIN_PORT" --bind "$1" >/dev/null 2>&1) &
    PIDS+=($!)
    for _ in $(seq 50); do curl -s -o /dev/null --noproxy '*' "http://$1:$ORIGIN_PORT/" && return; sleep 0.1; done
    echo "origin on $1 did not start" >&2; exit 1
}

PROXY_PID=
PROXY_PORT=
# Ready when the admin listener answers: nothing is dialed, so the health table starts empty.
start_proxy() {
    PROXY_PORT=$(free_port)
    local admin_port
    admin_port=$(free_port)
    "$BIN" --listen "127.0.0.1:$PROXY_PORT" --admin-listen "127.0.0.1:$admin_port" --provider static \
        --static-list "$WORK/list.json" --system-fallback false --allow-destination 127.0.0.0/8 --ip-family ipv4 \
        --pool-max-idle 0 --access-log off --log-level error --threads 1 >/dev/null 2>&1 &
    PROXY_PID=$!
    for _ in $(seq 100); do
        curl -s -o /dev/null -m 5 --noproxy '*' "http://127.0.0.1:$admin_port/healthz" && return
        sleep 0.05
    done
    echo "proxy did not start" >&2; exit 1
}
stop_proxy() { kill "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; }

ttfb() { curl -s -o /dev/null -m 5 -w '%{time_starttransfer}\n' -x "http://127.0.0.1:$PROXY_PORT" "http://bench.test:$ORIGIN_PORT/"; }

median_ms() { sort -n | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.3f", m * 1000}'; }
p90_ms() { sort -n | awk '{v[NR]=$1} END {i = int(NR * 0.9); if (i < 1) i = 1; printf "%.3f", v[i] * 1000}'; }

start_origin 127.0.0.1

# Cold: a fresh proxy per request, whose health table is empty (and which pays its other
# first-request costs too, hence the cold baseline with both IPs alive). Warm: one proxy, one
# request first (which teaches it that 127.0.0.2 is dead: back-off 30 s), then N.
cold() { # $1 = output file
    : > "$1"
    for _ in $(seq "$N"); do
        start_proxy
        ttfb >> "$1"
        stop_proxy
    done
}
warm() { # $1 = output file
    start_proxy
    ttfb > /dev/null
    : > "$1"
    for _ in $(seq "$N"); do ttfb >> "$1"; done
    stop_proxy
}

cold "$WORK/dead_cold"
warm "$WORK/dead_warm"

python3 - "$ORIGIN_PORT" > "$WORK/drop.ready" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.2", port))
listener.listen(0)
held = []
for _ in range(3):  # fill the accept queue; never accept
    c = socket.socket()
    c.settimeout(0.3)
    try:
        c.connect(("127.0.0.2", port))
        held.append(c)
    except OSError:
        pass
print("ready", flush=True)
time.sleep(300)
PY
DROP_PID=$!
PIDS+=($DROP_PID)
for _ in $(seq 50); do grep -q ready "$WORK/drop.ready" && break; sleep 0.1; done
cold "$WORK/drop_cold"
warm "$WORK/drop_warm"
kill "$DROP_PID"; wait "$DROP_PID" 2>/dev/null || true

start_origin 127.0.0.2  # same port: now both IPs answer
cold "$WORK/alive_cold"
warm "$WORK/alive_warm"

printf '%-34s %10s %8s %10s\n' case median_ms p90_ms "vs alive"
for c in alive_cold dead_cold drop_cold alive_warm dead_warm drop_warm; do
    m=$(median_ms < "$WORK/$c")
    base=$(median_ms < "$WORK/alive_${c#*_}")
    printf '%-34s %10s %8s %10s\n' "$c" "$m" "$(p90_ms < "$WORK/$c")" "$(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.2f", a / b}')"
done
