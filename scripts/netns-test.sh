#!/usr/bin/env bash
# End-to-end test of the sidecar topology with real network isolation (run by scripts/test.sh after
# the build): the proxy and an app client in separate network namespaces, the app's only way to the
# origin is the proxy. Needs root and iproute2; otherwise it says SKIPPED loudly and exits 0.
#
#   bash scripts/netns-test.sh PATH/TO/httpdns-proxy
#
# The proxy resolves the origin's name from a local static list (--provider static,
# --system-fallback false): no resolver outside these namespaces is ever asked.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh

binary="${1:?usage: netns-test.sh PATH/TO/httpdns-proxy}"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
[ -x "$binary" ] || { echo "netns-test: $binary is not executable" >&2; exit 1; }
if ! reason="$(netns_available)"; then skip_all "netns test" "$reason"; fi

work="$(mktemp -d)"
trap 'netns_cleanup; rm -rf "$work"' EXIT
netns_setup "$$"
say "netns test: app $NS_APP_ADDR -> proxy $NS_PROXY_ADDR:8080 -> origin $NS_ORIGIN_ADDR:8000 (binary $binary)"

start_origin "$work/release" "$work/origin.log"

printf '{"service":"netns-test","enable":1,"domainlist":[{"domain":"origin.test","ips":["%s"]}]}\n' \
  "$NS_ORIGIN_ADDR" >"$work/domains.json"
ip netns exec "$NS_PROXY" "$binary" serve \
  --listen "$NS_PROXY_ADDR:8080" --admin-listen 127.0.0.1:8081 \
  --provider static --static-list "$work/domains.json" --system-fallback false --ip-family ipv4 \
  --allow-destination "$NS_ORIGIN_NET" --connect-ports 8000 --shutdown-grace 10s \
  >"$work/access.log" 2>"$work/proxy.log" &
proxy_pid=$!
pids_to_stop+=("$proxy_pid")
healthcheck() {
  ip netns exec "$NS_PROXY" env -u HTTPDNS_PROXY_CONFIG "$binary" healthcheck --provider system --admin-listen 127.0.0.1:8081
}
# The static list loads in the background after the listeners open: wait for it too.
list_loaded() { grep -q '"message":"static list loaded"' "$work/proxy.log"; }
if wait_until 20 healthcheck && wait_until 10 list_loaded; then pass "proxy started; healthcheck exits 0"; else
  fail "proxy did not become healthy"; cat "$work/proxy.log"; exit 1
fi

in_app() { ip netns exec "$NS_APP" env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u no_proxy -u NO_PROXY "$@"; }

if in_app curl -sS --noproxy '*' --connect-timeout 2 -o /dev/null "http://$NS_ORIGIN_ADDR:8000/hello" 2>"$work/direct.err"; then
  fail "the app reached the origin without the proxy"
else
  pass "the app cannot reach the origin directly ($(tr -d '\n' <"$work/direct.err"))"
fi

body="$(in_app curl -sS --max-time 10 -D "$work/headers" -x "http://$NS_PROXY_ADDR:8080" http://origin.test:8000/hello || true)"
if [ "$body" = "hello from origin" ] && grep -qi '^x-seen-via: .*httpdns-proxy' "$work/headers"; then
  pass "GET http://origin.test:8000/hello through the proxy: '$body', the origin saw Via: httpdns-proxy"
else
  fail "GET through the proxy: body '$body'"; cat "$work/headers" "$work/proxy.log" || true
fi

body="$(in_app curl -sS --max-time 10 -p -x "http://$NS_PROXY_ADDR:8080" http://origin.test:8000/hello || true)"
if [ "$body" = "hello from origin" ]; then pass "CONNECT tunnel to origin.test:8000: '$body'"; else fail "CONNECT tunnel: body '$body'"; fi

if wait_until 5 grep -q "\"client\":\"$NS_APP_ADDR:" "$work/access.log" \
  && grep -q "\"ip\":\"$NS_ORIGIN_ADDR\"" "$work/access.log"; then
  pass "access log: client $NS_APP_ADDR, dialed $NS_ORIGIN_ADDR"
else
  fail "access log lacks the app client or the origin address"; cat "$work/access.log"
fi

# SIGTERM with a response in flight (curl -N writes what it gets at once, so the file size shows
# the first half arrived): the proxy stops accepting and reports draining, the response
# completes, then the proxy exits 0.
in_app curl -sS -N --max-time 30 -o "$work/slow.body" -x "http://$NS_PROXY_ADDR:8080" http://origin.test:8000/slow &
slow_pid=$!
pids_to_stop+=("$slow_pid")
half=$((64 * 1024))
slow_started() { [ "$(stat -c %s "$work/slow.body" 2>/dev/null || echo 0)" -ge "$half" ]; }
if wait_until 10 slow_started; then
  kill -TERM "$proxy_pid"
  unhealthy() { ! healthcheck; }
  if wait_until 10 unhealthy; then
    pass "after SIGTERM healthcheck exits 1: $(healthcheck 2>&1 || true)"
  else
    fail "healthcheck still passes after SIGTERM"
  fi
  touch "$work/release"
  if wait "$slow_pid" && [ "$(stat -c %s "$work/slow.body")" -eq $((2 * half)) ]; then
    pass "the in-flight response completed during the drain ($((2 * half)) bytes)"
  else
    fail "the in-flight response was cut: $(stat -c %s "$work/slow.body" 2>/dev/null || echo 0) bytes"
  fi
  # A bound on the exit: a watchdog kills the proxy if it has not exited 15 s from now.
  # Bounded: a proxy still running 15 s from now is killed (and fails the check).
  timeout 15 tail -s 0.1 --pid="$proxy_pid" -f /dev/null || kill -KILL "$proxy_pid" 2>/dev/null || true
  status=0
  wait "$proxy_pid" || status=$?
  if [ "$status" -eq 0 ]; then pass "the proxy exited 0 after the drain"; else fail "proxy exit status $status"; fi
else
  fail "the slow response did not start"; touch "$work/release"
fi

say "netns test: $checks_passed checks passed, $checks_failed failed"
if [ "$checks_failed" -ne 0 ]; then
  say "--- proxy log"; tail -n 30 "$work/proxy.log"
  exit 1
fi
