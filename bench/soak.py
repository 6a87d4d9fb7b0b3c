"""Soak test: the proxy leaks neither memory nor descriptors under a long, mixed and hostile
load. Loopback only; the load is bounded in count and time; not run by CI.

Starts the origins (nginx: a keep-alive server, one that closes after every response, one that
closes after 5 requests or 2 s idle; bench/peers/soak_peers.py: an origin that resets before
answering or mid-body, and a TCP echo service for tunnels), the fake HTTPDNS service (every name
-> 127.0.0.1, TTL 2 s) and the proxy with short idle timeouts and --max-ttl 2s (so refreshes reach
the flapping service). Then:

  warm-up   one short round of every load below (resolves every name, fills pools)
  settle    idle until the descriptors are stable; baseline = median of 5 samples
  load      rounds of wrk mixes in parallel (bench/peers/soak.lua), until --requests is reached
            and the --tunnels CONNECT tunnels are done, while soak_peers.py runs slow readers,
            clients that vanish mid-response / mid-request, requests to an origin that resets,
            and the tunnels; the fake HTTPDNS service is stopped and started again every few
            seconds the whole time
  drain     idle until the descriptors are back near the baseline (bounded);
            after = median of 5 samples

RSS (VmRSS) and open descriptors of the proxy are sampled every second into
OUT/soak-samples.csv; OUT/soak.png plots them with the phases. Pass: no unexpected
client-visible error, RSS after <= baseline x 1.10 and descriptors after within 16 of the
baseline. Exit status 0 pass, 1 fail or incomplete.
"""
import argparse
import base64
import csv
import json
import os
import random
import re
import shlex
import shutil
import statistics
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from .lib.peers import fake_httpdns_argv, httpdns_proxy_json_args, nginx_argv, nginx_conf
from .lib.proc import REPO, Fail, LockedProcesses, clean_env, free_port, log, peer, session, tail
from .lib.procfs import count_fds, status_field
from .lib.results import Run, add_output_arguments, load, relpath
from .lib.results import fmt_num as fmt
from .lib.tools import add_binary_arguments, proxy_binary, raise_nofile, require_tools
from .lib.wrk import parse, script

NAMES = ["origin.test", "close.test", "short.test", "reset.test", "echo.test"]


