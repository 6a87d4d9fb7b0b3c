#!/usr/bin/env bash
# shellcheck disable=SC2015  # `[ check ] && pass ... || fail ...`: pass only counts and prints, so it is if/else
# End-to-end test of transparent interception (run by scripts/test.sh after the build): a "pod"
# network namespace holding the proxy (as uid 10001) and an app that knows nothing of proxies, and
# an origin namespace. The pod's netfilter rules come from the shipped command
# (`httpdns-proxy transparent-rules --apply`). The app's /etc/hosts (a private mount namespace)
# points origin.test at a wrong address, a decoy; HTTPDNS (a DoH JSON server in the origin
# namespace, on port 80, a redirected port) gives the right one. Needs root, iproute2, iptables,
# openssl and python3 (node for the fetch() check); otherwise it says SKIPPED loudly and exits 0.
#
#   bash scripts/transparent-netns-test.sh PATH/TO/httpdns-proxy
#
#   pod  10.233.0.2 ---- 10.233.0.1  origin namespace, which also holds
#                                     10.233.1.10 origin  (HTTP :80, HTTPS :443, cert for origin.test)
#                                     10.233.1.66 decoy   (the same, answering "decoy")
#                                     10.233.1.53 DoH JSON resolver (:80)
#                                     10.233.1.77 a server-speaks-first service (:2525)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh
source scripts/transparent-netns-lib.sh

binary="${1:?usage: transparent-netns-test.sh PATH/TO/httpdns-proxy}"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
[ -x "$binary" ] || { echo "transparent-netns-test: $binary is not executable" >&2; exit 1; }
if ! reason="$(netns_available)"; then skip_all "transparent netns test" "$reason"; fi
for tool in iptables ip6tables openssl python3 setpriv unshare; do
  command -v "$tool" >/dev/null 2>&1 || skip_all "transparent netns test" "$tool missing (scripts/ensure-deps.sh --with-test-tools installs it)"
done

transparent_setup "$$"
say "transparent netns test: pod 10.233.0.2 (proxy uid 10001 + app) -> origin namespace (binary $binary)"

ip netns exec "$ORIGIN_NS" python3 -u "$peers" servers --origin 10.233.1.10 --decoy 10.233.1.66 --doh 10.233.1.53 \
  --banner 10.233.1.77 --banner6 fd33:1::77 --cert "$work/origin.pem" --key "$work/origin.key" --log "$work" >"$work/peers.out" 2>&1 &
pids_to_stop+=("$!")
wait_until 10 grep -q ready "$work/peers.out" || { fail "origin servers did not start"; cat "$work/peers.out"; exit 1; }

# The rules, installed by the shipped command, in the pod's namespace.
ip netns exec "$POD" "$binary" transparent-rules --listener-port 15001 --ports 80,443,2525 --proxy-uid 10001 >"$work/rules.sh"
if ip netns exec "$POD" "$binary" transparent-rules --listener-port 15001 --ports 80,443,2525 --proxy-uid 10001 --drop-quic --apply 2>"$work/apply.err" \
  && ip netns exec "$POD" "$binary" transparent-rules --listener-port 15001 --ports 80,443,2525 --proxy-uid 10001 --drop-quic --apply 2>>"$work/apply.err" \
  && [ "$(ip netns exec "$POD" iptables -w -t nat -S OUTPUT | grep -c HTTPDNS_PROXY_REDIRECT)" = 1 ] \
  && ip netns exec "$POD" iptables -w -t nat -S HTTPDNS_PROXY_REDIRECT | grep -q -- '--uid-owner 10001 -j RETURN' \
  && ip netns exec "$POD" ip6tables -w -t nat -S HTTPDNS_PROXY_REDIRECT | grep -q 'REDIRECT --to-ports 15001'; then
  pass "transparent-rules --drop-quic --apply (twice: one copy) installed the IPv4 and IPv6 redirect, uid 10001 exempt"
else
  fail "transparent-rules --apply"; cat "$work/apply.err"; ip netns exec "$POD" iptables -w -t nat -S || true
fi

ip netns exec "$POD" setpriv --reuid 10001 --regid 10001 --clear-groups -- "$binary" serve \
  --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8081 --transparent-listen 127.0.0.1:15001 \
  --provider json --resolver-url http://10.233.1.53/resolve --system-fallback false --ip-family ipv4 \
  --allow-destination 10.233.0.0/16 --threads 1 --metrics true \
  >"$work/access.log" 2>"$work/proxy.log" &
