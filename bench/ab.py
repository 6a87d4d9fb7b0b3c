#!/usr/bin/env python3
"""Before/after CPU per request of two httpdns-proxy binaries, measured in one run.

Started by bench/ab.sh; loopback only. Starts nginx (1 KiB and 64 KiB files), the fake
HTTPDNS service (bench/fake_httpdns.py) and both proxies (plus one of each with the access
log on, written to /dev/null), then:

  (base and head may be the same binary with different flags: --base-args / --head-args are
  appended to each side's command line, after the harness's own flags, so they override them;
  --proxy-user USER:PASS makes every request to a proxy carry Proxy-Authorization: Basic.)

  keep-alive  rounds of wrk -t2 -c64 (bench/absolute.lua, absolute-form GET through a proxy;
              origin.test resolved by the fake HTTPDNS service) against direct nginx, base and
              head; base and head alternate, and which of them goes first rotates each round.
              Proxy CPU per request = utime+stime delta of the proxy's process tree / requests.
  hostile     request heads of ~65 KB (a 14,000-token Connection field and thousands of short
              fields) sent over raw loopback sockets, a new connection each; proxy CPU seconds
              per head for base and head.

Medians of the rounds go to a markdown table (stdout and --out/ab-results.md) and JSON
(--out/ab-results.json). Every process it starts runs in its own process group, is listed in
WORKDIR/pids (ab.sh's EXIT trap stops them too) and is stopped when this script ends.
"""
import argparse
import base64
import datetime
import json
import os
import platform
import re
import shlex
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import (nginx_conf, Fail, Processes, clean_env, free_port, log, process_tree, tail,
                     tree_cpu_split, wait_port)

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")

# name -> (binary key, access log on)
PROXIES = {"base": ("base", False), "head": ("head", False),
           "base+log": ("base", True), "head+log": ("head", True)}


def proxy_env():
    # no HTTPDNS_PROXY_* from the caller's environment: both binaries get only the flags below
    env = clean_env()
    return {k: v for k, v in env.items() if not k.startswith("HTTPDNS_PROXY_")}


def tree_sched_ns(pid):
    """On-CPU nanoseconds (schedstat, every thread) of a process tree: finer than clock ticks.
    Threads that exit between two samples are not counted (the event-loop threads stay)."""
    total = 0
    for p in process_tree(pid):
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for tid in tids:
            try:
                total += int(Path("/proc/%d/task/%s/schedstat" % (p, tid)).read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=0):
    if v is None:
        return "—"
    return "{:,.{d}f}".format(v, d=digits)


def ratio(a, b, digits=3):
    if a is None or b is None or b == 0:
        return "—"
    return "%.*f" % (digits, a / b)


