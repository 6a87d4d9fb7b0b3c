"""One connection, one core: the steady yardsticks for the forward path.

(a) CPU per 1 KiB request on ONE kept-alive connection, with origin, proxy and client all pinned
    to one core (taskset -c CORE), read from the proxy's own CPU clock (schedstat, nanoseconds,
    every thread). Targets alternate round by round (the first one rotates), so slow drifts of
    the machine hit every target alike.
(b) System calls per request: strace -f -c attached to the proxy (all threads / worker
    processes) for a bounded run; total calls / requests. Exact up to the few calls of the
    attach itself.
(c) With --mallocs: heap allocations per request of each httpdns-proxy binary, counted by
    bench/peers/malloc_count.c (LD_PRELOAD, counters in a shared file mapping read before and
    after a bounded load; start-up is outside the difference). Exact for a binary and a load.
(d) With --floor: the same CPU figure for Benchmarks/NIOFloor, three targets: nio-relay (a
    SwiftNIO byte relay that parses nothing and makes the same system calls per request: the
    floor under any forward path built on SwiftNIO), nio-http-relay (the same relay with NIO's
    HTTP/1 codec on both sides) and nio-byte-relay (heads scanned by a scanner of its own, kept
    field lines copied as byte ranges: the floor under a forward path with its own parser).

Targets: one or more httpdns-proxy binaries (--bin NAME=PATH, repeatable; default: the release
build of the working tree as httpdns-proxy) and nginx as a keep-alive proxy (1 worker: the same
single core).
"""
import os
import signal
import subprocess
import time
from pathlib import Path

from .lib import mallocs as malloc_count
from .lib.peers import nginx_argv, nginx_conf_small
from .lib.proc import Fail, Processes, free_port, log, session, wait_port
from .lib.procfs import process_tree, tree_sched_ns
from .lib.results import Run, add_output_arguments, median, ratio
from .lib.tools import add_binary_arguments, build_product, proxy_binary, require_tools, revision_of
from .lib.wrk import script, wrk

FLOORS = {"nio-relay": None, "nio-http-relay": "http", "nio-byte-relay": "bytes"}


class Pinned:
    def __init__(self, workdir, core=0, access_log="on", proxy_args=()):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.workdir, 0o755)
        self.procs = Processes(self.workdir)
        self.pin = ["taskset", "-c", str(core)]
        self.access_log = access_log
        self.proxy_args = list(proxy_args)

    def start(self, name, argv, env=None):
        proc = self.procs.start(name, self.pin + argv, self.workdir / ("%s.log" % name), env=env)
        return proc

    def wait(self, name, port):
        wait_port(port, lambda: self.procs.check_alive(name), 20.0, name)

    def origin(self):
        d = self.workdir / "origin"
        (d / "www").mkdir(parents=True)
        (d / "www" / "1k").write_bytes(os.urandom(1024))
        for p in (d, d / "www"):
            os.chmod(p, 0o755)
        port = free_port()
        server = f"    server {{ listen 127.0.0.1:{port}; root {d / 'www'}; }}\n"
        (d / "nginx.conf").write_text(nginx_conf_small(d, server))
        self.start("origin", nginx_argv(d))
        self.wait("origin", port)
        return port

    def nginx_proxy(self, origin):
        # Like for like: with --access-log on, nginx logs every request too (its default, unbuffered
        # combined format: one write per request, as httpdns-proxy under this light load).
        access = ("        access_log %s;\n" % (self.workdir / "nginx-proxy-access.log")
                  if self.access_log == "on" else "")
        d = self.workdir / "nginx-proxy"
        d.mkdir()
        os.chmod(d, 0o777)
        port = free_port()
        body = f"""    upstream o {{ server 127.0.0.1:{origin}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{ proxy_pass http://o; proxy_http_version 1.1; proxy_set_header Connection "";
                     proxy_set_header Host $http_host; }}
{access}    }}
"""
        (d / "nginx.conf").write_text(nginx_conf_small(d, body))
        self.start("nginx-proxy", nginx_argv(d))
        self.wait("nginx-proxy", port)
        return port

    def httpdns_proxy(self, name, binary, env=None):
        port = free_port()
        log_path = self.workdir / ("%s-access.log" % name)
        argv = [binary, "--listen", "127.0.0.1:%d" % port, "--admin-listen", "127.0.0.1:0",
                "--provider", "system", "--threads", "1", "--allow-destination", "127.0.0.0/8",
                "--network-monitor", "false", "--log-level", "warning",
                "--access-log", str(log_path) if self.access_log == "on" else "off"]
        self.start(name, argv + self.proxy_args, env=env)
        self.wait(name, port)
        return port

    def floor(self, name, binary, origin):
        port = free_port()
        mode = FLOORS[name]
        self.start(name, [binary] + (["--" + mode] if mode else []) + [str(port), str(origin)])
        self.wait(name, port)
        return port

    def wrk(self, proxy_port, origin, seconds):
        env = {"BENCH_TARGET": "http://127.0.0.1:%d/1k" % origin, "BENCH_HOST": "127.0.0.1:%d" % origin}
        out = wrk(self.pin + ["wrk", "-t1", "-c1", "-d%ds" % seconds, "-s", script("absolute.lua"),
                              "http://127.0.0.1:%d" % proxy_port], env, seconds + 30)
        errors = sum(out["errors"].values())
        if errors:
            raise Fail("wrk saw %d errors through port %d" % (errors, proxy_port))
        return out

    def malloc_counter(self):
        """Builds bench/peers/malloc_count.c once; returns the shared object."""
        return malloc_count.build_counter(self.workdir)

    def mallocs(self, path, port, origin, seconds):
        """Allocations per request: (calls of malloc+calloc+realloc+aligned, requests, split)."""
        before = malloc_count.read_counters(path)
        result = self.wrk(port, origin, seconds)
        after = malloc_count.read_counters(path)
        delta = [a - b for a, b in zip(after, before, strict=True)]
        return sum(delta), result["requests"], dict(zip(["malloc", "calloc", "realloc", "aligned"], delta, strict=True))

    def syscalls(self, name, proxy_port, origin, seconds):
        """(calls, requests, per-call counts) with strace attached to every thread and worker."""
        pid = self.procs.pid(name)
        out = self.workdir / ("strace-%d.txt" % pid)
        argv = ["strace", "-f", "-c", "-o", str(out)]
        for p in process_tree(pid):
            argv += ["-p", str(p)]
        tracer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.0)  # let strace attach to every thread before the load starts
            result = self.wrk(proxy_port, origin, seconds)
        finally:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(30)
        calls, per = parse_strace_summary(out.read_text())
        return calls, result["requests"], per


