#!/usr/bin/env bash
# shellcheck disable=SC2015  # `[ check ] && pass ... || fail ...`: pass only counts and prints, so it is if/else
# The node tier in network namespaces (run by scripts/test.sh after the build): one node-tier proxy
# with the (fake) vendor's credentials and a warm cache, serving it over --doh-listen to 20 pod
# proxies, each in a namespace of its own (--provider doh with the node's --doh-token as
# --resolver-token, --fallback-provider json to the vendor). Every pod is asked for the same 50 names
# through its DNS listener over two TTLs; the vendor's query count with and without the node tier
# is printed; the node tier is then killed (every pod keeps answering: from its cache, then from the
# vendor directly, a new name within 1 s) and started again (the pods return to it), then
# blackholed (a new name within resolver-timeout + 1 s). The pods reach the vendor by a name that is
# in no hosts file, pinned with --fallback-resolver-ip; their system resolver (resolv.conf through
# /etc/netns) is a stub that counts queries and must see none. Needs root, iproute2 and python3 with
# dnspython (iptables for the blackhole step); otherwise it says SKIPPED loudly and exits 0.
#
#   bash scripts/fleet-netns-test.sh PATH/TO/httpdns-proxy
#
# A TTL ends by purging every cache through the admin listener (DELETE /cache), not by waiting for
# it. All namespaces hang off one bridge in a hub namespace, which also runs the DNS client:
#
#   hub 10.232.0.1 (bridge) -- node 10.232.0.2 (:8053 DoH)   vendor 10.232.0.3 (:8000 DoH JSON)
#                           -- pod N 10.232.1.N (:5353 DNS), N = 1...20
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh

binary="${1:?usage: fleet-netns-test.sh PATH/TO/httpdns-proxy}"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
[ -x "$binary" ] || { echo "fleet-netns-test: $binary is not executable" >&2; exit 1; }
if ! reason="$(netns_available)"; then skip_all "fleet netns test" "$reason"; fi
for tool in python3 curl; do
  command -v "$tool" >/dev/null 2>&1 || skip_all "fleet netns test" "$tool missing (scripts/ensure-deps.sh --with-test-tools installs it)"
done
python3 -c 'import dns.message' 2>/dev/null \
  || skip_all "fleet netns test" "python3 lacks dnspython (scripts/ensure-deps.sh --with-test-tools installs it)"

pods=20
names=50
asked=$((pods * names))
token="fleet-node-token-$$"
tag="$$"
hub="hp-fhub-$tag"
bridge="fbr$tag"
node_ns="hp-fnode-$tag"
vendor_ns="hp-fvend-$tag"
vendor_url="http://10.232.0.3:8000"
# How the pods' fallback names the vendor: a name no hosts file or DNS server knows, pinned.
vendor_by_name="http://vendor.fleet.test:8000"
node_url="http://10.232.0.2:8053/dns-query"

work="$(mktemp -d)"
netns_etc=()
trap 'netns_cleanup; rm -rf "$work" "${netns_etc[@]}"' EXIT
ip netns add "$hub"
namespaces_to_delete+=("$hub")
ip -n "$hub" link set lo up
ip -n "$hub" link add "$bridge" type bridge
ip -n "$hub" addr add 10.232.0.1/16 dev "$bridge"
ip -n "$hub" link set "$bridge" up
netns_join_bridge "$hub" "$bridge" "$node_ns" 10.232.0.2/16 "fn$tag"
netns_join_bridge "$hub" "$bridge" "$vendor_ns" 10.232.0.3/16 "fv$tag"
pod_targets=()
for i in $(seq 1 "$pods"); do
  netns_join_bridge "$hub" "$bridge" "hp-fpod$i-$tag" "10.232.1.$i/16" "f$i.$tag"
  pod_targets+=("10.232.1.$i:5353")
done
say "fleet netns test: $pods pods, a node tier and a vendor on one bridge (binary $binary)"
# Each pod's system resolver is the stub in the hub (ip netns exec mounts /etc/netns/NS/resolv.conf).
for i in $(seq 1 "$pods"); do
  mkdir -p "/etc/netns/hp-fpod$i-$tag"
  netns_etc+=("/etc/netns/hp-fpod$i-$tag")
  printf 'nameserver 10.232.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/hp-fpod$i-$tag/resolv.conf"
done