class AB:
    def __init__(self, args):
        self.args = args
        self.workdir = Path(args.workdir)
        self.out = Path(args.out)
        self.logs = self.out / "ab-logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        for stale in self.logs.glob("*.log"):
            stale.unlink()
        self.procs = Processes(self.workdir)
        self.ports = {}
        self.bins = {"base": args.base_bin, "head": args.head_bin}
        self.extra = {"base": shlex.split(args.base_args), "head": shlex.split(args.head_args)}
        # the Proxy-Authorization field value sent to the proxies (not to nginx directly)
        self.auth = ("Basic " + base64.b64encode(args.proxy_user.encode()).decode()
                     if args.proxy_user else "")
        self.results = {"keepalive": [], "hostile": []}

    def run(self, argv, timeout, env=None, check=True):
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                 env=clean_env(env))
        except subprocess.TimeoutExpired:
            raise Fail("%s did not finish within %d s" % (argv[0], timeout))
        if check and res.returncode != 0:
            raise Fail("%s failed (status %d): %s" % (" ".join(argv), res.returncode,
                                                      (res.stderr or res.stdout)[-800:]))
        return res

    # ---------------------------------------------------------------- servers
    def start_origin(self):
        d = self.workdir / "nginx"
        www = d / "www"
        www.mkdir(parents=True)
        (www / "1k").write_bytes(os.urandom(1024))
        (www / "64k").write_bytes(os.urandom(64 * 1024))
        for p in (self.workdir, d, www):
            os.chmod(p, 0o755)
        port = self.ports["nginx"] = free_port()
        # Same origin as harness.py, plus header buffers large enough that the hostile heads a
        # proxy forwards are answered by nginx (200) instead of refused for size (400).
        (d / "nginx.conf").write_text(nginx_conf(d, f"""    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {www};
    }}
""", http_extra="    large_client_header_buffers 8 128k;\n"))
        self.procs.start("nginx", ["nginx", "-p", str(d), "-e", str(d / "error.log"),
                                   "-c", str(d / "nginx.conf")], self.logs / "nginx.log")
        wait_port(self.procs, "nginx", port)
        log("nginx on 127.0.0.1:%d" % port)

    def start_fake_httpdns(self):
        port = self.ports["httpdns"] = free_port()
        self.procs.start("fake-httpdns", [sys.executable, str(BENCH_DIR / "fake_httpdns.py"),
                                          "--port", str(port)], self.logs / "fake-httpdns.log")
        wait_port(self.procs, "fake-httpdns", port)
        log("fake HTTPDNS on 127.0.0.1:%d" % port)

    def start_proxy(self, name):
        key, access_log = PROXIES[name]
        port = self.ports[name] = free_port()
        admin = free_port()
        argv = [self.bins[key], "--listen", "127.0.0.1:%d" % port,
                "--admin-listen", "127.0.0.1:%d" % admin,
                "--provider", "json",
                "--resolver-url", "http://localhost:%d/resolve" % self.ports["httpdns"],
                "--resolver-ip", "127.0.0.1", "--system-fallback", "false",
                "--allow-destination", "127.0.0.0/8",
                "--connect-ports", str(self.ports["nginx"]),
                "--access-log", "stdout" if access_log else "off", "--log-level", "warning"]
        argv += self.extra[key]  # last: a flag given again overrides the one above
        logpath = self.logs / ("%s.log" % name.replace("+", "-"))
        (self.logs / ("%s.argv" % name.replace("+", "-"))).write_text(shlex.join(argv) + "\n")
        # stdout is the access log only (whichever flags turned it on): /dev/null, so a log on
        # costs formatting and a write, never disk space; stderr (logs) to the log file
        out = open(logpath, "ab")
        devnull = open(os.devnull, "wb")
        proc = subprocess.Popen(argv, stdout=devnull, stderr=out,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=proxy_env())
        out.close()
        devnull.close()
        self.procs.procs[name] = (proc, logpath)
        self.procs._write()
        wait_port(self.procs, name, port)
        log("%-8s on 127.0.0.1:%d (%s%s)" % (name, port, os.path.relpath(self.bins[key], REPO),
                                             (" " + shlex.join(self.extra[key])) if self.extra[key] else ""))

    # ---------------------------------------------------------------- wire
    def request_for(self, target, path):
        nginx = self.ports["nginx"]
        if target == "direct":
            host = "127.0.0.1:%d" % nginx
            return "http://%s" % host, path, host, ["http://%s%s" % (host, path)]
        host = "origin.test:%d" % nginx
        proxy = "http://127.0.0.1:%d" % self.ports[target]
        curl = ["-x", proxy] + (["--proxy-user", self.args.proxy_user] if self.args.proxy_user else [])
        return proxy, "http://%s%s" % (host, path), host, curl + ["http://%s%s" % (host, path)]

    def sanity(self, target):
        for path, size in (("/1k", 1024), ("/64k", 65536)):
            _, _, _, curl_args = self.request_for(target, path)
            res = self.run(["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w",
                            "%{http_code} %{size_download}"] + curl_args, 20, check=False)
            if res.stdout.strip() != "200 %d" % size:
                raise Fail("%s: GET %s sanity check failed: %r %s"
                           % (target, path, res.stdout, res.stderr.strip()))

    def wrk(self, target, path, duration, record=True, rnd=None):
        url, req_target, host, _ = self.request_for(target, path)
        argv = ["wrk", "-t2", "-c64", "-d%ds" % duration, "--latency", "--timeout", "5s",
                "-s", str(BENCH_DIR / "absolute.lua"), url]
        pid = self.procs.pid(target) if target != "direct" else None
        if pid:
            self.procs.check_alive(target)
        env = {"BENCH_TARGET": req_target, "BENCH_HOST": host}
        if pid and self.auth:
            env["BENCH_PROXY_AUTHORIZATION"] = self.auth
        split0 = tree_cpu_split(pid) if pid else (0.0, 0.0)
        ns0 = tree_sched_ns(pid) if pid else 0
        res = self.run(argv, duration + 30, env=env)
        split1 = tree_cpu_split(pid) if pid else (0.0, 0.0)
        ns1 = tree_sched_ns(pid) if pid else 0
        m = re.search(r"^BENCH_JSON (.*)$", res.stdout, re.M)
        if not m:
            raise Fail("wrk printed no result: " + res.stdout[-500:] + res.stderr[-500:])
        r = json.loads(m.group(1))
        secs = r["duration_us"] / 1e6
        e = r["errors"]
        n = max(1, r["requests"])
        out = {"round": rnd, "target": target, "path": path, "requests": r["requests"],
               "seconds": round(secs, 3), "rps": round(r["requests"] / secs, 1),
               "p50_ms": r["latency_us"]["p50"] / 1000, "p99_ms": r["latency_us"]["p99"] / 1000,
               "errors": e["status"] + e["connect"] + e["read"] + e["write"] + e["timeout"]}
        if pid:
            cpu = (split1[0] - split0[0]) + (split1[1] - split0[1])
            out["proxy_cpu_s"] = round(cpu, 3)
            out["cpu_us_per_req"] = round(cpu * 1e6 / n, 2)
            out["sys_us_per_req"] = round((split1[1] - split0[1]) * 1e6 / n, 2)
            out["sched_us_per_req"] = round((ns1 - ns0) / 1e3 / n, 2)
        if record:
            self.results["keepalive"].append(out)
        log("  r%s %-9s %-4s %9.0f req/s  %s µs CPU/req  p99 %.2f ms  errors %d%s"
            % (rnd if rnd is not None else "-", target, path, out["rps"],
               fmt(out.get("cpu_us_per_req"), 1), out["p99_ms"], out["errors"],
               "" if record else "  (warm-up)"))
        return out

    # ---------------------------------------------------------------- hostile heads
    def hostile_head(self, fields, tokens):
        nginx = self.ports["nginx"]
        parts = [b"GET http://origin.test:%d/1k HTTP/1.1\r\n" % nginx,
                 b"Host: origin.test\r\n",
                 (b"Proxy-Authorization: %s\r\n" % self.auth.encode()) if self.auth else b"",
                 b"Connection: " + b",".join([b"a"] * tokens) + b"\r\n",
                 b"X-N: v\r\n" * fields,
                 b"\r\n"]
        return b"".join(parts)

    @staticmethod
    def exchange(port, payload, limit=5.0):
        """Send one head on a new connection; read the answer until it is complete, the peer
        closes, or `limit` seconds pass. Returns (status or None, how it ended)."""
        end = time.monotonic() + limit
        s = socket.create_connection(("127.0.0.1", port), timeout=limit)
        buf = b""
        how = "?"
        try:
            s.settimeout(max(0.05, end - time.monotonic()))
            try:
                s.sendall(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the proxy answered (and closed) before reading it all
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    how = "timeout"
                    break
                s.settimeout(left)
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    how = "timeout"
                    break
                except ConnectionResetError:
                    how = "reset"
                    break
                if not chunk:
                    how = "closed"
                    break
                buf += chunk
                head_end = buf.find(b"\r\n\r\n")
                if head_end >= 0:
                    head = buf[:head_end].decode("latin-1")
                    m = re.search(r"(?im)^content-length:\s*(\d+)\s*$", head)
                    body = len(buf) - head_end - 4
                    if m and body >= int(m.group(1)):
                        how = "complete"
                        break
                    if re.search(r"(?im)^transfer-encoding:.*chunked", head) and buf.endswith(b"0\r\n\r\n"):
                        how = "complete"
                        break
        finally:
            s.close()
        m = re.match(rb"HTTP/1\.[01] (\d{3})", buf)
        if not m:
            return None, how
        # who answered: the origin's Server field (nginx), else the proxy itself
        head = buf.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        server = re.search(r"(?im)^server:\s*([^/\s]+)", head)
        who = "nginx" if server and server.group(1).lower() == "nginx" else "proxy"
        return "%s (%s)" % (m.group(1).decode(), who), how

    def hostile(self, variant, fields, tokens, target, reps, rnd):
        payload = self.hostile_head(fields, tokens)
        port = self.ports[target]
        pid = self.procs.pid(target)
        self.procs.check_alive(target)
        time.sleep(0.2)
        split0, ns0, t0 = tree_cpu_split(pid), tree_sched_ns(pid), time.monotonic()
        statuses, ends = {}, {}
        for _ in range(reps):
            status, how = self.exchange(port, payload)
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            ends[how] = ends.get(how, 0) + 1
        wall = time.monotonic() - t0
        time.sleep(0.2)  # let the proxy finish closing what it still held
        split1, ns1 = tree_cpu_split(pid), tree_sched_ns(pid)
        self.procs.check_alive(target)
        cpu = (split1[0] - split0[0]) + (split1[1] - split0[1])
        out = {"round": rnd, "variant": variant, "target": target, "fields": fields,
               "connection_tokens": tokens, "head_bytes": len(payload), "reps": reps,
               "cpu_s": round(cpu, 3), "cpu_s_per_head": cpu / reps,
               "sched_s_per_head": (ns1 - ns0) / 1e9 / reps,
               "wall_s_per_head": wall / reps, "statuses": statuses, "ends": ends}
        self.results["hostile"].append(out)
        log("  r%d %-24s %-4s %6d B  %.6f s CPU/head (schedstat %.6f)  %.4f s wall/head  %s %s"
            % (rnd, variant, target, len(payload), out["cpu_s_per_head"], out["sched_s_per_head"],
               out["wall_s_per_head"], statuses, ends))
        return out

    # ---------------------------------------------------------------- main
    def main(self):
        a = self.args
        self.start_origin()
        self.start_fake_httpdns()
        names = ["base", "head"] + (["base+log", "head+log"] if a.access_log else [])
        for name in names:
            self.start_proxy(name)
        for t in ["direct"] + names:
            self.sanity(t)
        log("warm-up: 2 s of wrk per target (not recorded)")
        for t in ["direct"] + names:
            self.wrk(t, "/1k", 2, record=False)
        pairs = [("base", "head")] + ([("base+log", "head+log")] if a.access_log else [])
        for rnd in range(1, a.rounds + 1):
            flip = rnd % 2 == 0  # which of base/head goes first rotates each round
            log("round %d/%d (%s first)" % (rnd, a.rounds, "head" if flip else "base"))
            for path in (["/1k", "/64k"] if a.with_64k else ["/1k"]):
                seq = ["direct"]
                for p in (pairs if path == "/1k" else pairs[:1]):
                    seq += list(reversed(p)) if flip else list(p)
                for t in seq:
                    self.wrk(t, path, a.duration, rnd=rnd)
        variants = [("4,600 fields + 14k-token Connection", 4600, 14000),
                    ("250 fields + 14k-token Connection", 250, 14000),
                    ("250 fields + 1-token Connection", 250, 1)]
        log("hostile heads: %d per binary and variant, %d round(s)" % (a.hostile_reps, a.hostile_rounds))
        for rnd in range(1, a.hostile_rounds + 1):
            order = ["head", "base"] if rnd % 2 == 0 else ["base", "head"]
            for variant, fields, tokens in variants:
                for t in order:
                    self.hostile(variant, fields, tokens, t, a.hostile_reps, rnd)
        # the keep-alive path still works after the hostile heads
        for t in ("base", "head"):
            self.sanity(t)


def markdown(results, meta):
    a = meta["args"]
    L = []
    L.append("# httpdns-proxy before/after (one run)")
    L.append("")
    L.append("- base: `%s` (%s), head: `%s` (%s)" % (a["base_bin"], a.get("base_rev") or "?",
                                                      a["head_bin"], a.get("head_rev") or "?"))
    if a.get("base_args") or a.get("head_args"):
        L.append("- extra proxy arguments: base `%s`, head `%s`"
                 % (a.get("base_args") or "(none)", a.get("head_args") or "(none)"))
    if a.get("proxy_user"):
        L.append("- every request to a proxy (wrk, curl, hostile heads) carries "
                 "`Proxy-Authorization: Basic …` (--proxy-user)")
    L.append("- command: `%s`; started %s; %s s; %s" % (meta["command"], meta["started"],
                                                        meta["seconds"], meta["machine"]))
    L.append("- wrk -t2 -c64 -d%ds, keep-alive, absolute-form GET through each proxy "
             "(origin.test via the fake HTTPDNS service); medians of %d rounds; base and head "
             "alternate, the first of them rotates each round. CPU = utime+stime of the proxy's "
             "process tree (/proc/PID/stat) ÷ requests; `sched` = the same from per-thread "
             "schedstat (ns resolution)." % (a["duration"], a["rounds"]))
    if not meta["complete"]:
        L.append("- **incomplete run** (see the log)")
    L.append("")
    ka = results["keepalive"]

    def rows(target, path):
        return [r for r in ka if r["target"] == target and r["path"] == path]

    def m(target, path, key):
        return med([r.get(key) for r in rows(target, path)])

    L.append("| target | size | req/s (median) | ÷ direct | CPU µs/request (median) | head ÷ base CPU | sched µs/req | of which sys µs/req | p99 ms | errors |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in ("/1k", "/64k"):
        d = m("direct", path, "rps")
        if d is None:
            continue
        for t in ("direct", "base", "head", "base+log", "head+log"):
            if not rows(t, path):
                continue
            cpu = m(t, path, "cpu_us_per_req")
            r = "—"
            if t.startswith("head"):
                r = ratio(cpu, m(t.replace("head", "base"), path, "cpu_us_per_req"))
            label = {"base+log": "base, access log on", "head+log": "head, access log on"}.get(t, t)
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |"
                     % (label, path.strip("/").replace("k", " KiB"), fmt(m(t, path, "rps")),
                        ratio(m(t, path, "rps"), d), fmt(cpu, 1), r,
                        fmt(m(t, path, "sched_us_per_req"), 1), fmt(m(t, path, "sys_us_per_req"), 1),
                        fmt(m(t, path, "p99_ms"), 2), sum(x["errors"] for x in rows(t, path))))
    L.append("")
    L.append("Per round:")
    L.append("")
    L.append("| round | target | size | req/s | CPU µs/request | sched µs/req | errors |")
    L.append("| --- | --- | --- | --- | --- | --- | --- |")
    for r in ka:
        L.append("| %s | %s | %s | %s | %s | %s | %d |"
                 % (r["round"], r["target"], r["path"].strip("/").replace("k", " KiB"),
                    fmt(r["rps"]), fmt(r.get("cpu_us_per_req"), 1),
                    fmt(r.get("sched_us_per_req"), 1), r["errors"]))
    hs = results["hostile"]
    if hs:
        L.append("")
        L.append("Hostile request heads: `GET http://origin.test:PORT/1k`, `Host`, one `Connection: "
                 "a,a,…` field, N × `X-N: v`; %d heads per binary and variant, a new loopback "
                 "connection each, answer read until complete, closed or 5 s. CPU s/head = "
                 "utime+stime delta ÷ heads (clock ticks of %.0f ms: a delta below one tick "
                 "reads as 0); `sched` = per-thread schedstat." % (hs[0]["reps"], 1000 / CLK_TCK))
        L.append("")
        L.append("| variant | head bytes | base answer | head answer | base CPU s/head | head CPU s/head | head ÷ base | base sched s/head | head sched s/head | head ÷ base (sched) | base wall s/head | head wall s/head |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        variants = []
        for h in hs:
            if h["variant"] not in variants:
                variants.append(h["variant"])
        for v in variants:
            def hm(t, key):
                return med([h[key] for h in hs if h["variant"] == v and h["target"] == t])

            def ans(t):
                agg = {}
                for h in hs:
                    if h["variant"] == v and h["target"] == t:
                        for k, n in h["statuses"].items():
                            agg[k] = agg.get(k, 0) + n
                return ", ".join("%s×%d" % (k, n) for k, n in sorted(agg.items()))
            nbytes = next(h["head_bytes"] for h in hs if h["variant"] == v)
            L.append("| %s | %s | %s | %s | %.4f | %.4f | %s | %.5f | %.5f | %s | %.4f | %.4f |"
                     % (v, fmt(nbytes), ans("base"), ans("head"),
                        hm("base", "cpu_s_per_head"), hm("head", "cpu_s_per_head"),
                        ratio(hm("head", "cpu_s_per_head"), hm("base", "cpu_s_per_head")),
                        hm("base", "sched_s_per_head"), hm("head", "sched_s_per_head"),
                        ratio(hm("head", "sched_s_per_head"), hm("base", "sched_s_per_head")),
                        hm("base", "wall_s_per_head"), hm("head", "wall_s_per_head")))
        if len({h["round"] for h in hs}) > 1:
            L.append("")
            L.append("(medians of %d hostile rounds; per round:)" % len({h["round"] for h in hs}))
            L.append("")
            L.append("| round | variant | target | CPU s/head | sched s/head |")
            L.append("| --- | --- | --- | --- | --- |")
            for h in hs:
                L.append("| %d | %s | %s | %.4f | %.5f |" % (h["round"], h["variant"], h["target"],
                                                           h["cpu_s_per_head"], h["sched_s_per_head"]))
    return "\n".join(L)


def git_rev_of(binary):
    """The .ab-rev file ab.sh-style snapshots carry next to Package.swift, if any."""
    p = Path(binary).resolve()
    for parent in p.parents:
        f = parent / ".ab-rev"
        if f.is_file():
            return f.read_text().strip()[:12]
        if (parent / "Package.swift").is_file():
            break
    return None


def main():
    ap = argparse.ArgumentParser(description="base/head CPU per request (use bench/ab.sh)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", default=str(BENCH_DIR / "out"))
    ap.add_argument("--base-bin", required=True)
    ap.add_argument("--head-bin", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--with-64k", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--hostile-reps", type=int, default=20)
    ap.add_argument("--hostile-rounds", type=int, default=3)
    ap.add_argument("--base-args", default="", help="extra proxy arguments for base (shell words)")
    ap.add_argument("--head-args", default="", help="extra proxy arguments for head (shell words)")
    ap.add_argument("--proxy-user", default="", help="USER:PASS: send Proxy-Authorization: Basic")
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    ab = AB(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()

    def on_signal(signum, _frame):
        raise Fail("interrupted by signal %d" % signum)
    import signal
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    status = 0
    try:
        ab.main()
    except Fail as e:
        log("FAILED: %s" % e)
        status = 1
    finally:
        ab.procs.stop_all()
    meta = {"started": started.isoformat(timespec="seconds"),
            "seconds": round(time.monotonic() - t0, 1), "command": args.command,
            "machine": "%s, %d CPUs, kernel %s" % (platform.machine(), os.cpu_count(),
                                                   platform.release()),
            "complete": status == 0,
            "args": {k: v for k, v in vars(args).items() if k not in ("workdir", "out", "command")}}
    if args.proxy_user:  # the password stays out of the results
        meta["args"]["proxy_user"] = args.proxy_user.split(":", 1)[0] + ":***"
        meta["command"] = re.sub(r"(--proxy-user[ =])\S+", r"\1USER:***", meta["command"])
    for k in ("base", "head"):
        b = meta["args"]["%s_bin" % k]
        meta["args"]["%s_rev" % k] = git_rev_of(b)
        meta["args"]["%s_bin" % k] = os.path.relpath(os.path.abspath(b), REPO)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ab-results.json").write_text(json.dumps({"meta": meta, "results": ab.results},
                                                    indent=2) + "\n")
    table = markdown(ab.results, meta)
    (out / "ab-results.md").write_text(table + "\n")
    print(table)
    log("%s in %.0f s; %s" % ("done" if status == 0 else "incomplete run", meta["seconds"],
                              os.path.relpath(out / "ab-results.md", REPO)))
    return status


if __name__ == "__main__":
    sys.exit(main())
