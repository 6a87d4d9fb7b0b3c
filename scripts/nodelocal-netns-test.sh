#!/usr/bin/env bash
# shellcheck disable=SC2015  # `[ check ] && pass ... || fail ...`: pass only counts and prints, so it is if/else
# The DNS listener as a node's NodeLocal DNS cache, in network namespaces (run by scripts/test.sh
# after the build): `httpdns-proxy nodelocal-rules --apply` makes the dummy interface with
# 169.254.20.10 and the no-conntrack rules in the node's namespace (which also carries the
# conntrack rule kube-proxy installs, so tracking is on there); the proxy serves
# --dns-listen 169.254.20.10:53 with cluster.local forwarded to a fake kube-dns. A pod, routed
# through the node, whose resolv.conf names only 169.254.20.10, gets the HTTPDNS answer for a
# public name and kube-dns's answers (A, SRV, NXDOMAIN) for cluster names, each from upstream once;
# none of those queries leaves a conntrack entry, while the proxy's own query to kube-dns does.
# Needs root, iproute2, iptables and python3 with dnspython; otherwise it says SKIPPED loudly and
# exits 0.
#
#   bash scripts/nodelocal-netns-test.sh PATH/TO/httpdns-proxy
#
#   pod 10.236.1.2 -- 10.236.1.1 node (nodelocaldns: 169.254.20.10) 10.236.2.1 -- services
#                                                     kube-dns 10.236.2.3:53, HTTPDNS 10.236.2.4:8000
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh

binary="${1:?usage: nodelocal-netns-test.sh PATH/TO/httpdns-proxy}"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
[ -x "$binary" ] || { echo "nodelocal-netns-test: $binary is not executable" >&2; exit 1; }
if ! reason="$(netns_available)"; then skip_all "nodelocal netns test" "$reason"; fi
for tool in python3 curl iptables getent; do
  command -v "$tool" >/dev/null 2>&1 || skip_all "nodelocal netns test" "$tool missing (scripts/ensure-deps.sh --with-test-tools installs it)"
done
python3 -c 'import dns.resolver' 2>/dev/null \
  || skip_all "nodelocal netns test" "python3 lacks dnspython (scripts/ensure-deps.sh --with-test-tools installs it)"

tag="$$"
node="hp-nlnode-$tag"
pod="hp-nlpod-$tag"
svc="hp-nlsvc-$tag"
local_ip=169.254.20.10
work="$(mktemp -d)"
trap 'netns_cleanup; rm -rf "$work" "/etc/netns/$pod"' EXIT
for ns in "$node" "$pod" "$svc"; do
  ip netns add "$ns"
  namespaces_to_delete+=("$ns")
  ip -n "$ns" link set lo up
done
ip link add "nlp$tag" netns "$pod" type veth peer name "nln$tag" netns "$node"
ip link add "nls$tag" netns "$svc" type veth peer name "nlm$tag" netns "$node"
ip -n "$pod" addr add 10.236.1.2/24 dev "nlp$tag"
ip -n "$node" addr add 10.236.1.1/24 dev "nln$tag"
ip -n "$node" addr add 10.236.2.1/24 dev "nlm$tag"
ip -n "$svc" addr add 10.236.2.3/24 dev "nls$tag"
ip -n "$svc" addr add 10.236.2.4/24 dev "nls$tag"
for pair in "$pod nlp$tag" "$node nln$tag" "$node nlm$tag" "$svc nls$tag"; do
  read -r ns dev <<<"$pair"
  ip -n "$ns" link set "$dev" up
done
# The pod reaches the link-local address through its node, as a pod's default route does.
ip -n "$pod" route add default via 10.236.1.1
mkdir -p "/etc/netns/$pod"
printf 'nameserver %s\noptions timeout:2 attempts:1\n' "$local_ip" >"/etc/netns/$pod/resolv.conf"
say "nodelocal netns test: pod -> node $local_ip -> kube-dns / HTTPDNS (binary $binary)"

in_node() { ip netns exec "$node" "$@"; }
in_pod() { ip netns exec "$pod" "$@"; }

# kube-proxy's rule: it makes the node's namespace track connections (as every node does).
in_node iptables -w -t filter -A INPUT -m conntrack --ctstate INVALID -j DROP

# 1. The set-up, applied twice: one copy. A kernel without dummy interfaces (some CI kernels lack
# the module) gets the address on lo, which delivers it locally the same way.
iface=nodelocaldns
if ! in_node ip link add "hpnl$tag" type dummy 2>/dev/null; then
  iface=lo
  say "  note: this kernel has no dummy interfaces: the address goes on lo (--interface lo)"
fi
in_node ip link del "hpnl$tag" 2>/dev/null || true
in_node "$binary" nodelocal-rules --interface "$iface" --apply 2>"$work/rules.err" \
  && in_node "$binary" nodelocal-rules --interface "$iface" --apply 2>>"$work/rules.err" \
  && pass "nodelocal-rules --apply ran twice" || { fail "nodelocal-rules --apply: $(cat "$work/rules.err")"; }
in_node ip -o addr show dev "$iface" | grep -q "inet $local_ip/32" \
  && pass "interface $iface holds $local_ip" || fail "$iface: $(in_node ip -o addr show dev "$iface" 2>&1)"
jumps="$(in_node iptables -w -t raw -S PREROUTING | grep -c HTTPDNS_PROXY_NODELOCAL || true)"
[ "$jumps" -eq 1 ] && pass "one jump into the NOTRACK chain after two runs" || fail "$jumps jumps into the NOTRACK chain"