in_hub() { ip netns exec "$hub" "$@"; }
ip netns exec "$vendor_ns" python3 -u scripts/fleet-peers.py vendor --bind 10.232.0.3 >"$work/vendor.log" 2>&1 &
pids_to_stop+=("$!")
vendor_count() { in_hub curl -fsS --max-time 5 "$vendor_url/count"; }
wait_until 10 vendor_count || { say "the fake vendor did not start:"; cat "$work/vendor.log"; exit 1; }
ip netns exec "$hub" python3 -u scripts/fleet-peers.py dns-stub --bind 10.232.0.1 >"$work/stub.log" 2>&1 &
pids_to_stop+=("$!")
stub_up() { grep -q listening "$work/stub.log"; }
wait_until 10 stub_up || { say "the system DNS stub did not start:"; cat "$work/stub.log"; exit 1; }

# timed_new_name LIMIT_MS LABEL: purges pod 1's cache and asks it for one name; passes when the
# right answer came within LIMIT_MS.
timed_new_name() {
  local out ms verdict
  purge "hp-fpod1-$tag"
  out="$(in_hub python3 scripts/fleet-peers.py ask-one 10.232.1.1:5353 n07.fleet.test 2>>"$work/ask.err")"
  read -r ms verdict <<<"$out"
  if [ "$verdict" = good ] && [ "$ms" -le "$1" ]; then
    pass "$2: a new name answered in $ms ms (limit $1 ms)"
  else
    fail "$2: a new name took $ms ms ($verdict), limit $1 ms"; tail -5 "$work/pod1-node.log" || true
  fi
}

# ask: every pod for every name; sets good and bad (answers right and wrong).
ask() {
  local out
  out="$(in_hub python3 scripts/fleet-peers.py ask "${pod_targets[@]}" 2>>"$work/ask.err")"
  read -r good bad <<<"$out"
}

# purge NS...: empties the cache of the proxy in each namespace (the end of a TTL).
purge() {
  local ns
  for ns in "$@"; do
    ip netns exec "$ns" curl -fsS --max-time 5 -o /dev/null -X DELETE http://127.0.0.1:8081/cache
  done
}

pod_namespaces() { local i; for i in $(seq 1 "$pods"); do printf '%s\n' "hp-fpod$i-$tag"; done; }
mapfile -t pod_ns < <(pod_namespaces)

# start_pods LABEL ARGS...: one pod proxy per pod namespace, waiting for their DNS listeners.
pod_pids=()
start_pods() {
  local label="$1" i; shift
  pod_pids=()
  for i in $(seq 1 "$pods"); do
    ip netns exec "hp-fpod$i-$tag" "$binary" serve --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8081 \
      --dns-listen "10.232.1.$i:5353" --dns-rate-limit 0 --dns-upstream 127.0.0.1:9 \
      --ip-family ipv4 --system-fallback false --network-monitor false --access-log off --shutdown-grace 1s "$@" \
      >/dev/null 2>"$work/pod$i-$label.log" &
    pod_pids+=("$!")
    pids_to_stop+=("$!")
  done
  local pod_log
  for i in $(seq 1 "$pods"); do
    pod_log="$work/pod$i-$label.log"   # (not $i inside dns_up: wait_until has an i of its own)
    dns_up() { grep -q '"message":"dns listening"' "$pod_log"; }
    wait_until 30 dns_up || { say "pod $i did not start:"; tail -5 "$pod_log"; exit 1; }
  done
}

