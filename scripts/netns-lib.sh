# shellcheck shell=bash
# Shared by scripts/netns-test.sh, scripts/container-smoke.sh and scripts/fleet-netns-test.sh
# (sourced, not run): three network namespaces made here and removed on exit, joined by two veth
# pairs (netns_setup), or any number joined by one bridge (netns_join_bridge).
#
#   app (10.231.1.2) ---- (10.231.1.1) proxy (10.231.2.1) ---- (10.231.2.2) origin
#
# The app's default route points at the proxy namespace, which does not forward: the app reaches
# the origin only through the proxy listening on 10.231.1.1, the sidecar pattern's "only way out".
# All traffic stays inside these namespaces.

NS_APP_ADDR=10.231.1.2
NS_PROXY_ADDR=10.231.1.1
NS_PROXY_UPSTREAM_ADDR=10.231.2.1
NS_ORIGIN_ADDR=10.231.2.2
# shellcheck disable=SC2034  # used by the scripts that source this file
NS_ORIGIN_NET=10.231.2.0/24

checks_passed=0
checks_failed=0
pids_to_stop=()
# Namespaces a script made beyond netns_setup's three (netns_cleanup removes them too).
namespaces_to_delete=()

say() { printf '%s\n' "$*"; }

pass() { checks_passed=$((checks_passed + 1)); say "  ok:   $*"; }

fail() { checks_failed=$((checks_failed + 1)); say "  FAIL: $*"; }

# Loud, so a skip is never mistaken for a pass. Exits 0, or NETNS_SKIP_STATUS when set (the Swift
# tests that run these scripts set 77 and report the skip as a skip).
skip_all() {
  say "################################################################"
  say "## $1: SKIPPED: $2"
  say "################################################################"
  exit "${NETNS_SKIP_STATUS:-0}"
}

# Can this process make network namespaces? (root, iproute2, a kernel that allows it)
netns_available() {
  [ "$(id -u)" -eq 0 ] || { echo "not root"; return 1; }
  command -v ip >/dev/null 2>&1 || { echo "ip (iproute2) missing"; return 1; }
  local probe="hp-probe-$$"
  ip netns add "$probe" 2>/dev/null || { echo "'ip netns add' is not permitted here"; return 1; }
  ip netns del "$probe"
}

netns_setup() {
  local tag="$1"
  NS_APP="hp-app-$tag"; NS_PROXY="hp-proxy-$tag"; NS_ORIGIN="hp-origin-$tag"
  local ns
  for ns in "$NS_APP" "$NS_PROXY" "$NS_ORIGIN"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
  done
  # veth names are limited to 15 characters; the pids keep parallel runs apart.
  ip link add "hpa$tag" netns "$NS_APP" type veth peer name "hpp$tag" netns "$NS_PROXY"
  ip link add "hpu$tag" netns "$NS_PROXY" type veth peer name "hpo$tag" netns "$NS_ORIGIN"
  ip -n "$NS_APP" addr add "$NS_APP_ADDR/24" dev "hpa$tag"
  ip -n "$NS_PROXY" addr add "$NS_PROXY_ADDR/24" dev "hpp$tag"
  ip -n "$NS_PROXY" addr add "$NS_PROXY_UPSTREAM_ADDR/24" dev "hpu$tag"
  ip -n "$NS_ORIGIN" addr add "$NS_ORIGIN_ADDR/24" dev "hpo$tag"
  ip -n "$NS_APP" link set "hpa$tag" up
  ip -n "$NS_PROXY" link set "hpp$tag" up
  ip -n "$NS_PROXY" link set "hpu$tag" up
  ip -n "$NS_ORIGIN" link set "hpo$tag" up
  ip -n "$NS_APP" route add default via "$NS_PROXY_ADDR"
  ip -n "$NS_ORIGIN" route add default via "$NS_PROXY_UPSTREAM_ADDR"
  ip netns exec "$NS_PROXY" sysctl -qw net.ipv4.ip_forward=0
}

netns_cleanup() {
  local pid
  for pid in "${pids_to_stop[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${pids_to_stop[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  local ns
  for ns in "${NS_APP:-}" "${NS_PROXY:-}" "${NS_ORIGIN:-}" "${namespaces_to_delete[@]}"; do
    if [ -n "$ns" ]; then ip netns del "$ns" 2>/dev/null || true; fi
  done
}

# netns_join_bridge HUB BRIDGE NS ADDRESS/PREFIX SHORT: makes namespace NS (removed on exit) and
# joins it to BRIDGE in namespace HUB with a veth pair named from SHORT (at most 15 characters
# with its prefix), addressed ADDRESS/PREFIX on the NS side.
netns_join_bridge() {
  local hub="$1" bridge="$2" ns="$3" address="$4" short="$5"
  ip netns add "$ns"
  namespaces_to_delete+=("$ns")
  ip -n "$ns" link set lo up
  ip link add "e$short" netns "$ns" type veth peer name "b$short" netns "$hub"
  ip -n "$ns" addr add "$address" dev "e$short"
  ip -n "$ns" link set "e$short" up
  ip -n "$hub" link set "b$short" master "$bridge" up
}

# Starts scripts/netns-origin.py in the origin namespace on port 8000 and waits until it answers.
start_origin() {
  local release_file="$1" log="$2"
  ip netns exec "$NS_ORIGIN" python3 -u "$(dirname "${BASH_SOURCE[0]}")/netns-origin.py" \
    --bind "$NS_ORIGIN_ADDR" --port 8000 --release "$release_file" >"$log" 2>&1 &
  ORIGIN_PID=$!
  pids_to_stop+=("$ORIGIN_PID")
  wait_until 10 ip netns exec "$NS_ORIGIN" curl -fsS -o /dev/null --max-time 1 "http://$NS_ORIGIN_ADDR:8000/hello" \
    || { say "origin did not start:"; cat "$log"; return 1; }
}

# wait_until SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds; fails after SECONDS.
wait_until() {
  local limit=$(( $1 * 10 )); shift
  local i
  for ((i = 0; i < limit; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