class Soak:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = Path(workdir)
        self.out = Path(args.out)
        self.logs = self.out / "soak-logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        for stale in self.logs.glob("*.log"):
            stale.unlink()
        self.procs = LockedProcesses(self.workdir)
        self.ports = {}
        self.t0 = time.monotonic()
        self.phase = "start"
        self.phases = []  # (name, t_start, t_end)
        self.samples = []  # dicts
        self.dns_up = False
        self.dns_events = []  # (t, up?)
        self.dns_queries = 0
        self.dns_cycles = 0
        self.sampling = threading.Event()
        self.flapping = threading.Event()
        self.counts = {}  # (client, outcome, expected) -> n
        self.requests = {"warm-up": 0, "load": 0}
        self.tunnels = {"warm-up": 0, "load": 0}
        self.wrk_runs = []
        self.rounds = 0
        self.result = {}
        self.rate = None  # requests per second of the last round
        self.budget_file = None

    # ---------------------------------------------------------------- time and phases
    def now(self):
        return time.monotonic() - self.t0

    def set_phase(self, name):
        t = self.now()
        if self.phases and self.phases[-1][2] is None:
            self.phases[-1] = (self.phases[-1][0], self.phases[-1][1], t)
        self.phases.append((name, t, None))
        self.phase = name
        log("phase: %s" % name)

    def count(self, client, outcome, expected, n=1):
        if n:
            key = (client, outcome, bool(expected))
            self.counts[key] = self.counts.get(key, 0) + n

    # ---------------------------------------------------------------- servers
    def start_nginx(self):
        d = self.workdir / "nginx"
        www = d / "www"
        www.mkdir(parents=True)
        for name, size in (("1k", 1024), ("16k", 16384), ("64k", 65536), ("1m", 1 << 20)):
            (www / name).write_bytes(os.urandom(size))
        for p in (self.workdir, d, www):
            os.chmod(p, 0o755)
        for k in ("nginx", "nginx-close", "nginx-short"):
            self.ports[k] = free_port()
        common = f"""root {www};
        location = /echo {{ client_max_body_size 1m; return 200 "ok\\n"; }}"""
        (d / "nginx.conf").write_text(nginx_conf(d, f"""    # keep-alive origin
    server {{
        listen 127.0.0.1:{self.ports["nginx"]} backlog=4096;
        {common}
    }}
    # an origin that closes after every response (Connection: close)
    server {{
        listen 127.0.0.1:{self.ports["nginx-close"]} backlog=4096;
        keepalive_timeout 0;
        {common}
    }}
    # an origin that closes after 5 requests, or after 2 s idle (races with the pool)
    server {{
        listen 127.0.0.1:{self.ports["nginx-short"]} backlog=4096;
        keepalive_requests 5;
        keepalive_timeout 2s;
        {common}
    }}
"""))
        self.procs.start("nginx", nginx_argv(d), self.logs / "nginx.log")
        for k in ("nginx", "nginx-close", "nginx-short"):
            self.procs.wait_port("nginx", self.ports[k])
        log("nginx on 127.0.0.1:%d (keep-alive), :%d (closes), :%d (short keep-alive)"
            % (self.ports["nginx"], self.ports["nginx-close"], self.ports["nginx-short"]))

    def start_peers(self):
        self.ports["reset"], self.ports["echo"] = free_port(), free_port()
        self.procs.start("peers", peer("soak_peers", "servers", "--reset-port", self.ports["reset"],
                                       "--echo-port", self.ports["echo"]), self.logs / "peers.log")
        self.procs.wait_port("peers", self.ports["reset"])
        self.procs.wait_port("peers", self.ports["echo"])
        log("resetting origin on 127.0.0.1:%d, echo on 127.0.0.1:%d"
            % (self.ports["reset"], self.ports["echo"]))

    def start_dns(self):
        if "httpdns" not in self.ports:
            self.ports["httpdns"] = free_port()
        argv = fake_httpdns_argv(self.ports["httpdns"], 2, ["%s=127.0.0.1" % name for name in NAMES[1:]])
        self.procs.start("fake-httpdns", argv, self.logs / "fake-httpdns.log")
        self.procs.wait_port("fake-httpdns", self.ports["httpdns"])
        self.dns_up = True
        self.dns_events.append((self.now(), True))

    def stop_dns(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/stats" % self.ports["httpdns"],
                                        timeout=2) as r:
                self.dns_queries += json.loads(r.read())["total"]
        except (OSError, ValueError, KeyError):
            pass
        self.procs.stop("fake-httpdns")
        self.dns_up = False
        self.dns_events.append((self.now(), False))

    def start_proxy(self):
        a = self.args
        self.ports["proxy"], self.ports["admin"] = free_port(), free_port()
        argv = [a.bin, "--listen", "127.0.0.1:%d" % self.ports["proxy"],
                "--admin-listen", "127.0.0.1:%d" % self.ports["admin"],
                *httpdns_proxy_json_args(self.ports["httpdns"]),
                "--resolver-timeout", "1s", "--max-ttl", "2s",
                "--allow-destination", "127.0.0.0/8",
                "--connect-ports", str(self.ports["echo"]),
                "--client-idle-timeout", "%ds" % a.idle_timeout,
                "--pool-idle-timeout", "%ds" % a.idle_timeout,
                "--tunnel-idle-timeout", "30s", "--upstream-timeout", "30s",
                "--header-timeout", "10s",
                "--access-log", "off", "--log-level", "warning"] + a.proxy_args
        self.proxy_argv = [relpath(argv[0])] + argv[1:]
        proc = self.procs.start("proxy", argv, self.logs / "proxy.log", stdout=subprocess.DEVNULL)
        self.procs.wait_port("proxy", self.ports["proxy"])
        self.proxy_pid = proc.pid
        log("proxy on 127.0.0.1:%d, admin :%d (pid %d)" % (self.ports["proxy"], self.ports["admin"],
                                                          proc.pid))

    def admin(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.ports["admin"], path),
                                    timeout=5) as r:
            return r.status, r.read()

    def curl(self, url, data=None):
        argv = ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w",
                "%{http_code} %{size_download}", "-x", "http://127.0.0.1:%d" % self.ports["proxy"]]
        if self.args.proxy_user:
            argv += ["--proxy-user", self.args.proxy_user]
        if data is not None:
            argv += ["--data-binary", data]
        res = subprocess.run(argv + [url], capture_output=True, text=True, timeout=20,
                             env=clean_env())
        return res.stdout.strip()

    def sanity(self, when):
        nginx = self.ports["nginx"]
        checks = [("http://origin.test:%d/1k" % nginx, None, "200 1024"),
                  ("http://origin.test:%d/1m" % nginx, None, "200 1048576"),
                  ("http://origin.test:%d/echo" % nginx, "x" * 5000, "200 3"),
                  ("http://close.test:%d/16k" % self.ports["nginx-close"], None, "200 16384"),
                  ("http://short.test:%d/64k" % self.ports["nginx-short"], None, "200 65536"),
                  ("http://reset.test:%d/before" % self.ports["reset"], None, "502")]
        for url, data, want in checks:
            got = self.curl(url, data)
            if not got.startswith(want):
                raise Fail("sanity check (%s) failed: %s -> %r, expected %r" % (when, url, got, want))
        status, body = self.admin("/healthz")
        if status != 200:
            raise Fail("/healthz answered %d (%s)" % (status, when))
        log("sanity checks passed (%s)" % when)

    # ---------------------------------------------------------------- threads
    def sampler(self):
        path = self.out / "soak-samples.csv"
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", "phase", "rss_kib", "fds", "threads", "dns_up"])
            next_t = time.monotonic()
            while not self.sampling.is_set():
                s = {"t": round(self.now(), 2), "phase": self.phase,
                     "rss_kib": status_field(self.proxy_pid, "VmRSS"),
                     "fds": count_fds(self.proxy_pid),
                     "threads": status_field(self.proxy_pid, "Threads"),
                     "dns_up": int(self.dns_up)}
                if s["fds"] is not None:
                    self.samples.append(s)
                    w.writerow([s["t"], s["phase"], s["rss_kib"], s["fds"], s["threads"],
                                s["dns_up"]])
                    f.flush()
                next_t += 1.0
                self.sampling.wait(max(0.0, next_t - time.monotonic()))

    def flapper(self):
        rng = random.Random(7)
        while not self.flapping.is_set():
            if self.flapping.wait(rng.uniform(3, 6)):
                break
            self.stop_dns()
            self.dns_cycles += 1
            self.flapping.wait(rng.uniform(2, 4))
            self.start_dns()  # even when stopping: leave the service up

    # ---------------------------------------------------------------- load
    def mixes(self):
        a, n = "origin.test:%d" % self.ports["nginx"], self.ports
        return [
            ("keep-alive GET 1/16/64 KiB", 16, {
                "SOAK_TARGETS": ",".join("http://%s/%s" % (a, p) for p in ("1k", "1k", "1k", "16k", "64k"))},
             {200}),
            ("one request per connection GET 1 KiB", 8, {
                "SOAK_TARGETS": "http://%s/1k" % a, "SOAK_CLOSE": "1"}, {200}),
            ("keep-alive POST 1/4/64 KiB bodies", 8, {
                "SOAK_TARGETS": "http://%s/echo" % a, "SOAK_METHOD": "POST",
                "SOAK_BODIES": "1024,4096,65536"}, {200}),
            ("origins that close (every response / after 5 or 2 s idle)", 8, {
                "SOAK_TARGETS": "http://close.test:%d/1k,http://short.test:%d/16k"
                                % (n["nginx-close"], n["nginx-short"])}, {200}),
            ("origin resets before answering (GET)", 2, {
                "SOAK_TARGETS": "http://reset.test:%d/before" % n["reset"]}, {502}),
        ]

    def wrk_round(self, seconds, stage):
        runs = []
        auth = {}
        if self.args.proxy_user:
            auth = {"SOAK_PROXY_AUTHORIZATION": "Basic " + base64.b64encode(
                self.args.proxy_user.encode()).decode()}
        for k, (label, conns, env, expected) in enumerate(self.mixes()):
            name = "wrk-%d" % k
            logpath = self.logs / ("wrk-%d.log" % k)
            logpath.write_text("")
            argv = ["wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds, "--timeout", "10s",
                    "-s", script("soak.lua"), "http://127.0.0.1:%d" % self.ports["proxy"]]
            proc = self.procs.start(name, argv, logpath, env=dict(env, **auth))
            runs.append((name, label, expected, proc, logpath))
        end = time.monotonic() + seconds + 30
        total = 0
        for name, label, expected, proc, logpath in runs:
            try:
                proc.wait(max(1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.procs.stop(name)
                raise Fail("wrk (%s) did not finish in time" % label) from None
            self.procs.stop(name)
            text = logpath.read_text(errors="replace")
            try:
                r = parse(text, "SOAK_JSON")
            except Fail:
                raise Fail("wrk (%s) printed no result: %s" % (label, text[-600:])) from None
            e = r["errors"]
            done = r["requests"] + e["read"] + e["write"] + e["timeout"]
            total += done
            for code, cnt in r["statuses"].items():
                ok = int(code) in expected
                self.count("wrk: " + label, "status %s" % code, ok, cnt)
            for kind in ("connect", "read", "write", "timeout"):
                self.count("wrk: " + label, "socket error: " + kind, False, e[kind])
            self.wrk_runs.append({"stage": stage, "mix": label, "seconds": seconds,
                                  "requests": r["requests"], "errors": e,
                                  "statuses": r["statuses"], "latency_us": r["latency_us"]})
            log("  %-58s %8d responses %s  errors %s  p99 %.1f ms"
                % (label, r["requests"], r["statuses"],
                   {k: v for k, v in e.items() if v and k != "status"} or 0,
                   r["latency_us"]["p99"] / 1000))
        return total

    def set_budget(self, n):
        if self.budget_file:
            tmp = self.budget_file.with_suffix(".tmp")
            tmp.write_text("%d\n" % n)
            os.replace(tmp, self.budget_file)

    def pace_tunnels(self, stop, t0, seconds, start, target):
        """Raise the tunnel budget linearly from start to target over the round; the whole
        target once the round is over."""
        while not stop.is_set():
            frac = min(1.0, (time.monotonic() - t0) / max(1.0, seconds))
            self.set_budget(int(start + (target - start) * frac))
            if stop.wait(0.5):
                break
        self.set_budget(target)

    def start_clients(self, stage, tunnels, paced):
        st = self.workdir / ("clients-%s.json" % stage)
        stop = self.workdir / ("clients-%s.stop" % stage)
        self.budget_file = (self.workdir / ("clients-%s.budget" % stage)) if paced else None
        self.set_budget(0)
        argv = peer("soak_peers", "clients", "--proxy-port", self.ports["proxy"],
                    "--origin", "origin.test:%d" % self.ports["nginx"],
                    "--reset", "reset.test:%d" % self.ports["reset"],
                    "--echo", "echo.test:%d" % self.ports["echo"],
                    "--tunnels", tunnels, "--status", st, "--stop", stop,
                    "--deadline", self.args.max_load_seconds + 120)
        if self.budget_file:
            argv += ["--tunnel-budget", str(self.budget_file)]
        if self.args.proxy_user:
            argv += ["--proxy-user", self.args.proxy_user]
        self.procs.start("clients", argv, self.logs / ("clients-%s.log" % stage))
        return st, stop

    @staticmethod
    def read_status(path):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def finish_clients(self, stage, st, stop):
        stop.write_text("stop\n")
        proc = self.procs.procs["clients"][0]
        try:
            proc.wait(150)
        except subprocess.TimeoutExpired:
            pass
        self.procs.stop("clients")
        s = self.read_status(st)
        if not s or not s.get("final"):
            raise Fail("the soak clients did not finish cleanly; log:\n%s"
                       % tail(self.logs / ("clients-%s.log" % stage)))
        reqs = tunnels = 0
        for c in s["counts"]:
            self.count(c["client"], c["outcome"], c["expected"], c["count"])
            if c["client"] == "tunnel":
                tunnels += c["count"]
            else:
                reqs += c["count"]
        self.requests[stage] += reqs
        self.tunnels[stage] += tunnels
        log("  soak clients (%s): %d requests, %d tunnels" % (stage, reqs, tunnels))

    def clients_progress(self, st):
        s = self.read_status(st)
        if not s:
            return 0, 0, False
        reqs = sum(c["count"] for c in s["counts"] if c["client"] != "tunnel")
        return reqs, s["tunnels_done"], s["tunnels_done"] >= s["tunnels"]

    def load(self, stage, want_requests, want_tunnels, round_seconds, deadline):
        """Rounds of every wrk mix at once until want_requests (wrk + clients) and the tunnels
        are done. In the load phase the tunnels are spread over the rounds: each round may
        start the share of the tunnels left that matches its share of the requests left
        (estimated from the last round's rate; the warm-up's for the first)."""
        paced = stage == "load"
        st, stop = self.start_clients(stage, want_tunnels, paced)
        wrk_total = 0
        rate = self.rate
        k = 0
        while True:
            k += 1
            creq, tdone, tunnels_done = self.clients_progress(st)
            left = want_requests - wrk_total - creq
            if left <= 0 and tunnels_done:
                break
            if time.monotonic() > deadline:
                self.result["incomplete"] = ("%s: stopped at the time limit (%d requests, %d "
                                             "tunnels done)" % (stage, wrk_total + creq, tdone))
                log("  " + self.result["incomplete"])
                break
            secs = round_seconds
            if left <= 0:
                secs = min(5, round_seconds)  # only waiting for the tunnels
            elif rate:
                secs = max(3, min(round_seconds, int(left / rate) + 2))
            secs = max(1, min(secs, int(deadline - time.monotonic()) + 1))
            if stage == "load":
                self.rounds += 1
                self.set_phase("load round %d" % self.rounds)
            log("%s round %d: %d s of wrk (requests so far %s, tunnels %s/%s)"
                % (stage, k, secs, fmt(wrk_total + creq), fmt(tdone), fmt(want_tunnels)))
            t = time.monotonic()
            pacer_stop = threading.Event()
            pacer = None
            if paced and left <= 0:
                self.set_budget(want_tunnels)  # the requests are done: the rest at once
            elif paced:
                share = 1.0 if not rate else min(1.0, rate * secs / left)
                target = want_tunnels if share >= 0.999 else tdone + int((want_tunnels - tdone) * share)
                pacer = threading.Thread(target=self.pace_tunnels, daemon=True,
                                         args=(pacer_stop, t, secs, tdone, target))
                pacer.start()
            try:
                got = self.wrk_round(secs, stage)
            finally:
                pacer_stop.set()
                if pacer:
                    pacer.join(5)
            wrk_total += got
            r2, _, _ = self.clients_progress(st)
            rate = (got + r2 - creq) / max(0.5, time.monotonic() - t)
            self.rate = rate
            self.procs.check_alive("proxy")
        self.set_budget(want_tunnels)
        self.finish_clients(stage, st, stop)
        self.requests[stage] += wrk_total

    def wait_settled(self, what, at_most, target_fds=None):
        """Idle until the descriptor count is stable for 5 s (and, with target_fds, at most
        that), bounded by at_most seconds. Then the median of 5 samples."""
        time.sleep(self.args.idle_timeout + 2)
        end = time.monotonic() + at_most
        while time.monotonic() < end:
            recent = [s["fds"] for s in self.samples[-6:]]
            if len(recent) == 6 and max(recent) == min(recent) and (
                    target_fds is None or recent[-1] <= target_fds):
                break
            time.sleep(1)
        else:
            log("  %s: descriptors did not settle within %d s" % (what, at_most))
        n0 = len(self.samples)
        while len(self.samples) < n0 + 5:
            time.sleep(0.5)
        got = self.samples[n0:n0 + 5]
        return {"rss_kib": statistics.median(s["rss_kib"] for s in got),
                "fds": statistics.median(s["fds"] for s in got),
                "threads": statistics.median(s["threads"] for s in got)}

    def main(self):
        a = self.args
        self.start_nginx()
        self.start_peers()
        self.start_dns()
        self.start_proxy()
        threading.Thread(target=self.sampler, daemon=True).start()
        self.set_phase("start")
        self.sanity("start, fake HTTPDNS up")  # every name resolved and cached
        flap = threading.Thread(target=self.flapper, daemon=True)
        self.set_phase("warm-up")
        flap.start()
        self.load("warm-up", a.warmup_requests, a.warmup_tunnels, a.warmup_seconds,
                  time.monotonic() + 180)
        self.set_phase("settle")
        self.baseline = self.wait_settled("baseline", 60)
        log("baseline: RSS %s KiB, %d descriptors, %d threads"
            % (fmt(self.baseline["rss_kib"]), self.baseline["fds"], self.baseline["threads"]))
        self.load_t0 = time.monotonic()
        self.load("load", a.requests, a.tunnels, a.round_seconds,
                  time.monotonic() + a.max_load_seconds)
        self.load_seconds = time.monotonic() - self.load_t0
        self.flapping.set()
        flap.join(15)
        if not self.dns_up:
            self.start_dns()
        self.set_phase("drain")
        load_samples = [s for s in self.samples if s["phase"].startswith("load")]
        self.peak = {"rss_kib": max(s["rss_kib"] for s in load_samples),
                     "fds": max(s["fds"] for s in load_samples),
                     "threads": max(s["threads"] for s in load_samples)}
        self.after = self.wait_settled("after", a.drain_seconds,
                                       target_fds=self.baseline["fds"] + a.fd_slack)
        log("after: RSS %s KiB, %d descriptors, %d threads"
            % (fmt(self.after["rss_kib"]), self.after["fds"], self.after["threads"]))
        self.set_phase("end")
        self.procs.check_alive("proxy")
        self.sanity("end")
        try:
            _, body = self.admin("/stats")
            (self.out / "soak-proxy-stats.json").write_bytes(body)
            self.proxy_stats = json.loads(body).get("totals")
        except (OSError, ValueError, AttributeError):
            pass
        time.sleep(1.5)

    # ---------------------------------------------------------------- report
    def verdict(self):
        a = self.args
        unexpected = sum(n for (c, o, e), n in self.counts.items() if not e)
        checks = []
        checks.append(("unexpected client-visible errors", "0", fmt(unexpected), unexpected == 0))
        b, af = getattr(self, "baseline", None), getattr(self, "after", None)
        if b and af:
            limit = b["rss_kib"] * (1 + a.rss_slack_pct / 100)
            checks.append(("RSS after vs baseline", "≤ +%d %% (≤ %s KiB)" % (a.rss_slack_pct, fmt(limit)),
                           "%s KiB (%+.1f %%)" % (fmt(af["rss_kib"]),
                                                  100 * (af["rss_kib"] / b["rss_kib"] - 1)),
                           af["rss_kib"] <= limit))
            d = af["fds"] - b["fds"]
            checks.append(("descriptors after vs baseline", "within ±%d" % a.fd_slack,
                           "%d (%+d)" % (af["fds"], d), abs(d) <= a.fd_slack))
        else:
            checks.append(("RSS and descriptors", "measured", "not reached", False))
        total_req = self.requests["load"]
        checks.append(("requests in the load phase", "≥ %s" % fmt(a.requests), fmt(total_req),
                       total_req >= a.requests))
        checks.append(("tunnels in the load phase", "≥ %s" % fmt(a.tunnels),
                       fmt(self.tunnels["load"]), self.tunnels["load"] >= a.tunnels))
        return checks

    def plot(self, path):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            log("matplotlib missing (python3 -m pip install matplotlib): no plot")
            return False
        if not self.samples:
            return False
        t = [s["t"] for s in self.samples]
        fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(11, 6.5))
        ax1.plot(t, [s["rss_kib"] / 1024 for s in self.samples], color="tab:blue", lw=1)
        ax1.set_ylabel("RSS MiB")
        ax2.plot(t, [s["fds"] for s in self.samples], color="tab:green", lw=1)
        ax2.set_ylabel("open descriptors")
        ax2.set_xlabel("seconds")
        b = getattr(self, "baseline", None)
        top_rss = max(s["rss_kib"] for s in self.samples) / 1024
        top_fds = max(s["fds"] for s in self.samples)
        if b:  # keep the limit lines in view
            top_rss = max(top_rss, b["rss_kib"] * (1 + self.args.rss_slack_pct / 100) / 1024)
            top_fds = max(top_fds, b["fds"] + self.args.fd_slack)
        ax1.set_ylim(0, top_rss * 1.08)
        ax2.set_ylim(0, top_fds * 1.08)
        for ax in (ax1, ax2):
            ax.grid(alpha=0.3)
        if b:
            ax1.axhline(b["rss_kib"] / 1024, color="grey", ls="--", lw=0.8, label="baseline")
            ax1.axhline(b["rss_kib"] * (1 + self.args.rss_slack_pct / 100) / 1024, color="red",
                        ls=":", lw=0.8, label="baseline +%d %%" % self.args.rss_slack_pct)
            ax2.axhline(b["fds"], color="grey", ls="--", lw=0.8, label="baseline")
            ax2.axhline(b["fds"] + self.args.fd_slack, color="red", ls=":", lw=0.8,
                        label="baseline +%d" % self.args.fd_slack)
        end = self.samples[-1]["t"]
        colors = {"warm-up": "#ffe9b0", "settle": "#e8e8e8", "drain": "#e8e8e8"}
        for name, t0, t1 in self.phases:
            t1 = end if t1 is None else t1
            if name.startswith("load round"):
                k = int(name.split()[-1])
                color = "#d6e6ff" if k % 2 else "#bcd4f7"
            else:
                color = colors.get(name)
            if color:
                for ax in (ax1, ax2):
                    ax.axvspan(t0, t1, color=color, lw=0)
            if name in ("warm-up", "settle", "drain") or name == "load round 1":
                # staggered, so the short phases' labels do not overlap
                ax1.text(t0, {"warm-up": 1.15, "settle": 1.08}.get(name, 1.01),
                         "load" if name.startswith("load") else name,
                         transform=ax1.get_xaxis_transform(), fontsize=8, va="bottom")
        # fake HTTPDNS down: red bars along the bottom of both panels
        downs, since = [], None
        for te, up in self.dns_events:
            if not up and since is None:
                since = te
            elif up and since is not None:
                downs.append((since, te))
                since = None
        if since is not None:
            downs.append((since, end))
        for ax in (ax1, ax2):
            for d0, d1 in downs:
                ax.axvspan(d0, d1, ymin=0, ymax=0.03, color="red", lw=0)
        ax1.legend(loc="upper left", fontsize=8)
        ax2.legend(loc="upper left", fontsize=8)
        fig.suptitle("httpdns-proxy soak: RSS and descriptors per second (shaded: warm-up, load "
                     "rounds; red ticks: fake HTTPDNS down)", fontsize=10, y=0.995)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return True


def replot(results_json, samples_csv, png):
    """Draws the plot again from a finished run's results JSON and OUT/soak-samples.csv."""
    res = load(results_json)["results"]
    soak = Soak.__new__(Soak)
    soak.args = argparse.Namespace(rss_slack_pct=res.get("rss_slack_pct", 10), fd_slack=res.get("fd_slack", 16))
    with open(samples_csv) as f:
        soak.samples = [{"t": float(r["t_s"]), "phase": r["phase"], "rss_kib": int(r["rss_kib"]),
                         "fds": int(r["fds"]), "threads": int(r["threads"]),
                         "dns_up": int(r["dns_up"])} for r in csv.DictReader(f)]
    soak.phases = [tuple(p) for p in res["phases"]]
    soak.dns_events = [tuple(e) for e in res["dns_events"]]
    if res.get("baseline"):
        soak.baseline = res["baseline"]
    return soak.plot(png)


# ----------------------------------------------------------------------------- command line
def add_arguments(p):
    p.add_argument("--requests", type=int, default=1_000_000, help="HTTP requests in the load phase, at least "
                   "(default 1000000)")
    p.add_argument("--tunnels", type=int, default=20_000, help="CONNECT tunnels opened and closed in the load "
                   "phase (default 20000)")
    p.add_argument("--round-seconds", type=int, default=60, help="longest wrk round; rounds repeat until "
                   "--requests (3..600, default 60)")
    p.add_argument("--proxy-args", default="", metavar='"ARGS"', help="extra proxy arguments (appended, so they "
                   "override the soak's own)")
    p.add_argument("--proxy-user", default="", metavar="USER:PASS", help="send Proxy-Authorization: Basic with "
                   "every request and CONNECT (the password stays out of the results)")
    p.add_argument("--docs-plot", action="store_true", help="also copy the plot to docs/img/soak.png (the one "
                   "docs/reliability.md shows beside the committed results)")
    p.add_argument("--replot", action="store_true", help="only draw OUT/soak.png again from RESULTS/NAME.json and "
                   "OUT/soak-samples.csv of a finished run")
    g = p.add_argument_group("phases and limits")
    g.add_argument("--warmup-requests", type=int, default=20_000)
    g.add_argument("--warmup-tunnels", type=int, default=500)
    g.add_argument("--warmup-seconds", type=int, default=10)
    g.add_argument("--drain-seconds", type=int, default=120)
    g.add_argument("--idle-timeout", type=int, default=5, help="the proxy's client and pool idle timeouts")
    g.add_argument("--rss-slack-pct", type=int, default=10)
    g.add_argument("--fd-slack", type=int, default=16)
    add_binary_arguments(p)
    add_output_arguments(p, "soak")
    p.set_defaults(max_seconds=5400)


def main(args):
    out = Path(args.out)
    if args.replot:
        png = out / "soak.png"
        ok = replot(Path(args.results) / ("%s.json" % args.name), out / "soak-samples.csv", png)
        log("plot %s" % (relpath(png) if ok else "not drawn"))
        return 0 if ok else 1
    if not 0 < args.requests <= 100_000_000 or not 0 < args.tunnels <= 1_000_000:
        raise Fail("--requests: 1..100000000, --tunnels: 1..1000000")
    if not 3 <= args.round_seconds <= 600 or args.max_seconds < 120:
        raise Fail("--round-seconds must be 3..600 and --max-seconds at least 120")
    if args.proxy_user and ":" not in args.proxy_user:
        raise Fail("--proxy-user must be USER:PASS")
    require_tools(["nginx", "wrk", "curl"], services=["nginx"])
    try:
        import matplotlib  # noqa: F401  (the plot)
    except ImportError:
        log("installing matplotlib for the plot (python3 -m pip install matplotlib)")
        if subprocess.run(["python3", "-m", "pip", "install", "--quiet", "matplotlib"]).returncode != 0:
            raise Fail("could not install matplotlib; install it with: python3 -m pip install matplotlib") from None
    raise_nofile(4096)
    args.bin, revision = proxy_binary(args)
    args.proxy_args = shlex.split(args.proxy_args)
    # the load phase gets what is left of --max-seconds after start-up, warm-up and the drain
    args.max_load_seconds = max(60, args.max_seconds - 420)
    record = Run(args, "soak", ["nginx", "wrk", "curl"])
    record.doc["revision"] = revision
    record.doc["command"] = re.sub(r"(--proxy-user[ =])\S+", r"\1USER:***", record.doc["command"])
    record.doc["parameters"] = {k: v for k, v in vars(args).items()
                                if k in ("requests", "tunnels", "round_seconds", "warmup_requests", "warmup_tunnels",
                                         "idle_timeout", "rss_slack_pct", "fd_slack", "max_load_seconds")}
    soak = None
    complete, error = False, None
    with session(args.max_seconds, "httpdns-soak-") as workdir:
        soak = Soak(args, workdir)
        try:
            soak.main()
            complete = "incomplete" not in soak.result
            error = soak.result.get("incomplete")
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
        finally:
            soak.flapping.set()
            soak.sampling.set()
            soak.procs.stop_all()
    checks = soak.verdict()
    passed = complete and all(c[3] for c in checks)
    png = out / "soak.png"
    plot = None
    if soak.plot(png) and args.docs_plot:
        dest = REPO / "docs" / "img" / "soak.png"
        shutil.copyfile(png, dest)
        plot = "img/soak.png"
        log("plot copied to %s" % relpath(dest))
    record.results.update({
        "passed": passed,
        "checks": [{"check": c[0], "need": c[1], "have": c[2], "pass": c[3]} for c in checks],
        "baseline": getattr(soak, "baseline", None), "peak": getattr(soak, "peak", None),
        "after": getattr(soak, "after", None), "requests": soak.requests, "tunnels": soak.tunnels,
        "outcomes": [{"client": c, "outcome": o, "expected": e, "count": n}
                     for (c, o, e), n in sorted(soak.counts.items())],
        "load_seconds": round(getattr(soak, "load_seconds", 0) or 0, 1), "rounds": soak.rounds,
        "dns_cycles": soak.dns_cycles, "dns_queries": soak.dns_queries,
        "proxy_stats": getattr(soak, "proxy_stats", None), "plot": plot,
        "wrk_runs": soak.wrk_runs, "phases": soak.phases, "dns_events": soak.dns_events,
        "proxy_argv": getattr(soak, "proxy_argv", None),
        "rss_slack_pct": args.rss_slack_pct, "fd_slack": args.fd_slack,
    })
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    for name, need, have, ok in checks:
        log("%-34s need %-26s have %-24s %s" % (name, need, have, "ok" if ok else "FAIL"))
    log("PASS" if passed else "FAIL")
    return 0 if passed else 1


# ----------------------------------------------------------------------------- tables
def render(doc):
    r = doc["results"]
    b, p, af = r.get("baseline"), r.get("peak"), r.get("after")
    req, tun = r["requests"], r["tunnels"]
    lines = ["**%s**: %s HTTP requests and %s CONNECT tunnels in %s s of load (%d rounds; %s and %s in the "
             "warm-up); the fake HTTPDNS service stopped and restarted %d times."
             % ("PASS" if r["passed"] else "FAIL", fmt(req["load"]), fmt(tun["load"]), fmt(r.get("load_seconds")),
                r.get("rounds", 0), fmt(req["warm-up"]), fmt(tun["warm-up"]), r.get("dns_cycles", 0))]
    st = r.get("proxy_stats")
    if st:
        lines += ["", "The proxy's resolver (`/stats` totals): %s fresh cache hits, %s stale hits (expired answers "
                  "served while a refresh was failing or pending), %s queries to the service (%s answered), %s "
                  "fallbacks to system DNS." % (fmt(st.get("cacheHits")), fmt(st.get("staleHits")),
                                                fmt(st.get("queries")), fmt(st.get("successes")),
                                                fmt(st.get("fallbacksToSystem")))]
    if b and p and af:
        lines += ["", "| proxy | baseline (after warm-up, idle) | peak (load) | after (drained, idle) "
                  "| after − baseline |", "| --- | --- | --- | --- | --- |",
                  "| RSS KiB | %s | %s | %s | %s (%+.1f %%) |" % (
                      fmt(b["rss_kib"]), fmt(p["rss_kib"]), fmt(af["rss_kib"]),
                      "{:+,.0f}".format(af["rss_kib"] - b["rss_kib"]), 100 * (af["rss_kib"] / b["rss_kib"] - 1)),
                  "| open descriptors | %d | %d | %d | %+d |" % (b["fds"], p["fds"], af["fds"], af["fds"] - b["fds"]),
                  "| threads | %d | %d | %d | %+d |" % (b["threads"], p["threads"], af["threads"],
                                                       af["threads"] - b["threads"])]
    lines += ["", "| client / mix | outcome | expected | count |", "| --- | --- | --- | --- |"]
    for o in sorted(r["outcomes"], key=lambda o: (o["client"], not o["expected"], o["outcome"])):
        lines.append("| %s | %s | %s | %s |" % (o["client"], o["outcome"], "yes" if o["expected"] else "**no**",
                                                fmt(o["count"])))
    lines += ["", "| check | need | have | pass |", "| --- | --- | --- | --- |"]
    for c in r["checks"]:
        lines.append("| %s | %s | %s | %s |" % (c["check"], c["need"], c["have"], "yes" if c["pass"] else "**no**"))
    if r.get("plot"):
        lines += ["", "![RSS and descriptors of the proxy during the soak](%s)" % r["plot"]]
    return "\n".join(lines)