proxy_pid=$!
pids_to_stop+=("$proxy_pid")
admin() { ip netns exec "$POD" curl -fsS --max-time 5 "http://127.0.0.1:8081$1"; }
stat() { admin /stats | python3 -c "import json,sys; t=json.load(sys.stdin)['access']['transparent']; print(eval(sys.argv[1], {}, t))" "$1"; }
stat_is() { [ "$(stat "$1")" = "$2" ]; }
if wait_until 20 admin /healthz; then pass "proxy (uid 10001) started with --transparent-listen"; else
  fail "proxy did not start"; cat "$work/proxy.log"; exit 1
fi

printf '127.0.0.1 localhost\n10.233.1.66 origin.test nothere.test\n' >"$work/hosts"
in_app() {
  # shellcheck disable=SC2016  # $1 and $@ are the inner shell's
  ip netns exec "$POD" unshare -m -- sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh "$work/hosts" \
    env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy -u no_proxy -u NO_PROXY "$@"
}

if [ "$(in_app getent hosts origin.test | awk '{print $1}')" = 10.233.1.66 ]; then
  pass "the app's own DNS (its /etc/hosts) gives origin.test the decoy's address 10.233.1.66"
else
  fail "the app's /etc/hosts is not in place"
fi

quic="$(in_app python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.233.1.66", 443))
s.settimeout(5)
try:
    s.send(b"quic initial")
    s.recv(1)
    print("answered")
except (ConnectionRefusedError, PermissionError) as error:
    print("blocked", type(error).__name__)
except socket.timeout:
    print("no answer")
' 2>&1 || true)"
case "$quic" in
  blocked*) pass "--drop-quic: the app's UDP to port 443 is rejected at once ($quic), so QUIC clients fall back to TCP" ;;
  *) fail "UDP 443 not blocked: $quic" ;;
esac

body="$(in_app curl -sS --max-time 10 http://origin.test/hello 2>&1 || true)"
[ "$body" = "origin /hello" ] && pass "curl http://origin.test/hello, no proxy variables: '$body'" || fail "curl http: '$body'"

body="$(in_app curl -sS --max-time 10 --cacert "$work/ca.pem" https://origin.test/tls 2>&1 || true)"
[ "$body" = "origin /tls" ] && pass "curl https://origin.test/tls (TLS end to end, the origin's certificate): '$body'" || fail "curl https: '$body'"

connections=2
if command -v node >/dev/null 2>&1; then
  body="$(in_app env NODE_EXTRA_CA_CERTS="$work/ca.pem" node -e \
    'fetch("https://origin.test/node").then(r => r.text()).then(t => process.stdout.write(t.trim())).catch(e => { console.log(String(e.cause || e)); process.exit(1) })' 2>&1 || true)"
  [ "$body" = "origin /node" ] && pass "node $(node --version) fetch('https://origin.test/node'): '$body'" || fail "node fetch: '$body'"
  connections=$((connections + 1))
else
  say "################ node missing: the fetch() check is SKIPPED ################"
fi

body="$(in_app python3 "$peers" split-hello origin.test 443 origin.test "$work/ca.pem" 2>&1 || true)"
[ "$body" = "origin /split" ] && pass "a ClientHello in three TCP segments 300 ms apart (longer than the 300 ms peek timeout) yields its SNI: '$body'" \
  || fail "split ClientHello: '$body'"

started_ms=$(date +%s%3N)
body="$(in_app python3 "$peers" banner 10.233.1.77 2525 2>&1 || true)"
elapsed_ms=$(( $(date +%s%3N) - started_ms ))
# A silent client waits the peek timeout (300 ms), not the hello timeout (5 s).
if [ "$body" = "220 banner|ping" ] && [ "$elapsed_ms" -lt 2500 ]; then
  pass "a server-speaks-first client is relayed to its original destination after the peek timeout (${elapsed_ms} ms): '$body'"
else
  fail "server-first: '$body' after ${elapsed_ms} ms"
fi

body="$(in_app curl -sS --max-time 10 http://nothere.test/fallback 2>&1 || true)"
[ "$body" = "decoy /fallback" ] && pass "a name HTTPDNS has no answer for goes to the original destination (--transparent-fallback original): '$body'" \
  || fail "fallback: '$body'"
connections=$((connections + 3))

if wait_until 5 stat_is accepted "$connections"; then
  pass "the transparent listener accepted exactly the app's $connections connections (the proxy's own were not redirected: no loop)"