# 2. The peers and the proxy.
ip netns exec "$svc" python3 -u scripts/nodelocal-peers.py kube-dns --bind 10.236.2.3 >"$work/kube-dns.log" 2>&1 &
pids_to_stop+=("$!")
ip netns exec "$svc" python3 -u scripts/fleet-peers.py vendor --bind 10.236.2.4 >"$work/vendor.log" 2>&1 &
pids_to_stop+=("$!")
vendor_count() { ip netns exec "$svc" curl -fsS --max-time 5 http://10.236.2.4:8000/count; }
wait_until 10 vendor_count || { say "the fake HTTPDNS service did not start:"; cat "$work/vendor.log"; exit 1; }
kube_dns_up() { grep -q listening "$work/kube-dns.log"; }
wait_until 10 kube_dns_up || { say "the fake kube-dns did not start:"; cat "$work/kube-dns.log"; exit 1; }
ip netns exec "$node" "$binary" serve --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8081 \
  --dns-listen "$local_ip:53" --dns-forward-zone cluster.local=10.236.2.3:53 --dns-upstream 10.236.2.3:53 \
  --provider json --resolver-url http://10.236.2.4:8000/resolve --ip-family ipv4 --system-fallback false \
  --dns-query-log "$work/queries.log" --network-monitor false --access-log off >/dev/null 2>"$work/proxy.log" &
pids_to_stop+=("$!")
dns_up() { grep -q '"message":"dns listening"' "$work/proxy.log"; }
wait_until 30 dns_up || { say "the proxy did not start:"; tail -5 "$work/proxy.log"; exit 1; }

# expect LABEL NAME TYPE ANSWER: the pod asks (three times) through its resolv.conf.
expect() {
  local label="$1" name="$2" type="$3" want="$4" out ok=1
  for _ in 1 2 3; do
    out="$(in_pod python3 scripts/nodelocal-peers.py ask "$name" "$type" 2>&1 || true)"
    [ "$out" = "nameservers $local_ip"$'\n'"$want" ] || { ok=0; break; }
  done
  [ "$ok" -eq 1 ] && pass "$label: $name $type -> $want (3 times, through resolv.conf)" \
    || fail "$label: $name $type: got $(tr '\n' ' ' <<<"$out"), want $want"
}
upstream_queries() { grep -c "^query $1 $2\$" "$work/kube-dns.log" || true; }

vendor_before="$(vendor_count)"
expect "public name, HTTPDNS" n07.fleet.test A 198.18.0.8
vendor_after="$(vendor_count)"
[ "$((vendor_after - vendor_before))" -eq 1 ] && pass "the HTTPDNS service was asked once for three questions" \
  || fail "the HTTPDNS service was asked $((vendor_after - vendor_before)) times"
expect "cluster name" api.default.svc.cluster.local A 10.96.7.7
expect "cluster SRV" _http._tcp.api.default.svc.cluster.local SRV "0 100 80 api.default.svc.cluster.local."
expect "cluster NXDOMAIN" missing.default.svc.cluster.local A NXDOMAIN
for q in "api.default.svc.cluster.local. A" "_http._tcp.api.default.svc.cluster.local. SRV" "missing.default.svc.cluster.local. A"; do
  read -r name type <<<"$q"
  n="$(upstream_queries "$name" "$type")"
  [ "$n" -eq 1 ] && pass "kube-dns asked once for $name $type (cached)" || fail "kube-dns asked $n times for $name $type"
done
got="$(in_pod getent ahostsv4 api.default.svc.cluster.local | awk 'NR == 1 {print $1}')"
[ "$got" = 10.96.7.7 ] && pass "glibc (getent) in the pod resolves the cluster name through $local_ip" \
  || fail "getent ahostsv4 api.default.svc.cluster.local: '$got'"
grep -q '"source":"forward-cache"' "$work/queries.log" && grep -q '"source":"httpdns"' "$work/queries.log" \
  && pass "the query log names the sources (httpdns, forward-cache)" || fail "query log: $(head -3 "$work/queries.log")"

# 3. Connection tracking: none for the listener's traffic, which the NOTRACK chain counted; the
# proxy's own query to kube-dns (not the listener's address) is tracked, so tracking is on.
tracked="$(in_node grep -c "$local_ip" /proc/net/nf_conntrack || true)"
control="$(in_node grep -c 'dst=10.236.2.3' /proc/net/nf_conntrack || true)"
[ "$control" -ge 1 ] && [ "$tracked" -eq 0 ] \
  && pass "no conntrack entry for $local_ip ($control for the proxy's own queries to kube-dns)" \
  || fail "conntrack: $tracked entries for $local_ip, $control for kube-dns (want 0 and >= 1)"
counted="$(in_node iptables -w -t raw -L HTTPDNS_PROXY_NODELOCAL -v -x -n | awk '/NOTRACK/ {sum += $1} END {print sum + 0}')"
[ "$counted" -gt 0 ] && pass "the NOTRACK chain matched $counted packets" || fail "the NOTRACK chain matched nothing"

# 4. Removal leaves nothing.
in_node "$binary" nodelocal-rules --interface "$iface" --remove --apply 2>>"$work/rules.err"
left="$( (in_node iptables -w -t raw -S; in_node iptables -w -t filter -S) | grep -c HTTPDNS_PROXY_NODELOCAL || true)"
if [ "$iface" = lo ]; then gone() { ! in_node ip -o addr show dev lo | grep -q "$local_ip"; }; else gone() { ! in_node ip link show "$iface" >/dev/null 2>&1; }; fi
if [ "$left" -eq 0 ] && gone; then
  pass "nodelocal-rules --remove took the chains and the $iface address away"
else
  fail "after --remove: $left rules left; $iface: $(in_node ip -o addr show dev "$iface" 2>&1 | head -2)"
fi

say "nodelocal netns test: $checks_passed passed, $checks_failed failed, ${SECONDS} s"
[ "$checks_failed" -eq 0 ]
