#!/usr/bin/env bash
# shellcheck disable=SC2015  # `[ check ] && pass ... || fail ...`: pass only counts and prints, so it is if/else
# The parent proxy in network namespaces (run by `swift test` as root, NamespaceScenarioTests):
# app -> proxy -> origin namespaces (scripts/netns-lib.sh), a real squid as the parent in the
# origin's namespace, and a netfilter rule in the proxy's namespace that rejects its connections
# to the origin's port 8000: only the parent can reach that origin. The app's and the proxy's
# /etc/hosts map the names to a dead address; the proxy resolves from a static list (HTTPDNS
# stand-in). Checked:
#
#   HTTP and CONNECT for origin.test reach the origin through squid, whose access log shows
#   CONNECT <the list's address>:8000 for both (never the name, never the lie); a `route` rule sends
#   direct.test directly (a second server the proxy may reach, squid not asked) and denies
#   denied.test (403); squid killed: 502 naming the parent (parent-down fail).
#
#   bash scripts/parent-netns-test.sh PATH/TO/httpdns-proxy
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh

binary="${1:?usage: parent-netns-test.sh PATH/TO/httpdns-proxy}"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
[ -x "$binary" ] || { echo "parent-netns-test: $binary is not executable" >&2; exit 1; }
if ! reason="$(netns_available)"; then skip_all "parent netns test" "$reason"; fi
squid="$(command -v squid || { [ -x /usr/sbin/squid ] && echo /usr/sbin/squid; } || true)"
[ -n "$squid" ] || skip_all "parent netns test" "squid is missing (scripts/ensure-deps.sh --with-test-tools)"
for tool in curl python3 iptables; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || skip_all "parent netns test" "$tool is missing (scripts/ensure-deps.sh --with-test-tools)"
done

lie=10.231.2.99
work="$(mktemp -d)"
netns_setup "p$$"
for ns in "$NS_APP" "$NS_PROXY"; do
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1 localhost\n%s origin.test direct.test denied.test\n' "$lie" >"/etc/netns/$ns/hosts"
done
# squid names its shared-memory segments (/dev/shm, shared with every other squid on the host) by
# its service name: one of its own, so a squid of a test running beside this one is not disturbed.
squid_name="httpdnsparent$$"
trap 'netns_cleanup; rm -rf "$work" ${NS_APP:+"/etc/netns/$NS_APP"} ${NS_PROXY:+"/etc/netns/$NS_PROXY"} /dev/shm/"$squid_name"-*' EXIT
say "parent netns test: app $NS_APP_ADDR -> proxy $NS_PROXY_ADDR:8080 -> squid $NS_ORIGIN_ADDR:3128 -> origin $NS_ORIGIN_ADDR:8000"

start_origin "$work/release" "$work/origin.log"
# A second server the proxy may reach directly (the route's `direct` destination).
mkdir -p "$work/www"
printf 'served directly\n' >"$work/www/direct"
chmod -R a+rX "$work"
ip netns exec "$NS_ORIGIN" python3 -m http.server 8001 --bind "$NS_ORIGIN_ADDR" --directory "$work/www" >"$work/direct.log" 2>&1 &
pids_to_stop+=("$!")
wait_until 10 ip netns exec "$NS_ORIGIN" curl -fsS -o /dev/null --max-time 1 "http://$NS_ORIGIN_ADDR:8001/direct" \
  || { fail "the direct server did not start"; cat "$work/direct.log"; exit 1; }

# squid, the parent, beside the origin: the only one that may reach port 8000.
user=proxy; id proxy >/dev/null 2>&1 || user=nobody
chmod 777 "$work"
cat >"$work/squid.conf" <<CONF
http_port $NS_ORIGIN_ADDR:3128
visible_hostname netns-parent
pid_filename $work/squid.pid
cache_log $work/cache.log
coredump_dir $work
cache_effective_user $user
access_log stdio:$work/squid-access.log
cache_store_log none
logfile_rotate 0
cache deny all
cache_mem 0 MB
dns_nameservers 127.0.0.1
pinger_enable off
netdb_filename none
client_db off
shutdown_lifetime 0 seconds
acl from_proxy src $NS_PROXY_UPSTREAM_ADDR/32
http_access allow from_proxy
http_access deny all
CONF
ip netns exec "$NS_ORIGIN" "$squid" -N -n "$squid_name" -f "$work/squid.conf" >"$work/squid.out" 2>&1 &
squid_pid=$!
pids_to_stop+=("$squid_pid")
# Only the parent reaches the origin's port 8000.
ip netns exec "$NS_PROXY" iptables -w -A OUTPUT -p tcp -d "$NS_ORIGIN_ADDR" --dport 8000 -j REJECT --reject-with tcp-reset