else
  fail "transparent accepts: $(stat accepted), expected $connections"; admin /stats
fi
if [ -s "$work/doh.log" ] && grep -q '^doh 10.233.0.2' "$work/accepts.log"; then
  pass "HTTPDNS queries went straight to the resolver on port 80 ($(wc -l <"$work/doh.log") queries)"
else
  fail "no HTTPDNS query reached the resolver"; cat "$work/accepts.log"
fi
hijacks="$(stat hijacks)"
if [ "$hijacks" -ge 3 ] && admin /metrics | grep -q "^httpdns_proxy_transparent_hijacks_total $hijacks"; then
  pass "the hijacked local answer is counted: /stats hijacks=$hijacks, httpdns_proxy_transparent_hijacks_total=$hijacks"
else
  fail "hijack count: $hijacks"; admin /metrics | grep transparent || true
fi
if wait_until 5 grep -q '"type":"transparent".*"host":"origin.test","port":443.*"ip":"10.233.1.10".*"original_dst":"10.233.1.66:443","peek":"tls_sni","hijack":true' "$work/access.log" \
  && grep -q '"type":"transparent","client":"10.233.0.2:[0-9]*".*"method":"GET","scheme":"http","host":"origin.test","port":80,"path":"/hello","ip":"10.233.1.10".*"original_dst":"10.233.1.66:80","peek":"http_host","hijack":true' "$work/access.log" \
  && grep -q '"host":"10.233.1.77","port":2525.*"peek":"silent"' "$work/access.log"; then
  pass "access log: type transparent with the SNI/Host, the original destination, the peek and the hijack"
else
  fail "access log lacks the transparent records"; cat "$work/access.log"
fi

# Bad input, each held open while a normal request is served on the same (single) event loop.
release="$work/release"
for mode in big-extension truncated garbage silent; do
  in_app python3 "$peers" raw 10.233.1.66 443 "$mode" "$release" >"$work/raw-$mode.out" 2>&1 &
  pids_to_stop+=("$!")
done
decided() { [ "$(stat "peeks['too_large']")" -ge 1 ] && [ "$(stat "peeks['incomplete']")" -ge 1 ] \
  && [ "$(stat "peeks['unknown']")" -ge 1 ] && [ "$(stat "peeks['silent']")" -ge 2 ]; }
if wait_until 15 decided; then
  pass "bad input decided: a 70 KB extension block (too_large at once), truncated (incomplete at the hello timeout), garbage (unknown), silent"
else
  fail "bad input not decided: $(admin /stats)"
fi
body="$(in_app curl -sS --max-time 5 http://origin.test/meanwhile 2>&1 || true)"
[ "$body" = "origin /meanwhile" ] && pass "meanwhile the event loop serves others: '$body'" || fail "request beside the bad clients: '$body'"
touch "$release"
for mode in big-extension truncated garbage silent; do wait_until 10 test -s "$work/raw-$mode.out" || true; done
say "       bad clients saw: $(cat "$work"/raw-*.out | tr '\n' ' ')"
if wait_until 10 grep -q '"peek":"too_large"' "$work/access.log" && wait_until 10 grep -q '"peek":"incomplete"' "$work/access.log" \
  && grep -q '"peek":"unknown"' "$work/access.log" && grep -q 'not a well-formed\|transparent' "$work/proxy.log"; then
  pass "each bad input has a logged outcome (access log peek too_large / incomplete / unknown)"
else
  fail "bad input outcomes not logged"; tail -5 "$work/access.log"
fi

kill -TERM "$proxy_pid"
if wait "$proxy_pid"; then pass "proxy exits 0 on SIGTERM"; else fail "proxy exit status $?"; fi
# The other way to keep the proxy's own connections out of the redirect: a socket mark. The rules
# now exempt mark 0x100 and no uid; the proxy runs as root (CAP_NET_ADMIN, which SO_MARK needs)
# with --outbound-mark 0x100 on its origin and resolver sockets.
ip netns exec "$POD" "$binary" transparent-rules --listener-port 15001 --ports 80,443,2525 --proxy-uid none --outbound-mark 0x100 --apply 2>/dev/null
: >"$work/access.log"
ip netns exec "$POD" "$binary" serve \
  --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8081 --transparent-listen '[::]:15001' --outbound-mark 0x100 \
  --provider json --resolver-url http://10.233.1.53/resolve --system-fallback false --ip-family ipv4 \
  --allow-destination 10.233.0.0/16,fd33::/16 --transparent-fallback refuse --transparent-hello-timeout 1s \
  --threads 1 >"$work/access.log" 2>"$work/proxy-mark.log" &
