#!/usr/bin/env bash
# Regenerates docs/img/admin-page.png from today's binary, so the picture in docs/operations.md
# stays true: starts httpdns-proxy with --provider static (names mapped to loopback; nothing is
# resolved anywhere else, system fallback off), two loopback origins, makes some traffic and a few
# errors (a refused connect, a name not in the list, a destination the SSRF guard refuses), keeps
# traffic going while headless Chromium loads the admin page, and saves its screenshot.
#
#   scripts/admin-screenshot.sh [OUTPUT.png]      (default docs/img/admin-page.png)
#
# HTTPDNS_PROXY_BIN: the binary to use (default: a debug build, built first). Needs python3, curl
# and chromium (scripts/ensure-deps.sh --with-test-tools installs them). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/img/admin-page.png}"

chromium="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$chromium" ]; then
  echo "chromium is not installed: run scripts/ensure-deps.sh --with-test-tools (as root)" >&2
  exit 1
fi
bin="${HTTPDNS_PROXY_BIN:-}"
if [ -z "$bin" ]; then
  swift build --product httpdns-proxy >&2
  bin="$(swift build --show-bin-path)/httpdns-proxy"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Loopback origins on free ports: each answers every GET with a short text.
cat >"$work/origin.py" <<'EOF'
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the origin\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer((sys.argv[1], 0), Handler)
with open(sys.argv[2], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
EOF
wait_for_file() {
  for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2
  return 1
}
python3 "$work/origin.py" 127.0.0.1 "$work/port1" & pids+=($!)
python3 "$work/origin.py" 127.0.0.2 "$work/port2" & pids+=($!)
wait_for_file "$work/port1"
wait_for_file "$work/port2"
port1="$(cat "$work/port1")"
port2="$(cat "$work/port2")"
closed="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

cat >"$work/domains.json" <<'EOF'
{"service": "screenshot", "enable": 1,
 "domainlist": [{"domain": "shop.example.test", "ips": ["127.0.0.1"]},
                {"domain": "api.example.test", "ips": ["127.0.0.2"]},
                {"domain": "down.example.test", "ips": ["127.0.0.1"]}]}
EOF

"$bin" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --provider static --static-list "$work/domains.json" \
  --system-fallback false --allow-destination 127.0.0.0/8 --network-monitor false --access-log off --log-format json \
  2>"$work/proxy.log" & pids+=($!)
for _ in $(seq 100); do
  grep -q '"admin listening"' "$work/proxy.log" 2>/dev/null && grep -q '"proxy listening"' "$work/proxy.log" && break
  sleep 0.1
done
address_of() { grep "\"$1\"" "$work/proxy.log" | head -1 | grep -o '"address":"[^"]*"' | cut -d'"' -f4; }
proxy="$(address_of "proxy listening")"
admin="$(address_of "admin listening")"
if [ -z "$proxy" ] || [ -z "$admin" ]; then
  echo "the proxy did not start:" >&2
  cat "$work/proxy.log" >&2
  exit 1
fi

fetch() { env -u http_proxy -u https_proxy -u no_proxy -u NO_PROXY curl -s -o /dev/null -x "http://$proxy" "$@" || true; }
for _ in $(seq 20); do
  fetch "http://shop.example.test:$port1/"
  fetch "http://api.example.test:$port2/v1/items"
done
fetch "http://down.example.test:$closed/"          # connect refused: 502 connect_failed
fetch "http://missing.example.test:$port1/"        # not in the list, no fallback: 502 resolve_failed
fetch "http://169.254.169.254/latest/meta-data/"   # SSRF guard: 403 destination_denied

# Traffic while the page refreshes, so the request and error rates and the chart have something
# to show: two good requests per round, and every tenth round one of the three errors above.
(
  round=0
  failing=("http://down.example.test:$closed/" "http://missing.example.test:$port1/" "http://169.254.169.254/")
  while true; do
    fetch "http://shop.example.test:$port1/"
    fetch "http://api.example.test:$port2/v1/items"
    round=$((round + 1))
    if [ $((round % 10)) -eq 0 ]; then fetch "${failing[$((round / 10 % 3))]}"; fi
    sleep 0.05
  done
) &
pids+=($!)

# Headless Chromium driven over the DevTools protocol on a pipe (no port, no extra packages): the
# page loads, refreshes for some seconds of real time (its rates are measured in real time, which
# --virtual-time-budget would compress), and is captured at 1280x1100. It reaches 127.0.0.1 only.
cat >"$work/screenshot.py" <<'EOF'
import base64, json, os, subprocess, sys, time
chromium, url, out, profile, seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()
def child_fds():
    # Chromium reads commands from fd 3 and writes answers to fd 4 (a pipe end may already be 3 or 4).
    read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)
    os.dup2(read_end, 3)
    os.dup2(write_end, 4)
args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--disable-extensions", "--disable-breakpad", "--disable-domain-reliability", "--no-pings", "--mute-audio",
        "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--user-data-dir=" + profile,
        "--hide-scrollbars", "--remote-debugging-pipe", "about:blank"]
proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False, env=dict(os.environ, HOME=profile),
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile, "stderr.log"), "w"))
os.close(to_chrome_r)
os.close(from_chrome_w)
pending = b""
last_id = 0
def call(method, params=None, session=None):
    global pending, last_id
    last_id += 1
    message = {"id": last_id, "method": method, "params": params or {}}
    if session:
        message["sessionId"] = session
    os.write(to_chrome_w, json.dumps(message).encode() + b"\0")
    while True:
        while b"\0" not in pending:
            chunk = os.read(from_chrome_r, 1 << 20)
            if not chunk:
                raise SystemExit("chromium closed the DevTools pipe")
            pending += chunk
        raw, pending = pending.split(b"\0", 1)
        reply = json.loads(raw)
        if reply.get("id") == last_id:
            if "error" in reply:
                raise SystemExit(f"{method}: {reply['error']}")
            return reply["result"]
try:
    target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 1100, "deviceScaleFactor": 1, "mobile": False}, session)
    call("Page.navigate", {"url": url}, session)
    time.sleep(seconds)
    shot = call("Page.captureScreenshot", {"format": "png"}, session)
    with open(out, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
finally:
    try:
        call("Browser.close")
    except (SystemExit, OSError):
        proc.kill()
    proc.wait(timeout=20)
EOF
profile="$work/chromium"
mkdir -p "$profile" "$(dirname "$out")"
python3 "$work/screenshot.py" "$chromium" "http://$admin/" "$(realpath -m "$out")" "$profile" 20 \
  || { cat "$profile/stderr.log" >&2; exit 1; }
echo "wrote $out" >&2
