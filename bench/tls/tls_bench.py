#!/usr/bin/env python3
"""TLS origination figures for docs/benchmarks.md (issue 5). Loopback only, bounded in time.

Starts nginx as an HTTPS origin on 127.0.0.1 (certificate with an IP SAN, issued by a CA made
here with the openssl CLI) and the release httpdns-proxy, then drives absolute-form
`GET https://127.0.0.1:PORT/1k` through the proxy with wrk:

  pooled      keep-alive upstream TLS connections (default pool)
  new+resume  --pool-max-idle 0: a new upstream TLS connection per request, session resumed
  new+full    --pool-max-idle 0 against a server with resumption off: a full handshake each time
  plain       absolute-form http:// through the pool, for reference

(each `--repeat` times, the median run reported),
and, for the handshake time, a sequential run (wrk -c1) per server with the access log in a
file: the median and p90 of `tls_ms` of resumed and of full handshakes.

Every process started here gets its own process group and is killed on exit.
"""
import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def log(msg):
    sys.stderr.write("[tls-bench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("process %s exited early (status %s)" % (proc.args[0], proc.returncode))
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit("nothing listening on port %d after %ds" % (port, timeout))


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, argv, logfile, stdout=None):
        out = open(logfile, "ab")
        proc = subprocess.Popen(argv, stdout=stdout or out, stderr=out, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self, proc):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)

    def stop_all(self):
        for proc in reversed(self.procs):
            self.stop(proc)


def run(argv, timeout, env=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True,
                          env=dict(os.environ, **(env or {})))


def make_certificates(d):
    ext = d / "leaf.ext"
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"),
         "-days", "2", "-subj", "/CN=tls-bench CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"], 30)
    run(["openssl", "req", *ec, "-keyout", str(d / "leaf.key"), "-out", str(d / "leaf.csr"),
         "-subj", "/CN=127.0.0.1"], 30)
    run(["openssl", "x509", "-req", "-in", str(d / "leaf.csr"), "-CA", str(d / "ca.pem"),
         "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", str(ext),
         "-out", str(d / "leaf.pem")], 30)


def start_nginx(procs, d, ports):
    body = "x" * 1024
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    servers = ""
    for name, tls, resume in (("resume", True, True), ("full", True, False), ("plain", False, False)):
        if tls:
            session = ("ssl_session_tickets on; ssl_session_cache shared:%s:1m;" % name) if resume \
                else "ssl_session_tickets off; ssl_session_cache off;"
            listen = "listen 127.0.0.1:%d ssl; ssl_certificate %s; ssl_certificate_key %s; " \
                     "ssl_protocols TLSv1.2 TLSv1.3; %s" % (ports[name], d / "leaf.pem", d / "leaf.key", session)
        else:
            listen = "listen 127.0.0.1:%d;" % ports[name]
        servers += "server { %s keepalive_requests 1000000; location = /1k { return 200 \"%s\"; } }\n" % (listen, body)
    (d / "nginx.conf").write_text(
        "%sworker_processes 1;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
        "events { worker_connections 4096; }\nhttp { access_log off; %s}\n" % (user, d, d, servers))
    os.chmod(d, 0o755)
    proc = procs.start(["nginx", "-p", str(d), "-e", str(d / "error.log"), "-c", str(d / "nginx.conf")], d / "nginx.log")
    for name in ports:
        wait_port(ports[name], proc)
    return proc


def start_proxy(procs, binary, d, tag, extra):
    port, admin = free_port(), free_port()
    access = d / ("access-%s.log" % tag)
    argv = [str(binary), "--listen", "127.0.0.1:%d" % port, "--admin-listen", "127.0.0.1:%d" % admin,
            "--provider", "system", "--allow-destination", "127.0.0.0/8", "--ca-file", str(d / "ca.pem"),
            "--log-level", "warning", "--threads", "1"] + extra
    argv += ["--access-log", str(access)] if "--access-log" not in extra else []
    proc = procs.start(argv, d / ("proxy-%s.log" % tag))
    wait_port(port, proc)
    return proc, port, access


def wrk(port, target, host, duration, connections):
    res = run(["wrk", "-t1", "-c%d" % connections, "-d%ds" % duration, "--timeout", "5s",
               "-s", str(HERE / "request.lua"), "http://127.0.0.1:%d" % port], duration + 30,
              env={"BENCH_TARGET": target, "BENCH_HOST": host})
    line = next(l for l in res.stdout.splitlines() if l.startswith("BENCH_JSON "))
    data = json.loads(line[len("BENCH_JSON "):])
    data["rps"] = data["requests"] / (data["duration_us"] / 1e6)
    if data["errors"] or data["status_errors"]:
        raise SystemExit("wrk saw errors: %s" % data)
    return data


