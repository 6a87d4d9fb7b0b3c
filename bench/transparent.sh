#!/usr/bin/env bash
# What a transparent connection costs (issue 24): CPU to accept, peek at the ClientHello, resolve
# its SNI (cached) and dial, and RSS per idle relayed connection. In the network namespaces of
# scripts/transparent-netns-lib.sh (root), the rules from `transparent-rules --apply`, the proxy as
# uid 10001 with one thread; an app opens COUNT connections to a decoy address, each sending a
# ClientHello for origin.test, and keeps them open; the origin is a sink that holds them.
# Figures from /proc/PID/stat (utime+stime) and /proc/PID/status (VmRSS) before and after. Not
# run by CI.
#
#   bash bench/transparent.sh PATH/TO/httpdns-proxy [COUNT]    (COUNT default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh
source scripts/transparent-netns-lib.sh

binary="${1:?usage: bench/transparent.sh PATH/TO/httpdns-proxy [COUNT]}"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
count="${2:-2000}"
warm=100
if ! reason="$(netns_available)"; then echo "bench/transparent.sh needs root and network namespaces: $reason" >&2; exit 1; fi
ulimit -n "$(ulimit -Hn)"   # 2 descriptors per relay in the proxy, 1 in the app and in the sink
transparent_setup "$$"

ip netns exec "$ORIGIN_NS" python3 -u "$peers" servers --origin 10.233.1.10 --decoy 10.233.1.66 --doh 10.233.1.53 \
  --banner 10.233.1.77 --banner6 fd33:1::77 --cert "$work/origin.pem" --key "$work/origin.key" --log "$work" >"$work/peers.out" 2>&1 &
pids_to_stop+=("$!")
ip netns exec "$ORIGIN_NS" python3 -u "$peers" sink 10.233.1.10 8443 >"$work/sink.out" 2>&1 &
pids_to_stop+=("$!")
wait_until 10 grep -q ready "$work/peers.out"
wait_until 10 grep -q ready "$work/sink.out"
ip netns exec "$POD" "$binary" transparent-rules --listener-port 15001 --ports 8443 --proxy-uid 10001 --ipv6 false --apply

ip netns exec "$POD" setpriv --reuid 10001 --regid 10001 --clear-groups -- "$binary" serve \
  --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8081 --transparent-listen 127.0.0.1:15001 \
  --provider json --resolver-url http://10.233.1.53/resolve --system-fallback false --ip-family ipv4 \
  --allow-destination 10.233.0.0/16 --threads 1 --max-connections 20000 --max-connections-per-client 20000 --access-log off \
  >/dev/null 2>"$work/proxy.log" &
proxy_pid=$!
pids_to_stop+=("$proxy_pid")
admin() { ip netns exec "$POD" curl -fsS --max-time 5 "http://127.0.0.1:8081$1"; }
wait_until 20 admin /healthz || { echo "the proxy did not start" >&2; cat "$work/proxy.log" >&2; exit 1; }
accepted() { admin /stats | python3 -c "import json,sys; print(json.load(sys.stdin)['access']['transparent']['accepted'])"; }
# Relays open: the proxy's established connections to the origin, counted by the kernel (polling
# the proxy's /metrics would add its own CPU to the figure).
tunnels() { ip netns exec "$POD" ss -Htn state established dst 10.233.1.10:8443 | wc -l; }
tunnels_are() { [ "$(tunnels)" = "$1" ]; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$proxy_pid/stat"; }
sys_ticks() { awk '{print $15}' "/proc/$proxy_pid/stat"; }
rss_kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$proxy_pid/status"; }
hold() {  # hold COUNT RELEASE: COUNT relayed connections, kept open until RELEASE exists
  ip netns exec "$POD" python3 -u "$peers" hold 10.233.1.66 8443 origin.test "$1" "$2" >"$work/hold-$1.out" 2>&1 &
  pids_to_stop+=("$!")
}

# Warm-up: the first connections resolve origin.test, size the buffers and the allocator.
hold "$warm" "$work/warm.release"
wait_until 60 tunnels_are "$warm" || { echo "warm-up: $(tunnels) relays open" >&2; cat "$work/hold-$warm.out" "$work/proxy.log" >&2; exit 1; }
touch "$work/warm.release"
wait_until 60 tunnels_are 0
rss0=$(rss_kib); cpu0=$(cpu_ticks); sys0=$(sys_ticks); accepted0=$(accepted)

hold "$count" "$work/bench.release"
wait_until 300 tunnels_are "$count" || { echo "only $(tunnels) of $count relays open" >&2; tail -3 "$work/hold-$count.out" >&2; exit 1; }
rss1=$(rss_kib); cpu1=$(cpu_ticks); sys1=$(sys_ticks); accepted1=$(accepted)
hz=$(getconf CLK_TCK)

python3 - "$count" "$rss0" "$rss1" "$cpu0" "$cpu1" "$hz" "$accepted0" "$accepted1" "$sys0" "$sys1" <<'PY'
import sys
count, rss0, rss1, cpu0, cpu1, hz, a0, a1, sys0, sys1 = map(int, sys.argv[1:])
print(f"transparent relays: {count} idle TLS connections (ClientHello peeked, SNI resolved from cache, origin dialed), proxy with 1 thread")
print(f"  accepted on the transparent listener: {a1 - a0}")
print(f"  RSS {rss0 / 1024:.1f} MiB -> {rss1 / 1024:.1f} MiB: {(rss1 - rss0) / count:.1f} KiB per idle relayed connection")
print(f"  CPU {(cpu1 - cpu0) / hz:.2f} s: {(cpu1 - cpu0) / hz / count * 1e6:.0f} us per connection set up (accept, peek, resolve, connect, splice),"
      f" of which {(sys1 - sys0) / hz / count * 1e6:.0f} us in the kernel")
PY
touch "$work/bench.release"
