#!/usr/bin/env python3
"""Steady yardsticks for the forward path (issue 22, item 5). Loopback only; every load bounded.

(a) CPU per 1 KiB request on ONE kept-alive connection, with origin, proxy and client all pinned
    to one core (taskset -c CORE), read from the proxy's own CPU clock (schedstat, nanoseconds,
    every thread). Targets alternate round by round (the first one rotates), so slow drifts of
    the machine hit every target alike. On this 2-core machine it holds to about +-2 %, where
    multi-core figures swing +-20-30 %.
(b) System calls per request: strace -f -c attached to the proxy (all threads / worker
    processes) for a bounded run; total calls / requests. Exact up to the few calls of the
    attach itself.
(c) With --mallocs: heap allocations per request of each httpdns-proxy binary, counted by
    bench/malloc_count.c (LD_PRELOAD, counters in a shared file mapping read before and after a
    bounded load; start-up is outside the difference). Exact for a given binary and load.

(d) With --floor PATH: the same CPU figure for Benchmarks/NIOFloor (target nio-relay), a SwiftNIO
    byte relay that parses nothing and makes the same system calls per request. It is the floor
    under any forward path built on SwiftNIO; "above nio-relay" is what the proxy's HTTP work costs.
    Target nio-http-relay is the same relay with NIO's HTTP/1 codec on both sides (llhttp decoders,
    NIO's encoders, parts handed across unchanged): what parsing and re-serializing with NIOHTTP1
    costs before any work of the proxy's own. Target nio-byte-relay scans heads with a scanner of
    its own, one handler per side, and copies the kept field lines as byte ranges (plus Host and
    Via): the floor under a forward path with its own HTTP/1 parser.

Targets: one or two httpdns-proxy binaries (--bin NAME=PATH, repeatable: e.g. base=... head=...)
and nginx as a keep-alive proxy (1 worker: the same single core). Started by bench/pinned.sh.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
from harness import free_port, process_tree as tree  # noqa: E402  (the harness's /proc helpers)


def log(msg):
    sys.stderr.write("[pinned %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def wait_port(port, proc, deadline=20.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit("a server exited (status %s) before listening on %d" % (proc.returncode, port))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing listens on 127.0.0.1:%d" % port)


def cpu_ns(pid):
    """On-CPU nanoseconds of every thread of the process tree (schedstat's first field)."""
    total = 0
    for p in tree(pid):
        try:
            for task in os.listdir("/proc/%d/task" % p):
                total += int(Path("/proc/%d/task/%s/schedstat" % (p, task)).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def nginx_conf(d, body, workers=1):
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {d}/tmp-body;
    proxy_temp_path {d}/tmp-proxy;
    fastcgi_temp_path {d}/tmp-fastcgi;
    uwsgi_temp_path {d}/tmp-uwsgi;
    scgi_temp_path {d}/tmp-scgi;
{body}}}
"""


class Run:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.procs = []
        self.pin = ["taskset", "-c", str(args.core)]

    def start(self, argv, name, env=None):
        logf = open(self.workdir / ("%s.log" % name), "ab")
        proc = subprocess.Popen(self.pin + argv, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
        self.procs.append(proc)
        return proc

    def stop_all(self):
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)

    def origin(self):
        d = self.workdir / "origin"
        (d / "www").mkdir(parents=True)
        (d / "www" / "1k").write_bytes(os.urandom(1024))
        os.chmod(self.workdir, 0o755)
        for p in (d, d / "www"):
            os.chmod(p, 0o755)
        port = free_port()
        (d / "nginx.conf").write_text(nginx_conf(d, f"    server {{ listen 127.0.0.1:{port}; root {d / 'www'}; }}\n"))
        proc = self.start(["nginx", "-p", str(d), "-e", str(d / "error.log"), "-c", str(d / "nginx.conf")], "origin")
        wait_port(port, proc)
        return port

    def nginx_proxy(self, origin):
        # Like for like: with --access-log on, nginx logs every request too (its default, unbuffered
        # combined format: one write per request, as httpdns-proxy under this light load).
        log = "        access_log %s;\n" % (self.workdir / "nginx-proxy-access.log") if self.args.access_log == "on" else ""
        d = self.workdir / "nginx-proxy"
        d.mkdir()
        os.chmod(d, 0o777)
        port = free_port()
        (d / "nginx.conf").write_text(nginx_conf(d, f"""    upstream o {{ server 127.0.0.1:{origin}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{ proxy_pass http://o; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $http_host; }}
{log}    }}
"""))
        proc = self.start(["nginx", "-p", str(d), "-e", str(d / "error.log"), "-c", str(d / "nginx.conf")], "nginx-proxy")
        wait_port(port, proc)
        return proc, port

    def malloc_counter(self):
        """Builds bench/malloc_count.c once; returns (shared object, env for a counted process)."""
        lib = self.workdir / "malloc_count.so"
        if not lib.exists():
            subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(BENCH_DIR / "malloc_count.c")], check=True)
        return lib

    def mallocs(self, path, port, origin, seconds):
        """Allocations per request: (calls of malloc+calloc+realloc+aligned, requests, split)."""
        def read():
            raw = path.read_bytes()[:32]
            return [int.from_bytes(raw[i:i + 8], "little") for i in range(0, 32, 8)]
        before = read()
        result = self.wrk(port, origin, seconds)
        after = read()
        delta = [a - b for a, b in zip(after, before)]
        return sum(delta), result["requests"], dict(zip(["malloc", "calloc", "realloc", "aligned"], delta))

    def httpdns_proxy(self, name, binary, env=None):
        port = free_port()
        log_path = self.workdir / ("%s-access.log" % name)
        argv = [binary, "--listen", "127.0.0.1:%d" % port, "--admin-listen", "127.0.0.1:0",
                "--provider", "system", "--threads", "1", "--allow-destination", "127.0.0.0/8",
                "--network-monitor", "false", "--log-level", "warning",
                "--access-log", str(log_path) if self.args.access_log == "on" else "off"]
        proc = self.start(argv + self.args.proxy_arg, name, env=env)
        wait_port(port, proc)
        return proc, port

    def floor(self, binary, origin, mode=None):
        port = free_port()
        proc = self.start([binary] + (["--" + mode] if mode else []) + [str(port), str(origin)],
                          {None: "nio-relay", "http": "nio-http-relay", "bytes": "nio-byte-relay"}[mode])
        wait_port(port, proc)
        return proc, port

    def wrk(self, proxy_port, origin, seconds):
        env = dict(os.environ, BENCH_TARGET="http://127.0.0.1:%d/1k" % origin, BENCH_HOST="127.0.0.1:%d" % origin)
        res = subprocess.run(self.pin + ["wrk", "-t1", "-c1", "-d%ds" % seconds, "-s", str(BENCH_DIR / "absolute.lua"),
                                         "http://127.0.0.1:%d" % proxy_port],
                             capture_output=True, text=True, env=env, timeout=seconds + 30)
        m = re.search(r"BENCH_JSON (\{.*\})", res.stdout)
        if not m:
            raise SystemExit("wrk printed no result: %s %s" % (res.stdout[-400:], res.stderr[-400:]))
        out = json.loads(m.group(1))
        errors = sum(out["errors"].values())
        if errors:
            raise SystemExit("wrk saw %d errors through port %d" % (errors, proxy_port))
        return out

    def syscalls(self, proc, proxy_port, origin, seconds):
        """(calls, requests, per-call counts) with strace attached to every thread and worker."""
        out = self.workdir / ("strace-%d.txt" % proc.pid)
        pids = [str(p) for p in tree(proc.pid)]
        argv = ["strace", "-f", "-c", "-o", str(out)]
        for p in pids:
            argv += ["-p", p]
        tracer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # let strace attach to every thread before the load starts
        result = self.wrk(proxy_port, origin, seconds)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(30)
        calls, per = 0, {}
        for line in out.read_text().splitlines():
            cols = line.split()
            if len(cols) >= 5 and cols[0][0].isdigit() and cols[-1] != "total":
                try:
                    n = int(cols[3])
                except ValueError:
                    continue
                per[cols[-1]] = n
                calls += n
        return calls, result["requests"], per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH of an httpdns-proxy binary (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--strace-duration", type=int, default=3)
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--access-log", choices=["on", "off"], default="on")
    ap.add_argument("--proxy-arg", action="append", default=[], help="extra httpdns-proxy argument (repeatable)")
    ap.add_argument("--mallocs", action="store_true", help="also count heap allocations per request (glibc, gcc)")
    ap.add_argument("--floor", metavar="PATH", help="the nio-floor binary (Benchmarks/NIOFloor), measured as three targets: "
                    "nio-relay (a SwiftNIO byte relay that parses nothing: what the event loop and the kernel cost before "
                    "any HTTP work), nio-http-relay (the same through NIOHTTP1) and nio-byte-relay (the same with a head "
                    "scanner of its own)")
    ap.add_argument("--out", default=str(BENCH_DIR / "out" / "pinned.json"))
    args = ap.parse_args()
    bins = [b.split("=", 1) for b in args.bin]
    workdir = Path(tempfile.mkdtemp(prefix="pinned-"))
    run = Run(args, workdir)

    def on_signal(signum, _):
        raise SystemExit("interrupted")
    signal.signal(signal.SIGTERM, on_signal)
    try:
        origin = run.origin()
        targets = {}
        for name, path in bins:
            targets[name] = run.httpdns_proxy(name, path)
        targets["nginx-proxy"] = run.nginx_proxy(origin)
        if args.floor:
            targets["nio-relay"] = run.floor(args.floor, origin)
            targets["nio-http-relay"] = run.floor(args.floor, origin, "http")
            targets["nio-byte-relay"] = run.floor(args.floor, origin, "bytes")
        names = list(targets)
        for name in names:  # warm up: connections, pools, caches
            run.wrk(targets[name][1], origin, 1)
        per_request = {name: [] for name in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                proc, port = targets[name]
                before = cpu_ns(proc.pid)
                result = run.wrk(port, origin, args.duration)
                used = cpu_ns(proc.pid) - before
                per_request[name].append(used / 1000.0 / result["requests"])
                log("round %d %-12s %8d requests  %.2f us/request" % (r + 1, name, result["requests"], per_request[name][-1]))
        sys_per = {}
        for name in names:
            proc, port = targets[name]
            calls, requests, per = run.syscalls(proc, port, origin, args.strace_duration)
            top = sorted(per.items(), key=lambda kv: -kv[1])[:6]
            sys_per[name] = {"calls": calls, "requests": requests, "per_request": calls / max(1, requests),
                             "top": {k: round(v / max(1, requests), 2) for k, v in top}}
            log("syscalls %-12s %.2f per request (%s)" % (name, sys_per[name]["per_request"],
                                                          ", ".join("%s %.2f" % kv for kv in sys_per[name]["top"].items())))
        malloc_per = {}
        if args.mallocs:
            lib = run.malloc_counter()
            for name, path in bins:
                counters = workdir / ("%s.mallocs" % name)
                env = dict(os.environ, LD_PRELOAD=str(lib), MALLOC_COUNT_FILE=str(counters))
                proc, port = run.httpdns_proxy(name + "-mallocs", path, env=env)
                run.wrk(port, origin, 1)  # warm up
                calls, requests, split = run.mallocs(counters, port, origin, args.strace_duration)
                malloc_per[name] = {"calls": calls, "requests": requests, "per_request": calls / max(1, requests),
                                    "split": {k: round(v / max(1, requests), 2) for k, v in split.items()}}
                log("mallocs  %-12s %.2f per request (%s)" % (name, malloc_per[name]["per_request"],
                                                              ", ".join("%s %.2f" % kv for kv in malloc_per[name]["split"].items())))
    finally:
        run.stop_all()
    anchor = statistics.median(per_request["nginx-proxy"])
    floor = statistics.median(per_request["nio-relay"]) if "nio-relay" in per_request else None
    print("| target | CPU µs per 1 KiB request, one connection, one core (median of %d) | ÷ nginx-proxy |%s runs | syscalls per request |"
          % (args.rounds, " above nio-relay (µs) |" if floor else ""))
    print("| --- | --- | --- |%s --- | --- |" % (" --- |" if floor else ""))
    for name in names:
        med = statistics.median(per_request[name])
        above = " %.2f |" % (med - floor) if floor else ""
        print("| %s | %.2f | %.2f× |%s %s | %.2f |" % (name, med, med / anchor, above, ", ".join("%.2f" % v for v in per_request[name]),
                                                   sys_per[name]["per_request"]))
    for name in malloc_per:
        print("| %s | heap allocations per request: %.2f |" % (name, malloc_per[name]["per_request"]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"per_request_us": per_request, "syscalls": sys_per, "mallocs": malloc_per,
                                          "args": {k: v for k, v in vars(args).items() if k != "out"}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