stop_pods() {
  local pid
  for pid in "${pod_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pod_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

node_pid=""
node_starts=0
start_node() {
  node_starts=$((node_starts + 1))
  local log="$work/node$node_starts.log"
  ip netns exec "$node_ns" "$binary" serve --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8081 \
    --provider json --resolver-url "$vendor_url/resolve" --ip-family ipv4 --system-fallback false \
    --doh-listen 10.232.0.2:8053 --doh-token "$token" --dns-rate-limit 0 --network-monitor false --access-log off \
    >/dev/null 2>"$log" &
  node_pid=$!
  pids_to_stop+=("$node_pid")
  node_up() { grep -q '"message":"doh listening"' "$log"; }
  wait_until 30 node_up || { say "the node tier did not start:"; tail -5 "$log"; exit 1; }
}

# round LABEL: asks every pod for every name; checks all answers were right; sets delta (vendor queries).
round() {
  local before after
  before="$(vendor_count)"
  ask
  after="$(vendor_count)"
  delta=$((after - before))
  if [ "$good" -eq "$asked" ] && [ "$bad" -eq 0 ]; then
    pass "$1: $good/$asked right answers, $delta vendor queries"
  else
    fail "$1: $good right and $bad wrong of $asked answers ($delta vendor queries)"; tail -5 "$work/ask.err" || true
  fi
}

# 1. Without the node tier: every pod asks the vendor itself.
start_pods direct --provider json --resolver-url "$vendor_url/resolve"
round "no node tier, first TTL"
direct_first=$delta
purge "${pod_ns[@]}"
round "no node tier, second TTL"
without_node=$((direct_first + delta))
[ "$without_node" -eq $((2 * asked)) ] && pass "without the node tier the vendor saw $without_node queries (one per pod per name per TTL)" \
  || fail "without the node tier the vendor saw $without_node queries, expected $((2 * asked))"
stop_pods

# 2. With it: the pods ask the node (with its token), the node asks the vendor.
start_node
start_pods node --provider doh --resolver-url "$node_url" --resolver-token "$token" \
  --fallback-provider json --fallback-resolver-url "$vendor_by_name/resolve" --fallback-resolver-ip 10.232.0.3 \
  --resolver-timeout 1s
round "node tier, first TTL"
first_ttl=$delta
purge "${pod_ns[@]}" "$node_ns"
round "node tier, second TTL"
second_ttl=$delta
if [ "$first_ttl" -le "$names" ] && [ "$second_ttl" -le "$names" ]; then
  pass "with the node tier the vendor saw $first_ttl + $second_ttl queries: at most one per name per TTL"
else
  fail "with the node tier the vendor saw $first_ttl + $second_ttl queries, more than $names per TTL"
fi

# 3. The node tier is killed: the pods answer from their caches, then (caches purged) from the vendor.
kill -KILL "$node_pid"; wait "$node_pid" 2>/dev/null || true
round "node tier killed, names cached"
[ "$delta" -eq 0 ] && pass "cached answers needed neither the node nor the vendor" || fail "$delta vendor queries for cached names"
timed_new_name 1000 "node tier killed (connections refused)"
purge "${pod_ns[@]}"
round "node tier down, caches purged: the fallback provider answers"
while_down=$delta
[ "$while_down" -ge "$names" ] && pass "the pods asked the vendor themselves: $while_down queries" \
  || fail "only $while_down vendor queries while the node tier was down"
authorized="$(in_hub curl -fsS --max-time 5 "$vendor_url/auth")"
[ "$authorized" -eq 0 ] && pass "no vendor query carried the node tier's token" || fail "$authorized vendor queries carried an Authorization header"

# 4. It comes back: after resolver-timeout (1 s) the pods ask it first again. Polled, at most 30 s.
start_node
back=""
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
  purge "${pod_ns[@]}"
  before="$(vendor_count)"
  ask
  delta=$(( $(vendor_count) - before ))
  purge "$node_ns"
  if [ "$good" -eq "$asked" ] && [ "$delta" -le "$names" ]; then back=$delta; break; fi
done
[ -n "$back" ] && pass "node tier back: a round cost the vendor $back queries (through the node again)" \
  || fail "the pods did not return to the node tier within 30 s (last round: $good right, $delta vendor queries)"

# 5. It is blackholed (packets dropped, nothing refused): the first provider's query times out
# after resolver-timeout (1 s) and the fallback answers.
if command -v iptables >/dev/null 2>&1; then
  ip netns exec "$node_ns" iptables -w -I INPUT -p tcp --dport 8053 -j DROP
  timed_new_name 2000 "node tier blackholed"
  ip netns exec "$node_ns" iptables -w -D INPUT -p tcp --dport 8053 -j DROP
else
  say "  SKIPPED: the blackhole step (iptables missing; scripts/ensure-deps.sh --with-test-tools installs it)"
fi

asked_system="$(grep -c '^query' "$work/stub.log" || true)"
[ "$asked_system" -eq 0 ] && pass "no pod asked system DNS (the fallback's host is pinned)" \
  || fail "pods asked system DNS $asked_system times: $(grep '^query' "$work/stub.log" | sort | uniq -c | head -3)"

if grep -q "$token" "$work"/*.log; then fail "the token appears in a proxy's log"; else pass "no proxy logged the token"; fi

say "fleet (netns): $pods pods x $names names over two TTLs: vendor queries without the node tier $without_node, with it $first_ttl + $second_ttl; node tier down: $while_down for a round; back: $back"
say "fleet netns test: $checks_passed passed, $checks_failed failed, ${SECONDS} s"
[ "$checks_failed" -eq 0 ]