proxy_pid=$!
pids_to_stop+=("$proxy_pid")
queries_before=$(wc -l <"$work/doh.log")
if wait_until 20 admin /healthz \
  && [ "$(in_app curl -sS --max-time 10 --cacert "$work/ca.pem" https://origin.test/marked 2>&1)" = "origin /marked" ] \
  && [ "$(in_app curl -sS --max-time 10 http://origin.test/marked 2>&1)" = "origin /marked" ] \
  && wait_until 5 stat_is accepted 2 && [ "$(wc -l <"$work/doh.log")" -gt "$queries_before" ]; then
  pass "with --outbound-mark 0x100 and a mark exemption (no uid match), on a dual-stack [::] listener: https and http reach the origin, 2 accepts (no loop)"
else
  fail "outbound mark: accepted $(stat accepted 2>/dev/null)"; tail -5 "$work/proxy-mark.log"
fi
body="$(in_app python3 "$peers" banner '[fd33:1::77]' 2525 2>&1 || true)"
if [ "$body" = "220 banner|ping" ] && wait_until 5 grep -q '"original_dst":"\[fd33:1::77\]:2525","peek":"silent"' "$work/access.log"; then
  pass "IPv6: redirected to [::1], original destination read with IP6T_SO_ORIGINAL_DST, relayed: '$body'"
else
  fail "IPv6 relay: '$body'"; tail -3 "$work/access.log"
fi
rm -f "$release"
in_app python3 "$peers" raw 10.233.1.66 443 truncated "$release" >"$work/raw-refused.out" 2>&1 || true
if grep -q '^truncated: closed' "$work/raw-refused.out" \
  && wait_until 5 grep -q '"ip":null,.*"error":"[^"]*transparent-hello-timeout[^"]*".*"peek":"incomplete"' "$work/access.log"; then
  pass "--transparent-fallback refuse: a ClientHello still incomplete at --transparent-hello-timeout 1s is closed, not relayed"
else
  fail "incomplete hello with refuse: $(cat "$work/raw-refused.out")"; tail -3 "$work/access.log"
fi
kill -TERM "$proxy_pid"; wait "$proxy_pid" || true

# A misconfiguration: the rules exempt mark 0x100 only, the proxy runs as root without the mark,
# so its own connections (to the resolver, to origins) are redirected back to it. It must
# recognise them (their source is one of its upstream sockets) and refuse them, not loop until
# the connection limit.
: >"$work/access.log"
ip netns exec "$POD" "$binary" serve \
  --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8081 --transparent-listen 127.0.0.1:15001 \
  --provider json --resolver-url http://10.233.1.53/resolve --system-fallback false --ip-family ipv4 \
  --allow-destination 10.233.0.0/16 --max-connections 64 --threads 1 >"$work/access.log" 2>"$work/proxy-loop.log" &
proxy_pid=$!
pids_to_stop+=("$proxy_pid")
if wait_until 20 admin /healthz; then
  body="$(in_app curl -sS --max-time 10 http://origin.test/loop 2>&1 || true)"
  if wait_until 5 grep -q 'redirection loop' "$work/proxy-loop.log" && [ "$(stat accepted)" -le 16 ] \
    && grep -q '"error":"the proxy.s own connection to [^"]* was redirected back to it' "$work/access.log"; then
    pass "the proxy's own connections redirected back to it are refused and logged, no loop ($(stat accepted) accepts; the app saw: ${body:0:60})"
  else
    fail "own connections redirected back: $(stat accepted) accepts"; grep -c . "$work/access.log"; tail -3 "$work/proxy-loop.log"
  fi
else
  fail "proxy (loop check) did not start"; tail -5 "$work/proxy-loop.log"
fi
kill -TERM "$proxy_pid"; wait "$proxy_pid" || true

if ip netns exec "$POD" "$binary" transparent-rules --remove --apply 2>/dev/null \
  && ! ip netns exec "$POD" iptables -w -t nat -S | grep -q HTTPDNS_PROXY; then
  pass "transparent-rules --remove --apply takes the rules away"
else
  fail "rules removal"
fi

say "transparent netns test: $checks_passed passed, $checks_failed failed"
[ "$checks_failed" -eq 0 ]