def parse_strace_summary(text):
    """Total calls and calls per system call from `strace -c` output."""
    calls, per = 0, {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0][0].isdigit() and cols[-1] != "total":
            try:
                n = int(cols[3])
            except ValueError:
                continue
            per[cols[-1]] = n
            calls += n
    return calls, per


def measure(bins, rounds=5, duration=5, strace_duration=3, core=0, access_log="on", proxy_args=(),
            mallocs=False, floor=None, workdir=None):
    """The measurement; `bins` is [(name, httpdns-proxy binary)]. Returns per-target CPU µs per
    request of each round, system calls per request and allocations per request."""
    run = Pinned(workdir, core, access_log, proxy_args)
    try:
        origin = run.origin()
        targets = {}
        for name, path in bins:
            targets[name] = run.httpdns_proxy(name, path)
        targets["nginx-proxy"] = run.nginx_proxy(origin)
        if floor:
            for name in FLOORS:
                targets[name] = run.floor(name, floor, origin)
        names = list(targets)
        for name in names:  # warm up: connections, pools, caches
            run.wrk(targets[name], origin, 1)
        per_request = {name: [] for name in names}
        for r in range(rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                pid = run.procs.pid(name)
                before = tree_sched_ns(pid)
                result = run.wrk(targets[name], origin, duration)
                used = tree_sched_ns(pid) - before
                per_request[name].append(round(used / 1000.0 / result["requests"], 2))
                log("round %d %-14s %8d requests  %.2f us/request" % (r + 1, name, result["requests"],
                                                                      per_request[name][-1]))
        sys_per = {}
        for name in names:
            calls, requests, per = run.syscalls(name, targets[name], origin, strace_duration)
            top = sorted(per.items(), key=lambda kv: -kv[1])[:6]
            sys_per[name] = {"calls": calls, "requests": requests, "per_request": round(calls / max(1, requests), 3),
                             "top": {k: round(v / max(1, requests), 2) for k, v in top}}
            log("syscalls %-14s %.2f per request (%s)" % (
                name, sys_per[name]["per_request"], ", ".join("%s %.2f" % kv for kv in sys_per[name]["top"].items())))
        malloc_per = {}
        if mallocs:
            lib = run.malloc_counter()
            for name, path in bins:
                counters = run.workdir / ("%s.mallocs" % name)
                env = malloc_count.preload_env(lib, counters)
                port = run.httpdns_proxy(name + "-mallocs", path, env=env)
                run.wrk(port, origin, 1)  # warm up
                calls, requests, split = run.mallocs(counters, port, origin, strace_duration)
                malloc_per[name] = {"calls": calls, "requests": requests,
                                    "per_request": round(calls / max(1, requests), 3),
                                    "split": {k: round(v / max(1, requests), 2) for k, v in split.items()}}
                log("mallocs  %-14s %.2f per request (%s)" % (
                    name, malloc_per[name]["per_request"],
                    ", ".join("%s %.2f" % kv for kv in malloc_per[name]["split"].items())))
    finally:
        run.procs.stop_all()
    return {"cpu_us_per_request": per_request, "syscalls": sys_per, "mallocs": malloc_per}


# ----------------------------------------------------------------------------- command line
def add_arguments(p):
    p.add_argument("--bin", action="append", default=[], metavar="NAME=PATH",
                   help="an httpdns-proxy binary to measure as target NAME (repeatable, e.g. base=OLD head=NEW; "
                        "default: httpdns-proxy, the --proxy-bin or release build)")
    p.add_argument("--rounds", type=int, default=5, help="rounds over all targets; medians are reported (default 5)")
    p.add_argument("--duration", type=int, default=5, help="seconds of each round per target (default 5)")
    p.add_argument("--strace-duration", type=int, default=3, help="seconds of the strace and malloc runs (default 3)")
    p.add_argument("--core", type=int, default=0, help="the core everything runs on (default 0)")
    p.add_argument("--access-log", choices=["on", "off"], default="on",
                   help="access log of httpdns-proxy and nginx-proxy, to a file (default on)")
    p.add_argument("--proxy-arg", action="append", default=[], help="extra httpdns-proxy argument (repeatable)")
    p.add_argument("--mallocs", action="store_true", help="also count heap allocations per request (glibc, gcc)")
    p.add_argument("--floor", action="store_true", help="also measure the Benchmarks/NIOFloor relays "
                   "(nio-relay, nio-http-relay, nio-byte-relay)")
    p.add_argument("--floor-bin", metavar="PATH", help="the nio-floor binary (default: build it)")
    add_binary_arguments(p)
    add_output_arguments(p, "pinned")


def main(args):
    tools = ["nginx", "wrk", "strace", "taskset"] + (["gcc"] if args.mallocs else [])
    require_tools(tools, services=["nginx"])
    bins = [b.split("=", 1) for b in args.bin]
    if any(len(b) != 2 for b in bins):
        raise Fail("--bin takes NAME=PATH")
    revisions = {}
    if not bins:
        path, rev = proxy_binary(args)
        bins = [("httpdns-proxy", path)]
        revisions["httpdns-proxy"] = rev
    for name, path in bins:
        if not os.access(path, os.X_OK):
            raise Fail("not an executable: %s" % path)
        revisions.setdefault(name, revision_of(path))
    floor = None
    if args.floor:
        floor = args.floor_bin or build_product(args, "nio-floor")
    record = Run(args, "pinned", tools + ["swift"])
    record.doc["revision"] = revisions.get("httpdns-proxy") or next(iter(revisions.values()))
    record.doc["parameters"] = {"rounds": args.rounds, "duration": args.duration,
                                "strace_duration": args.strace_duration, "core": args.core,
                                "access_log": args.access_log, "proxy_args": args.proxy_arg,
                                "mallocs": args.mallocs, "floor": bool(floor), "revisions": revisions}
    complete, error = False, None
    with session(args.max_seconds, "httpdns-pinned-") as workdir:
        try:
            record.results.update(measure(bins, args.rounds, args.duration, args.strace_duration, args.core,
                                          args.access_log, args.proxy_arg, args.mallocs, floor, workdir))
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1


def render(doc):
    r = doc["results"]
    per = r["cpu_us_per_request"]
    med = {name: median(runs) for name, runs in per.items()}
    anchor = med.get("nginx-proxy")
    floor = med.get("nio-relay")
    mallocs = r.get("mallocs") or {}
    cols = ["target", "CPU µs per 1 KiB request (median of %d)" % doc["parameters"]["rounds"], "÷ nginx-proxy"]
    if floor:
        cols.append("above nio-relay (µs)")
    cols.append("syscalls per request")
    if mallocs:
        cols.append("allocations per request")
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for name in per:
        cells = [name, "%.2f" % med[name], ratio(med[name], anchor)]
        if floor:
            cells.append("%.2f" % (med[name] - floor))
        cells.append("%.2f" % r["syscalls"][name]["per_request"])
        if mallocs:
            cells.append("%.2f" % mallocs[name]["per_request"] if name in mallocs else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