printf '{"service":"parent-netns-test","enable":1,"domainlist":[{"domain":"origin.test","ips":["%s"]},{"domain":"direct.test","ips":["%s"]},{"domain":"denied.test","ips":["%s"]}]}\n' \
  "$NS_ORIGIN_ADDR" "$NS_ORIGIN_ADDR" "$NS_ORIGIN_ADDR" >"$work/domains.json"
ip netns exec "$NS_PROXY" "$binary" serve \
  --listen "$NS_PROXY_ADDR:8080" --admin-listen 127.0.0.1:8081 \
  --provider static --static-list "$work/domains.json" --system-fallback false --ip-family ipv4 \
  --allow-destination "$NS_ORIGIN_NET" --connect-ports 8000,8001 --pool-max-idle 0 \
  --parent-proxy "http://$NS_ORIGIN_ADDR:3128" --route direct.test=direct --route denied.test=deny \
  >"$work/access.log" 2>"$work/proxy.log" &
pids_to_stop+=("$!")
list_loaded() { grep -q '"message":"static list loaded"' "$work/proxy.log"; }
squid_up() { ip netns exec "$NS_PROXY" curl -s -o /dev/null --max-time 1 "http://$NS_ORIGIN_ADDR:3128/"; }
if wait_until 20 list_loaded && wait_until 20 squid_up; then pass "proxy and squid started"; else
  fail "proxy or squid did not start"; cat "$work/proxy.log" "$work/cache.log" 2>/dev/null | tail -n 20; exit 1
fi

in_app() { ip netns exec "$NS_APP" env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy -u no_proxy -u NO_PROXY "$@"; }
proxy="http://$NS_PROXY_ADDR:8080"
hello="hello from origin"
seen_by_squid() { [ "$(grep -cE "TCP_TUNNEL/200 [0-9]+ CONNECT $NS_ORIGIN_ADDR:8000 " "$work/squid-access.log" 2>/dev/null)" -ge 2 ]; }

if ip netns exec "$NS_PROXY" curl -s --max-time 3 "http://$NS_ORIGIN_ADDR:8000/hello" >/dev/null 2>&1; then
  fail "the proxy's namespace reaches the origin directly"
else
  pass "the proxy's namespace cannot reach $NS_ORIGIN_ADDR:8000 itself"
fi

body="$(in_app curl -sS --max-time 10 -x "$proxy" http://origin.test:8000/hello 2>&1 || true)"
[ "$body" = "$hello" ] && pass "HTTP through the parent: '$body'" || fail "HTTP through the parent: '$body'"
body="$(in_app curl -sS --max-time 10 -p -x "$proxy" http://origin.test:8000/hello 2>&1 || true)"
[ "$body" = "$hello" ] && pass "CONNECT through the parent: '$body'" || fail "CONNECT through the parent: '$body'"
if wait_until 5 seen_by_squid; then
  pass "squid's access log: 2 x CONNECT $NS_ORIGIN_ADDR:8000 (the HTTPDNS address)"
else
  fail "squid's access log: $(tail -n 5 "$work/squid-access.log" 2>/dev/null)"
fi
if grep -q "origin.test\|$lie" "$work/squid-access.log"; then fail "squid was asked for the name or the lie"; else
  pass "squid was never asked for origin.test or $lie"
fi

before="$(wc -l <"$work/squid-access.log")"
body="$(in_app curl -sS --max-time 10 -x "$proxy" http://direct.test:8001/direct 2>&1 || true)"
after="$(wc -l <"$work/squid-access.log")"
[ "$body" = "served directly" ] && [ "$before" = "$after" ] && pass "route direct.test=direct: '$body', squid not asked" \
  || fail "direct.test: '$body' (squid log $before -> $after lines)"
status="$(in_app curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$proxy" http://denied.test:8000/ || true)"
[ "$status" = "403" ] && pass "route denied.test=deny: 403" || fail "denied.test: $status"

kill -KILL "$squid_pid" 2>/dev/null || true
wait "$squid_pid" 2>/dev/null || true
answer="$(in_app curl -s --max-time 10 -x "$proxy" http://origin.test:8000/hello -w ' %{http_code}' || true)"
case "$answer" in
  *"parent proxy $NS_ORIGIN_ADDR:3128 is unreachable"*" 502") pass "squid killed: 502 naming the parent" ;;
  *) fail "squid killed: '$answer'" ;;
esac

say "parent netns test: $checks_passed checks passed, $checks_failed failed"
if [ "$checks_failed" -ne 0 ]; then
  say "--- proxy log"; tail -n 30 "$work/proxy.log"
  say "--- squid access log"; tail -n 30 "$work/squid-access.log" 2>/dev/null || true
  exit 1
fi
