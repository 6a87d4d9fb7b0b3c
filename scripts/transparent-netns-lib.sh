# shellcheck shell=bash
# pids_to_stop is scripts/netns-lib.sh's, sourced first:
# shellcheck disable=SC2154
# Shared by scripts/transparent-netns-test.sh and `bench/bench transparent` (sourced after
# scripts/netns-lib.sh): a "pod" namespace and an origin namespace joined by one veth pair, and a
# test CA with a certificate for origin.test. All traffic stays inside these namespaces.
#
#   pod  10.233.0.2 ---- 10.233.0.1  origin namespace, which also holds (on lo)
#                                     10.233.1.10 origin, 10.233.1.66 decoy,
#                                     10.233.1.53 DoH JSON resolver, 10.233.1.77 banner service
#   pod  fd33::2 ------- fd33::1      and fd33:1::77, the banner service over IPv6

# transparent_setup TAG: sets POD, ORIGIN_NS, work (a directory others can read), peers; removes
# everything on exit.
transparent_setup() {
  local tag="$1" address
  POD="hp-tpod-$tag"; ORIGIN_NS="hp-torg-$tag"
  work="$(mktemp -d)"
  chmod 755 "$work"
  # shellcheck disable=SC2317  # cleanup runs from the EXIT trap
  cleanup() {
    local pid
    for pid in "${pids_to_stop[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    for pid in "${pids_to_stop[@]}"; do wait "$pid" 2>/dev/null || true; done
    ip netns del "$POD" 2>/dev/null || true
    ip netns del "$ORIGIN_NS" 2>/dev/null || true
    rm -rf "$work"
  }
  trap cleanup EXIT

  ip netns add "$POD"
  ip netns add "$ORIGIN_NS"
  ip -n "$POD" link set lo up
  ip -n "$ORIGIN_NS" link set lo up
  ip link add "tpp$tag" netns "$POD" type veth peer name "tpo$tag" netns "$ORIGIN_NS"
  ip -n "$POD" addr add 10.233.0.2/24 dev "tpp$tag"
  ip -n "$ORIGIN_NS" addr add 10.233.0.1/24 dev "tpo$tag"
  for address in 10.233.1.10 10.233.1.66 10.233.1.53 10.233.1.77; do ip -n "$ORIGIN_NS" addr add "$address/32" dev lo; done
  ip -n "$POD" link set "tpp$tag" up
  ip -n "$ORIGIN_NS" link set "tpo$tag" up
  ip -n "$POD" route add default via 10.233.0.1
  # IPv6: fd33::2 (pod) -- fd33::1 (origin), and a banner service on fd33:1::77.
  ip -n "$POD" addr add fd33::2/64 dev "tpp$tag" nodad
  ip -n "$ORIGIN_NS" addr add fd33::1/64 dev "tpo$tag" nodad
  ip -n "$ORIGIN_NS" addr add fd33:1::77/128 dev lo
  ip -n "$POD" -6 route add default via fd33::1

  # A CA and the origin's certificate for origin.test.
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=transparent test CA" \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=origin.test" -keyout "$work/origin.key" -out "$work/origin.csr" 2>/dev/null
  printf 'subjectAltName=DNS:origin.test\n' >"$work/san.ext"
  openssl x509 -req -in "$work/origin.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
    -extfile "$work/san.ext" -out "$work/origin.pem" 2>/dev/null
  # shellcheck disable=SC2034  # used by the scripts that source this file
  peers="$(pwd)/scripts/transparent-peers.py"
}