def tls_times(access, resumed):
    values = []
    for line in access.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("status") == 200 and entry.get("tls_resumed") is resumed and entry.get("tls_ms") is not None:
            values.append(entry["tls_ms"])
    if not values:
        raise SystemExit("no %s handshakes in %s" % ("resumed" if resumed else "full", access))
    values.sort()
    return {"count": len(values), "p50_ms": statistics.median(values),
            "p90_ms": values[int(0.9 * (len(values) - 1))]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proxy-bin", default=str(REPO / ".build-tls/release/httpdns-proxy"))
    parser.add_argument("--duration", type=int, default=5, help="seconds per throughput run (default 5)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    parser.add_argument("--repeat", type=int, default=1, help="throughput runs per case; the median is reported (default 1)")
    parser.add_argument("--handshake-seconds", type=int, default=3, help="length of each sequential run (default 3)")
    args = parser.parse_args()
    binary = Path(args.proxy_bin)
    for tool in ("nginx", "wrk", "openssl"):
        if shutil.which(tool) is None:
            raise SystemExit("%s is required (apt-get install -y nginx wrk openssl)" % tool)
    if not binary.is_file():
        raise SystemExit("no proxy binary at %s: swift build -c release --scratch-path .build-tls --product httpdns-proxy" % binary)

    d = Path(tempfile.mkdtemp(prefix="tls-bench-"))
    procs = Procs()
    try:
        make_certificates(d)
        ports = {"resume": free_port(), "full": free_port(), "plain": free_port()}
        start_nginx(procs, d, ports)
        log("nginx: resumable TLS on %(resume)d, TLS without resumption on %(full)d, plain on %(plain)d" % ports)

        def https(name):
            host = "127.0.0.1:%d" % ports[name]
            return "https://%s/1k" % host, host

        results = {}
        runs = [
            ("pooled", [], "resume", "https"),
            ("new+resume", ["--pool-max-idle", "0"], "resume", "https"),
            ("new+full", ["--pool-max-idle", "0"], "full", "https"),
            ("plain", [], "plain", "http"),
        ]
        for tag, extra, server, scheme in runs:
            proxy, port, _ = start_proxy(procs, binary, d, tag, extra + ["--access-log", "off"])
            host = "127.0.0.1:%d" % ports[server]
            target = "%s://%s/1k" % (scheme, host)
            wrk(port, target, host, 1, args.connections)  # warm-up
            samples = sorted((wrk(port, target, host, args.duration, args.connections) for _ in range(args.repeat)),
                             key=lambda r: r["rps"])
            results[tag] = samples[len(samples) // 2]  # the median run
            log("%-10s %8.0f req/s  p50 %d us  p99 %d us" % (tag, results[tag]["rps"], results[tag]["p50_us"], results[tag]["p99_us"]))
            procs.stop(proxy)

        handshakes = {}
        for name, resumed in (("resume", True), ("full", False)):
            proxy, port, access = start_proxy(procs, binary, d, "hs-" + name, ["--pool-max-idle", "0"])
            target, host = https(name)
            wrk(port, target, host, args.handshake_seconds, 1)
            procs.stop(proxy)
            handshakes[name] = tls_times(access, resumed)
            log("handshake %-6s %s" % (name, handshakes[name]))

        pooled = results["pooled"]["rps"]
        print("| run (%d connections, 1 KiB body) | requests/s | vs pooled | p50 latency |" % args.connections)
        print("| --- | ---: | ---: | ---: |")
        labels = {
            "pooled": "`https://`, pooled upstream TLS (keep-alive)",
            "new+resume": "`https://`, pool off: new TLS connection per request, resumed",
            "new+full": "`https://`, pool off: new TLS connection per request, full handshake",
            "plain": "`http://`, pooled (reference)",
        }
        for tag, _, _, _ in runs:
            r = results[tag]
            print("| %s | %.0f | %.2f | %.2f ms |" % (labels[tag], r["rps"], r["rps"] / pooled, r["p50_us"] / 1000))
        print()
        full, resumed = handshakes["full"], handshakes["resume"]
        print("| handshake (sequential, pool off) | count | p50 `tls_ms` | p90 `tls_ms` |")
        print("| --- | ---: | ---: | ---: |")
        print("| full | %d | %.3f ms | %.3f ms |" % (full["count"], full["p50_ms"], full["p90_ms"]))
        print("| resumed | %d | %.3f ms | %.3f ms |" % (resumed["count"], resumed["p50_ms"], resumed["p90_ms"]))
        print()
        print("resumed / full handshake time (p50): %.2f" % (resumed["p50_ms"] / full["p50_ms"]))
        print("machine: %s, %d CPUs, %s; %s; %s" % (
            platform.platform(), os.cpu_count(), platform.processor() or platform.machine(),
            run(["nginx", "-v"], 10).stderr.strip(), run(["openssl", "version"], 10).stdout.strip()))
    finally:
        procs.stop_all()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
