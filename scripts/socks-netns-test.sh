#!/usr/bin/env bash
# shellcheck disable=SC2015  # `[ check ] && pass ... || fail ...`: pass only counts and prints, so it is if/else
# Real SOCKS and TLS-listener clients against the proxy while the app's /etc/hosts lies (run by
# `swift test` as root, NamespaceScenarioTests): the app and the proxy in namespaces of their own
# (scripts/netns-lib.sh), both with an /etc/hosts that maps origin.test to 10.231.2.99, where
# nothing listens. The proxy resolves from a local static list (--provider static,
# --system-fallback false): origin.test -> the origin, 10.231.2.2. Each client must reach the
# origin through the proxy's answer, never the lie:
#
#   curl --socks5-hostname and --socks4a, Python requests with socks5h:// (PySocks), git clone over
#   ALL_PROXY=socks5h://, headless Chromium with --proxy-server=socks5://, and curl --socks5 (the
#   app resolves the name itself, gets the lie, and the proxy's --socks-sniff steers the CONNECT
#   by the request's Host); and over the TLS listener (--tls-listen, a certificate made here):
#   curl -x https:// with --proxy-cacert, for HTTP and CONNECT, and headless Chromium with
#   --proxy-server=https:// (trusting the certificate by its key).
#
#   bash scripts/socks-netns-test.sh PATH/TO/httpdns-proxy
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh

binary="${1:?usage: socks-netns-test.sh PATH/TO/httpdns-proxy}"
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
[ -x "$binary" ] || { echo "socks-netns-test: $binary is not executable" >&2; exit 1; }
if ! reason="$(netns_available)"; then skip_all "SOCKS netns test" "$reason"; fi
for tool in curl git python3 openssl; do
  command -v "$tool" >/dev/null 2>&1 || skip_all "SOCKS netns test" "$tool is missing (scripts/ensure-deps.sh --with-test-tools)"
done
python3 -c 'import requests, socks' 2>/dev/null \
  || skip_all "SOCKS netns test" "python3 requests with PySocks is missing (scripts/ensure-deps.sh --with-test-tools)"
chromium="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$chromium" ] || skip_all "SOCKS netns test" "chromium is missing (scripts/ensure-deps.sh --with-test-tools)"

lie=10.231.2.99
work="$(mktemp -d)"
netns_setup "s$$"
# ip netns exec bind-mounts /etc/netns/NAME/hosts over /etc/hosts inside the namespace.
for ns in "$NS_APP" "$NS_PROXY"; do
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1 localhost\n%s origin.test\n' "$lie" >"/etc/netns/$ns/hosts"
done
trap 'netns_cleanup; rm -rf "$work" ${NS_APP:+"/etc/netns/$NS_APP"} ${NS_PROXY:+"/etc/netns/$NS_PROXY"}' EXIT
say "SOCKS netns test: app $NS_APP_ADDR -> proxy $NS_PROXY_ADDR:8080 -> origin $NS_ORIGIN_ADDR (/etc/hosts: origin.test $lie)"

start_origin "$work/release" "$work/origin.log"
# A bare repository for git, served as files (git's dumb HTTP protocol) on port 8001.
mkdir -p "$work/www" "$work/src"
git -C "$work/src" init -q -b main
printf 'through the proxy\n' >"$work/src/README"
git -C "$work/src" add README
git -C "$work/src" -c user.name=test -c user.email=test@localhost commit -q -m one
git clone -q --bare "$work/src" "$work/www/repo.git"
git -C "$work/www/repo.git" update-server-info
chmod -R a+rX "$work"
ip netns exec "$NS_ORIGIN" python3 -m http.server 8001 --bind "$NS_ORIGIN_ADDR" --directory "$work/www" \
  >"$work/files.log" 2>&1 &
pids_to_stop+=("$!")
wait_until 10 ip netns exec "$NS_ORIGIN" curl -fsS -o /dev/null --max-time 1 "http://$NS_ORIGIN_ADDR:8001/repo.git/HEAD" \
  || { fail "the file server did not start"; cat "$work/files.log"; exit 1; }

# The TLS listener's certificate, for the proxy's address; Chromium trusts it by its key's hash.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/proxy.key" -out "$work/proxy.pem" \
  -days 2 -subj "/CN=$NS_PROXY_ADDR" -addext "subjectAltName=IP:$NS_PROXY_ADDR" 2>/dev/null
spki="$(openssl x509 -pubkey -noout -in "$work/proxy.pem" | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)"

printf '{"service":"socks-netns-test","enable":1,"domainlist":[{"domain":"origin.test","ips":["%s"]}]}\n' \
  "$NS_ORIGIN_ADDR" >"$work/domains.json"
ip netns exec "$NS_PROXY" "$binary" serve \
  --listen "$NS_PROXY_ADDR:8080" --admin-listen 127.0.0.1:8081 \
  --provider static --static-list "$work/domains.json" --system-fallback false --ip-family ipv4 \
  --allow-destination "$NS_ORIGIN_NET" --connect-ports 8000,8001 --socks-sniff true \
  --tls-listen "$NS_PROXY_ADDR:8443" --tls-cert "$work/proxy.pem" --tls-key "$work/proxy.key" \
  >"$work/access.log" 2>"$work/proxy.log" &
pids_to_stop+=("$!")
list_loaded() { grep -q '"message":"static list loaded"' "$work/proxy.log"; }
if wait_until 20 list_loaded; then pass "proxy started (mixed port, --socks-sniff true, --tls-listen)"; else
  fail "proxy did not start"; cat "$work/proxy.log"; exit 1
fi

in_app() { ip netns exec "$NS_APP" env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy -u no_proxy -u NO_PROXY "$@"; }
proxy="$NS_PROXY_ADDR:8080"
hello="hello from origin"

seen="$(in_app getent hosts origin.test | awk '{print $1}' || true)"
[ "$seen" = "$lie" ] && pass "the app's /etc/hosts lies: origin.test -> $seen" || fail "getent in the app: '$seen'"

body="$(in_app curl -sS --max-time 10 --socks5-hostname "$proxy" http://origin.test:8000/hello 2>&1 || true)"
[ "$body" = "$hello" ] && pass "curl --socks5-hostname: '$body'" || fail "curl --socks5-hostname: '$body'"

body="$(in_app curl -sS --max-time 10 --socks4a "$proxy" http://origin.test:8000/hello 2>&1 || true)"
[ "$body" = "$hello" ] && pass "curl --socks4a: '$body'" || fail "curl --socks4a: '$body'"

body="$(in_app python3 -c 'import sys, requests
r = requests.get("http://origin.test:8000/hello", proxies={"http": sys.argv[1], "https": sys.argv[1]}, timeout=10)
print(r.status_code, r.text.strip())' "socks5h://$proxy" 2>&1 || true)"
[ "$body" = "200 $hello" ] && pass "Python requests with socks5h://: '$body'" || fail "Python requests: '$body'"

if in_app env ALL_PROXY="socks5h://$proxy" HOME="$work" git clone -q http://origin.test:8001/repo.git "$work/clone" 2>"$work/git.err" \
  && [ "$(cat "$work/clone/README")" = "through the proxy" ]; then
  pass "git clone http://origin.test:8001/repo.git with ALL_PROXY=socks5h://: README '$(cat "$work/clone/README")'"
else
  fail "git clone over ALL_PROXY: $(tr '\n' ' ' <"$work/git.err")"
fi

tls_proxy="https://$NS_PROXY_ADDR:8443"
body="$(in_app curl -sS --max-time 10 -x "$tls_proxy" --proxy-cacert "$work/proxy.pem" http://origin.test:8000/hello 2>&1 || true)"
[ "$body" = "$hello" ] && pass "curl -x https:// (TLS listener), HTTP: '$body'" || fail "curl -x https://, HTTP: '$body'"
body="$(in_app curl -sS --max-time 10 -p -x "$tls_proxy" --proxy-cacert "$work/proxy.pem" http://origin.test:8000/hello 2>&1 || true)"
[ "$body" = "$hello" ] && pass "curl -p -x https:// (TLS listener), CONNECT: '$body'" || fail "curl -p -x https://, CONNECT: '$body'"

mkdir -p "$work/chromium-tls"
dom="$(in_app env HOME="$work/chromium-tls" "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --disable-default-apps \
  --disable-extensions --disable-breakpad --no-pings --user-data-dir="$work/chromium-tls" \
  --proxy-server="$tls_proxy" --ignore-certificate-errors-spki-list="$spki" \
  --virtual-time-budget=3000 --dump-dom http://origin.test:8000/hello 2>"$work/chromium-tls.err" || true)"
case "$dom" in
  *"$hello"*) pass "headless Chromium --proxy-server=https:// (TLS listener): the page says '$hello'" ;;
  *) fail "Chromium over https://: '$(printf '%s' "$dom" | head -c 300)' $(tail -n 3 "$work/chromium-tls.err")" ;;
esac

mkdir -p "$work/chromium"
dom="$(in_app env HOME="$work/chromium" "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --disable-default-apps \
  --disable-extensions --disable-breakpad --no-pings --user-data-dir="$work/chromium" \
  --proxy-server="socks5://$proxy" --virtual-time-budget=3000 --dump-dom http://origin.test:8000/hello 2>"$work/chromium.err" || true)"
case "$dom" in
  *"$hello"*) pass "headless Chromium --proxy-server=socks5://: the page says '$hello'" ;;
  *) fail "Chromium: '$(printf '%s' "$dom" | head -c 300)' $(tail -n 3 "$work/chromium.err")" ;;
esac

# socks5:// (not socks5h): curl resolves origin.test itself, from the lying /etc/hosts, and asks
# the proxy for 10.231.2.99; the sniffed Host steers the dial to the static list's answer.
body="$(in_app curl -sS --max-time 10 --socks5 "$proxy" http://origin.test:8000/hello 2>&1 || true)"
[ "$body" = "$hello" ] && pass "curl --socks5 to the lie ($lie), steered by --socks-sniff: '$body'" || fail "curl --socks5 (sniff): '$body'"
if wait_until 5 grep -q "\"original_dst\":\"$lie:8000\".*\"peek\":\"http_host\"" "$work/access.log"; then
  pass "access log: original_dst $lie:8000, peek http_host"
else
  fail "no access-log record of the sniffed CONNECT"; tail -n 5 "$work/access.log"
fi

# Every tunnel dialed the origin's real address, none the lie.
if grep -q "\"ip\":\"$lie\"" "$work/access.log"; then fail "a tunnel dialed the lie"; else
  pass "no tunnel dialed $lie; $(grep -c "\"ip\":\"$NS_ORIGIN_ADDR\"" "$work/access.log") dialed $NS_ORIGIN_ADDR"
fi

say "SOCKS netns test: $checks_passed checks passed, $checks_failed failed"
if [ "$checks_failed" -ne 0 ]; then
  say "--- proxy log"; tail -n 30 "$work/proxy.log"
  say "--- access log"; tail -n 30 "$work/access.log"
  exit 1
fi
