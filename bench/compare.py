"""The comparison: httpdns-proxy against a direct connection, tinyproxy, squid and nginx as a
keep-alive proxy (the anchor for HTTP figures), all in one run on one machine.

    bench/bench run      HTTP through each proxy: keep-alive 1 KiB and 64 KiB (wrk -t2 -c64),
                         one connection (wrk -t1 -c1); medians of --rounds rounds
    bench/bench tunnels  CONNECT: 1 GiB through a tunnel, memory per idle tunnel (9,000 held)

Both run the same scenarios, chosen with --scenarios; `run --scenarios footprint`, `resolver`,
`ceiling` and `pinned` give the other tables. A local origin (nginx), the fake HTTPDNS service
and every proxy are started from generated configurations in a temporary directory, all on
loopback; every load is bounded in time and count.
"""
import grp
import json
import os
import pwd
import shutil
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

from . import perf_summary, pinned
from .lib.peers import fake_httpdns_argv, httpdns_proxy_json_args, nginx_argv, nginx_conf
from .lib.proc import Fail, Processes, clean_env, free_port, log, peer, run, session
from .lib.procfs import rss_split_kib, tree_cpu_seconds, tree_cpu_split, tree_rss_kib, tree_threads
from .lib.results import Run, add_output_arguments, fmt_num, ratio, relpath
from .lib.tools import add_binary_arguments, build_product, proxy_binary, raise_nofile, require_tools
from .lib.wrk import script, wrk

TARGETS = ["direct", "tinyproxy", "squid", "nginx-proxy", "httpdns-proxy", "httpdns-proxy-parent"]
# nginx is the anchor for HTTP figures: a keep-alive reverse-proxy pool, the best event-driven C
# path a user could pick; it has no CONNECT, so tunnel scenarios leave it out.
HTTP_ONLY = {"nginx-proxy"}
# httpdns-proxy with the squid target as its --parent-proxy (HTTPDNS resolves, squid is asked for
# CONNECT IP:port, plain HTTP rides pooled tunnels through it): its CPU column is httpdns-proxy's
# alone; squid's own cost is the squid column's. Needs the squid target; not in the default set.
PARENT = "httpdns-proxy-parent"
# --before-bin: a second httpdns-proxy binary (the "before" of a change) measured in the same
# rounds as the "after" one, as one more target
BEFORE = "httpdns-proxy-before"
SCENARIOS = ["keepalive", "light", "tunnel", "idle", "ceiling", "resolver", "footprint", "pinned"]
RELAYS = [("relay-copy-64k", "copy", 65536), ("relay-copy-1m", "copy", 1 << 20),
          ("relay-splice-1m", "splice", 1 << 20)]
GiB = 1 << 30


class Bench:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.out = Path(args.out)
        self.logs = self.out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        for stale in self.logs.glob("*.log"):  # logs of this run only
            stale.unlink()
        self.procs = Processes(self.workdir)
        self.ports = {}
        self.results = {}
        self.is_root = os.geteuid() == 0

    # ---- helpers
    @staticmethod
    def run(argv, timeout, env=None, check=True):
        return run(argv, timeout, env=env, check=check)

    def chown_for(self, path, user, group=None):
        if self.is_root:
            u = pwd.getpwnam(user)
            g = grp.getgrnam(group).gr_gid if group else u.pw_gid
            os.chown(path, u.pw_uid, g)

    # ---- servers
    def start_origin(self):
        d = self.workdir / "nginx"
        www = d / "www"
        www.mkdir(parents=True)
        (www / "1k").write_bytes(os.urandom(1024))
        (www / "64k").write_bytes(os.urandom(64 * 1024))
        with open(www / "1g", "wb") as f:  # sparse: nginx sends page-cache zeros
            f.truncate(GiB)
        # Read it once so the first target measured (direct) does not pay for filling the page
        # cache with 1 GiB of zero pages (that made direct look 5x slower than a proxy).
        with open(www / "1g", "rb", buffering=0) as f:
            chunk = bytearray(1 << 20)
            while f.readinto(chunk):
                pass
        for p in (self.workdir, d, www):
            os.chmod(p, 0o755)
        port = self.ports["nginx"] = free_port()
        (d / "nginx.conf").write_text(nginx_conf(d, f"""    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {www};
    }}
"""))
        self.procs.start("nginx", nginx_argv(d), self.logs / "nginx.log")
        self.procs.wait_port("nginx", port)
        res = self.run(["curl", "-sS", "--max-time", "5", "-o", "/dev/null", "-w",
                        "%{http_code} %{size_download}", "http://127.0.0.1:%d/1k" % port], 10)
        if res.stdout.strip() != "200 1024":
            raise Fail("nginx sanity check failed: %r" % res.stdout)
        log("nginx on 127.0.0.1:%d" % port)

    def start_fake_httpdns(self):
        port = self.ports["httpdns"] = free_port()
        self.procs.start("fake-httpdns", fake_httpdns_argv(port), self.logs / "fake-httpdns.log")
        self.procs.wait_port("fake-httpdns", port)
        log("fake HTTPDNS on 127.0.0.1:%d" % port)

    def start_idle_server(self):
        port = self.ports["idle"] = free_port()
        self.idle_status = self.workdir / "idle-status.json"
        self.procs.start("idle-server", peer("idle_tunnels", "server", "--port", port, "--status", self.idle_status),
                         self.logs / "idle-server.log")
        self.procs.wait_port("idle-server", port)
        log("idle TCP server on 127.0.0.1:%d" % port)

    def idle_live(self):
        try:
            return json.loads(self.idle_status.read_text())["live"]
        except (OSError, ValueError, KeyError):
            return -1

    def connect_ports(self):
        return [self.ports["nginx"]] + ([self.ports["idle"]] if "idle" in self.ports else [])

    def start_proxy(self, name, max_clients=None):
        port = self.ports[name] = free_port()
        d = self.workdir / name
        d.mkdir(exist_ok=True)
        logpath = self.logs / ("%s.log" % name)
        if name in ("httpdns-proxy", BEFORE, PARENT):
            admin = free_port()
            binary = self.args.before_bin if name == BEFORE else self.args.proxy_bin
            argv = [binary, "--listen", "127.0.0.1:%d" % port,
                    "--admin-listen", "127.0.0.1:%d" % admin,
                    *httpdns_proxy_json_args(self.ports["httpdns"]),
                    "--allow-destination", "127.0.0.0/8",
                    "--connect-ports", ",".join(map(str, self.connect_ports())),
                    "--access-log", str(d / "access.log") if self.args.access_log == "on" else "off",
                    "--log-level", "warning",
                    # every load comes from one client IP; the default per-client limit (256)
                    # would refuse most of the idle tunnels
                    "--max-connections-per-client", str(max_clients or 4096)]
            if name == PARENT:
                argv += ["--parent-proxy", "http://127.0.0.1:%d" % self.ports["squid"]]
        elif name == "nginx-proxy":
            # nginx as the proxy anchor: 2 workers (one per core here), an upstream keep-alive
            # pool to the origin, HTTP/1.1 upstream, buffering as shipped. It takes the
            # absolute-form request line wrk sends through a proxy.
            for sub in ("tmp-body", "tmp-proxy"):
                (d / sub).mkdir(exist_ok=True)
            if self.is_root:
                self.chown_for(d, "nobody", "nogroup")
            (d / "nginx.conf").write_text(nginx_conf(d, f"""    upstream bench_origin {{
        server 127.0.0.1:{self.ports["nginx"]};
        keepalive 128;
        keepalive_requests 1000000;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://bench_origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
        }}
    }}
""", workers=2))
            argv = nginx_argv(d)
        elif name == "squid":
            user = "proxy"
            try:
                pwd.getpwnam(user)
            except KeyError:
                user = "nobody"
            self.chown_for(d, user)
            ports = " ".join(map(str, self.connect_ports()))
            (d / "squid.conf").write_text(f"""# minimal squid for the benchmark: loopback only, no cache, no access log
http_port 127.0.0.1:{port}
visible_hostname bench-squid
pid_filename {d}/squid.pid
cache_log {d}/cache.log
coredump_dir {d}
cache_effective_user {user}
access_log none
cache_store_log none
logfile_rotate 0
cache deny all
cache_mem 0 MB
acl bench_connect_ports port {ports}
acl CONNECT method CONNECT
http_access deny CONNECT !bench_connect_ports
http_access allow localhost
http_access deny all
max_filedescriptors {self.args.nofile}
dns_nameservers 127.0.0.1
pinger_enable off
netdb_filename none
client_db off
half_closed_clients off
shutdown_lifetime 1 seconds
""")
            argv = ["squid", "-N", "-f", str(d / "squid.conf")]
        elif name == "tinyproxy":
            user_lines = ""
            if self.is_root:
                group = "nogroup"
                try:
                    grp.getgrnam(group)
                except KeyError:
                    group = "nobody"
                user_lines = "User nobody\nGroup %s\n" % group
                self.chown_for(d, "nobody", group)
            connect = "".join("ConnectPort %d\n" % p for p in self.connect_ports())
            (d / "tinyproxy.conf").write_text(f"""# minimal tinyproxy for the benchmark: loopback only
{user_lines}Port {port}
Listen 127.0.0.1
Timeout 600
MaxClients {max_clients or 1024}
LogLevel Error
LogFile "{d}/tinyproxy.log"
PidFile "{d}/tinyproxy.pid"
Allow 127.0.0.1
{connect}""")
            argv = ["tinyproxy", "-d", "-c", str(d / "tinyproxy.conf")]
        else:
            raise Fail("unknown proxy " + name)
        self.procs.start(name, argv, logpath)
        self.procs.wait_port(name, port)
        return port

    def stop_proxy(self, name):
        self.procs.stop(name)
        for f in (self.workdir / name).glob("*.log"):
            try:
                (self.logs / ("%s-%s" % (name, f.name))).write_bytes(f.read_bytes()[-65536:])
            except OSError:
                pass

    # ---- what goes on the wire
    def request_for(self, target, path):
        """(wrk connect URL, request-line target, Host header, curl args)"""
        nginx = self.ports["nginx"]
        if target == "direct":
            host = "127.0.0.1:%d" % nginx
            return "http://%s" % host, path, host, ["http://%s%s" % (host, path)]
        # squid and tinyproxy resolve with system DNS: the literal avoids any lookup;
        # httpdns-proxy resolves origin.test through the fake HTTPDNS service (cache path)
        host = ("origin.test:%d" if target in ("httpdns-proxy", BEFORE, PARENT) else "127.0.0.1:%d") % nginx
        proxy = "http://127.0.0.1:%d" % self.ports[target]
        return proxy, "http://%s%s" % (host, path), host, ["-x", proxy, "http://%s%s" % (host, path)]

    def sanity(self, target):
        _, _, _, curl_args = self.request_for(target, "/1k")
        res = self.run(["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w",
                        "%{http_code} %{size_download}"] + curl_args, 20, check=False)
        if res.stdout.strip() != "200 1024":
            raise Fail("%s: GET /1k sanity check failed: %r %s" % (target, res.stdout,
                                                                   res.stderr.strip()))

    def wrk(self, target, path, threads, conns, duration, label=None):
        url, req_target, host, _ = self.request_for(target, path)
        argv = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % duration, "--latency",
                "--timeout", "5s", "-s", script("absolute.lua"), url]
        pid = self.procs.pid(target) if target in self.procs.procs else None
        nginx_pid = self.procs.pid("nginx")
        split0 = tree_cpu_split(pid) if pid else (0, 0)
        cpu0 = sum(split0)
        ncpu0 = tree_cpu_seconds(nginx_pid)
        t0 = time.monotonic()
        r = wrk(argv, {"BENCH_TARGET": req_target, "BENCH_HOST": host}, duration + 30)
        wall = time.monotonic() - t0
        secs = r["duration_us"] / 1e6
        e = r["errors"]
        out = {
            "requests": r["requests"], "seconds": round(secs, 3),
            "rps": round(r["requests"] / secs, 1),
            "mb_per_s": round(r["bytes"] / secs / 1e6, 1),
            "p50_ms": r["latency_us"]["p50"] / 1000, "p90_ms": r["latency_us"]["p90"] / 1000,
            "p99_ms": r["latency_us"]["p99"] / 1000, "p999_ms": r["latency_us"]["p999"] / 1000,
            "mean_ms": round(r["latency_us"]["mean"] / 1000, 3),
            "max_ms": r["latency_us"]["max"] / 1000,
            "non_2xx": e["status"],
            "socket_errors": {k: e[k] for k in ("connect", "read", "write", "timeout")},
            "errors": e["status"] + e["connect"] + e["read"] + e["write"] + e["timeout"],
            "nginx_cpu_pct": round(100 * (tree_cpu_seconds(nginx_pid) - ncpu0) / wall, 1),
        }
        if pid:
            out["proxy_cpu_pct"] = round(100 * (tree_cpu_seconds(pid) - cpu0) / wall, 1)
            out["proxy_rss_kib_after"] = tree_rss_kib(pid)
            split1 = tree_cpu_split(pid)
            n = max(1, r["requests"])
            out["proxy_cpu_us_per_req"] = round((sum(split1) - cpu0) * 1e6 / n, 1)
            out["proxy_user_us_per_req"] = round((split1[0] - split0[0]) * 1e6 / n, 1)
            out["proxy_sys_us_per_req"] = round((split1[1] - split0[1]) * 1e6 / n, 1)
        log("  %-13s %-22s %9.0f req/s  p50 %.3f ms  p99 %.3f ms  errors %d"
            % (target, label or path, out["rps"], out["p50_ms"], out["p99_ms"], out["errors"]))
        return out

    def tunnel_once(self, target):
        """One 1 GiB download through a CONNECT tunnel (curl -p -x), or straight from nginx."""
        nginx = self.ports["nginx"]
        url = "http://127.0.0.1:%d/1g" % nginx
        argv = ["curl", "-sS", "--max-time", str(self.args.tunnel_timeout), "-o", "/dev/null",
                "-w", "%{http_code} %{size_download} %{speed_download}"]
        if target != "direct":
            argv += ["-p", "-x", "http://127.0.0.1:%d" % self.ports[target]]
        argv.append(url)
        pid = self.procs.pid(target) if target in self.procs.procs else None
        nginx_pid = self.procs.pid("nginx")
        c0, n0, t0 = (tree_cpu_seconds(pid) if pid else 0), tree_cpu_seconds(nginx_pid), time.monotonic()
        res = self.run(argv, self.args.tunnel_timeout + 15, check=False)
        wall = time.monotonic() - t0
        parts = res.stdout.split()
        if res.returncode != 0 or len(parts) != 3 or parts[0] != "200" or int(parts[1]) != GiB:
            raise Fail("%s: 1 GiB tunnel download failed: %r %s"
                       % (target, res.stdout, res.stderr.strip()))
        out = {"mb_per_s": round(float(parts[2]) / 1e6, 1),
               "nginx_cpu_pct": round(100 * (tree_cpu_seconds(nginx_pid) - n0) / wall, 1)}
        if pid:
            out["proxy_cpu_pct"] = round(100 * (tree_cpu_seconds(pid) - c0) / wall, 1)
        return out

    def tunnel_throughput(self, target):
        return aggregate_tunnel([self.tunnel_once(target) for _ in range(self.args.tunnel_runs)])

    def idle_tunnels(self, name, n):
        port = self.start_proxy(name, max_clients=n + 100)
        pid = self.procs.pid(name)
        time.sleep(1.0)
        rss0, threads0 = tree_rss_kib(pid), tree_threads(pid)
        live0 = self.idle_live()
        with open(self.logs / "tunnel-client.log", "ab") as errors:
            client = subprocess.Popen(
                peer("idle_tunnels", "client", "--proxy-port", port, "--target", "127.0.0.1:%d" % self.ports["idle"],
                     "-n", n, "--deadline", self.args.idle_deadline),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                text=True, start_new_session=True, env=clean_env())
        self.procs.adopt("tunnel-client", client, self.logs / "tunnel-client.log")
        try:
            opened = self._read_phase(client, "open")
            time.sleep(2.0)  # let the proxy settle
            rss1, threads1 = tree_rss_kib(pid), tree_threads(pid)
            end = time.monotonic() + 10
            while self.idle_live() - live0 < opened["ok"] and time.monotonic() < end:
                time.sleep(0.25)
            live = self.idle_live() - live0
            client.stdin.write("check\n")
            client.stdin.flush()
            checked = self._read_phase(client, "check")
            time.sleep(1.0)
            # after one byte each way through every tunnel: buffers a proxy keeps per tunnel
            rss2 = tree_rss_kib(pid)
            client.stdin.write("burst %d\n" % self.args.burst)
            client.stdin.flush()
            burst = self._read_phase(client, "burst")
            time.sleep(1.0)
            # after a burst: what a tunnel that carried data and then went quiet keeps
            rss3 = tree_rss_kib(pid)
            client.stdin.write("close\n")
            client.stdin.flush()
            self._read_phase(client, "closed")
        finally:
            self.procs.stop("tunnel-client")
            self.stop_proxy(name)
        ok = opened["ok"]
        out = {
            "n": n, "opened": ok, "failed": opened["failed"], "open_errors": opened["errors"],
            "open_seconds": opened["seconds"], "reached_server": live,
            "echo_ok": checked["ok"], "echo_failed": checked["failed"],
            "rss_before_kib": rss0, "rss_after_kib": rss1,
            "threads_before": threads0, "threads_after": threads1,
            "kib_per_tunnel": round((rss1 - rss0) / ok, 2) if ok else None,
            "rss_after_echo_kib": rss2,
            "kib_per_tunnel_after_echo": round((rss2 - rss0) / ok, 2) if ok else None,
            "burst_bytes": self.args.burst, "burst_ok": burst["ok"], "burst_failed": burst["failed"],
            "burst_seconds": burst["seconds"], "rss_after_burst_kib": rss3,
            "kib_per_tunnel_after_burst": round((rss3 - rss0) / ok, 2) if ok else None,
        }
        log("  %-13s %d idle tunnels: %d ok, %d failed, echo %d/%d, RSS %d -> %d KiB, %.2f KiB/tunnel"
            " (%.2f after one byte each way, %.2f after %d bytes each way, %d burst failures)"
            % (name, n, ok, opened["failed"], checked["ok"], ok, rss0, rss1,
               out["kib_per_tunnel"] or 0, out["kib_per_tunnel_after_echo"] or 0,
               out["kib_per_tunnel_after_burst"] or 0, self.args.burst, burst["failed"]))
        return out

    def pinned(self):
        """bench pinned's measurement: CPU per 1 KiB request on one kept-alive connection, origin,
        proxy and client pinned to one core, and system calls per request, httpdns-proxy (and
        httpdns-proxy-before) beside nginx-proxy."""
        log("pinned: one connection, one core, %d rounds of %d s" % (max(3, self.args.rounds),
                                                                    min(5, self.args.duration)))
        bins = [("httpdns-proxy", self.args.proxy_bin)]
        if self.args.before_bin:
            bins.append((BEFORE, self.args.before_bin))
        doc = pinned.measure(bins, rounds=max(3, self.args.rounds), duration=min(5, self.args.duration),
                             access_log=self.args.access_log, workdir=self.workdir / "pinned")
        result = {}
        for name, runs in doc["cpu_us_per_request"].items():
            result[name] = {"cpu_us_per_request": statistics.median(runs), "runs": runs,
                            "syscalls_per_request": doc["syscalls"][name]["per_request"]}
        return result

    def ceiling(self):
        """1 GiB through minimal relays (bench/relay.py) next to direct and httpdns-proxy."""
        names = ["direct"] + [r[0] for r in RELAYS]
        try:
            for name, mode, chunk in RELAYS:
                port = self.ports[name] = free_port()
                self.procs.start(name, peer("relay", "--port", port, "--mode", mode, "--chunk", chunk),
                                 self.logs / ("%s.log" % name))
                self.procs.wait_port(name, port)
            if "httpdns-proxy" in self.args.targets:
                self.start_proxy("httpdns-proxy")
                names.append("httpdns-proxy")
            log("ceiling: CONNECT 1 GiB through minimal relays, %d runs each" % self.args.tunnel_runs)
            self.tunnel_once("direct")
            runs = {}
            for r in range(self.args.tunnel_runs):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    runs.setdefault(name, []).append(self.tunnel_once(name))
            out = self.results.setdefault("ceiling", {})
            for name in names:
                out[name] = aggregate_tunnel(runs[name])
                log("  %-16s %7.1f MB/s (runs %s)" % (name, out[name]["mb_per_s"],
                                                     out[name]["runs_mb_per_s"]))
        finally:
            for name in [r[0] for r in RELAYS] + ["httpdns-proxy"]:
                if name in self.procs.procs:
                    self.stop_proxy(name) if name == "httpdns-proxy" else self.procs.stop(name)

    def resolver(self):
        """Benchmarks/ResolverBench: the cache and the proxy's resolver interface on a cache hit
        (10,000 names in random order, and one hot name), then cold lookups through an in-process
        fake HTTPDNS service over real HTTP (one at a time: latency; 32 in flight: rate)."""
        if not self.args.resolver_bench:
            raise Fail("resolver scenario without --resolver-bench")
        log("resolver: cached and cold lookups (resolver-bench)")
        res = self.run([self.args.resolver_bench, "3"], 180)
        text = res.stdout
        (self.logs / "resolver-bench.txt").write_text(text)
        start = text.find("\n{")
        if start < 0:
            raise Fail("resolver-bench printed no JSON (see bench/out/logs/resolver-bench.txt)")
        out = json.loads(text[start + 1:])
        log("  cached: %.0f ns (10k names), %.0f ns (hot name); interface %.0f / %.0f ns; "
            "cold p50 %.0f µs, %.0f lookups/s"
            % (out["caching_resolver_cached_ns"], out["caching_resolver_cached_hot_ns"],
               out["upstream_resolver_cached_ns"], out["upstream_resolver_cached_hot_ns"],
               out.get("cold_lookup_p50_us", 0), out["cold_lookups_per_second"]))
        return out

    def footprint(self, name):
        """Memory a proxy holds: fresh (2 s after start, one request served), after the 1 KiB
        keep-alive load (wrk -t2 -c64), and after an idle minute (--idle-seconds) — the figures
        users of a sidecar compare first. File-backed (binary and libraries) and anonymous
        memory are reported apart (smaps_rollup)."""
        self.start_proxy(name)
        try:
            pid = self.procs.pid(name)
            self.sanity(name)
            time.sleep(2.0)
            fresh = rss_split_kib(pid)
            threads = {"fresh": tree_threads(pid)}
            load = self.wrk(name, "/1k", 2, 64, self.args.duration, "footprint load")
            time.sleep(0.5)
            loaded = rss_split_kib(pid)
            threads["after_load"] = tree_threads(pid)
            log("  %-13s idle %d s" % (name, self.args.idle_seconds))
            time.sleep(self.args.idle_seconds)
            idle = rss_split_kib(pid)
            threads["after_idle"] = tree_threads(pid)
        finally:
            self.stop_proxy(name)
        out = {"fresh": fresh, "after_load": loaded, "after_idle": idle, "threads": threads,
               "load_requests": load["requests"], "idle_seconds": self.args.idle_seconds}
        if name == "httpdns-proxy":
            out["binary_bytes"] = os.path.getsize(self.args.proxy_bin)
            stripped = self.workdir / "httpdns-proxy.stripped"
            if shutil.which("strip") and self.run(["strip", "-o", str(stripped), self.args.proxy_bin],
                                                   120, check=False).returncode == 0:
                out["stripped_bytes"] = os.path.getsize(stripped)
                stripped.unlink()
        log("  %-13s RSS fresh %.1f MiB (anon %.1f), after load %.1f MiB (anon %.1f), after %d s idle "
            "%.1f MiB (anon %.1f); threads (all processes) fresh %d, after load %d, idle %d"
            % (name, fresh["rss"] / 1024, fresh["anon"] / 1024, loaded["rss"] / 1024,
               loaded["anon"] / 1024, self.args.idle_seconds, idle["rss"] / 1024, idle["anon"] / 1024,
               threads["fresh"], threads["after_load"], threads["after_idle"]))
        return out

    def _read_phase(self, client, phase):
        line = client.stdout.readline()
        if not line:
            raise Fail("tunnel client ended before phase %r (see bench/out/logs/tunnel-client.log)"
                       % phase)
        obj = json.loads(line)
        if obj.get("phase") != phase:
            raise Fail("tunnel client: expected phase %r, got %r" % (phase, obj))
        return obj

    # ---- profile (optional)
    def profile(self):
        if not shutil.which("perf"):
            log("perf not found: skipping the profile")
            return
        self.start_proxy("httpdns-proxy")
        try:
            pid = self.procs.pid("httpdns-proxy")
            self.sanity("httpdns-proxy")
            for label in ("keepalive-1k", "tunnel-1g"):
                data = self.out / ("perf-%s.data" % label)
                for old in (data, data.with_name(data.name + ".old")):
                    old.unlink(missing_ok=True)  # perf would keep the previous one as .old
                # Swift's release code keeps no frame pointers, so -g loses user-space callers;
                # --profile-stacks dwarf unwinds them (about 6 MB of data a second).
                stacks = (["-F", "299", "--call-graph", "dwarf,16384"] if self.args.profile_stacks == "dwarf"
                          else ["-F", "499", "-g"])
                perf = subprocess.Popen(["perf", "record", *stacks, "-p", str(pid),
                                         "-o", str(data), "--", "sleep", str(self.args.duration)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
                self.procs.adopt("perf", perf, self.logs / "perf.log")
                time.sleep(0.5)
                if label == "keepalive-1k":
                    self.wrk("httpdns-proxy", "/1k", 2, 64, self.args.duration - 1, "profile 1k")
                else:
                    t = self.tunnel_throughput("httpdns-proxy")
                    log("  httpdns-proxy CONNECT 1 GiB under perf: %s MB/s" % t["runs_mb_per_s"])
                try:
                    perf.wait(self.args.duration + 30)
                finally:
                    self.procs.stop("perf")
                report = self.out / ("perf-%s.txt" % label)
                res = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children",
                                      "--sort", "dso,symbol", "--percent-limit", "0.7", "-g", "none"],
                                     capture_output=True, text=True, timeout=300)
                text = res.stdout
                if shutil.which("swift"):
                    dm = subprocess.run(["swift", "demangle", "--simplified"], input=text,
                                        capture_output=True, text=True, timeout=120)
                    if dm.returncode == 0:
                        text = dm.stdout
                report.write_text(text)
                summary = self.out / ("perf-%s-summary.txt" % label)
                summary.write_text(perf_summary.summarize(data))
                log("profile written to %s and %s" % (relpath(report), relpath(summary)))
        finally:
            self.stop_proxy("httpdns-proxy")

    # ---- the run
    def main(self):
        a = self.args
        targets = a.targets
        self.start_origin()
        if {"httpdns-proxy", PARENT} & set(targets):
            self.start_fake_httpdns()
        if "idle" in a.scenarios:
            self.start_idle_server()
        traffic = [x for x in ("keepalive", "light", "tunnel") if x in a.scenarios]
        if traffic:
            # All proxies run side by side (an idle proxy costs no CPU) so each test can visit the
            # targets one after the other, round after round, with the starting target rotating:
            # load from other work on the machine then spreads over all targets alike.
            try:
                for target in targets:
                    if target != "direct":
                        self.start_proxy(target)
                    self.sanity(target)
                    if {"keepalive", "light"} & set(traffic):
                        self.wrk(target, "/1k", 2, 64, min(3, a.duration), "warm-up")
                runs = {}
                tests = []
                if "keepalive" in traffic:
                    tests += [("keepalive_1k", "/1k", 2, 64, "keep-alive 1 KiB"),
                              ("keepalive_64k", "/64k", 2, 64, "keep-alive 64 KiB")]
                if "light" in traffic:
                    tests += [("light_1k", "/1k", 1, 1, "1 connection 1 KiB")]
                for r in range(a.rounds):
                    order = targets[r % len(targets):] + targets[:r % len(targets)]
                    log("round %d/%d" % (r + 1, a.rounds))
                    for key, path, threads, conns, label in tests:
                        for target in order:
                            runs.setdefault((target, key), []).append(
                                self.wrk(target, path, threads, conns, a.duration, label))
                if "tunnel" in traffic:
                    log("CONNECT 1 GiB, %d runs per target" % a.tunnel_runs)
                    self.tunnel_once("direct")  # unmeasured: page cache and TCP warm
                    tunnel_targets = [t for t in targets if t not in HTTP_ONLY]
                    for r in range(a.tunnel_runs):
                        order = (tunnel_targets[r % len(tunnel_targets):]
                                 + tunnel_targets[:r % len(tunnel_targets)])
                        for target in order:
                            runs.setdefault((target, "tunnel_1g"), []).append(
                                self.tunnel_once(target))
                for (target, key), values in runs.items():
                    agg = aggregate_tunnel(values) if key == "tunnel_1g" else aggregate_wrk(values)
                    self.results.setdefault(target, {})[key] = agg
                    if key == "tunnel_1g":
                        log("  %-13s CONNECT 1 GiB median %.1f MB/s (runs %s)"
                            % (target, agg["mb_per_s"], agg["runs_mb_per_s"]))
            finally:
                for target in targets:
                    if target != "direct":
                        self.stop_proxy(target)
        if "ceiling" in a.scenarios:
            self.ceiling()
        if "pinned" in a.scenarios:
            self.results["pinned"] = self.pinned()
        if "idle" in a.scenarios:
            for target in targets:
                if target in ("direct", PARENT) or target in HTTP_ONLY:
                    continue
                n = a.tinyproxy_tunnels if target == "tinyproxy" else a.tunnels
                log("idle tunnels through %s (N=%d)" % (target, n))
                self.results.setdefault(target, {})["idle_tunnels"] = self.idle_tunnels(target, n)
        if "resolver" in a.scenarios:
            self.results.setdefault("httpdns-proxy", {})["resolver"] = self.resolver()
        if "footprint" in a.scenarios:
            for target in targets:
                if target in ("httpdns-proxy", "nginx-proxy"):
                    self.results.setdefault(target, {})["footprint"] = self.footprint(target)
        if a.profile and "httpdns-proxy" in targets:
            log("profiling httpdns-proxy with perf")
            self.profile()
        if "httpdns" in self.ports:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/stats" % self.ports["httpdns"],
                                            timeout=5) as r:
                    self.fake_dns_stats = json.loads(r.read())
            except Exception:  # noqa: BLE001
                self.fake_dns_stats = None



def aggregate_wrk(runs):
    """Several wrk runs of one test and target: medians, errors and requests summed."""
    out = {"rounds": len(runs)}
    for key in ("rps", "mb_per_s", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "mean_ms", "max_ms",
                "proxy_cpu_pct", "nginx_cpu_pct", "proxy_cpu_us_per_req", "proxy_user_us_per_req",
                "proxy_sys_us_per_req"):
        values = [r[key] for r in runs if key in r]
        if values:
            out[key] = round(statistics.median(values), 3)
    for key in ("requests", "non_2xx", "errors"):
        out[key] = sum(r[key] for r in runs)
    out["socket_errors"] = {k: sum(r["socket_errors"][k] for r in runs)
                            for k in runs[0]["socket_errors"]}
    out["runs"] = runs
    return out


def aggregate_tunnel(runs):
    out = {"mb_per_s": round(statistics.median(r["mb_per_s"] for r in runs), 1),
           "runs_mb_per_s": [r["mb_per_s"] for r in runs],
           "nginx_cpu_pct": round(statistics.median(r["nginx_cpu_pct"] for r in runs), 1)}
    cpu = [r["proxy_cpu_pct"] for r in runs if "proxy_cpu_pct" in r]
    if cpu:
        out["proxy_cpu_pct"] = round(statistics.median(cpu), 1)
    return out



# ----------------------------------------------------------------------------- command line
def add_arguments(p, tunnels=False):
    default_scenarios = "tunnel,idle" if tunnels else "keepalive,light"
    default_targets = "direct,tinyproxy,squid,httpdns-proxy" if tunnels else ",".join(t for t in TARGETS if t != PARENT)
    p.add_argument("--scenarios", default=default_scenarios,
                   help="comma-separated, of: keepalive (wrk -t2 -c64, 1 KiB and 64 KiB), light (wrk -t1 -c1, "
                        "1 KiB), tunnel (1 GiB through CONNECT), idle (RSS per idle CONNECT tunnel), ceiling "
                        "(1 GiB through minimal relays), resolver (Benchmarks/ResolverBench), footprint (RSS "
                        "fresh, loaded, idle; binary size), pinned (bench pinned's CPU per request) "
                        "(default %s)" % default_scenarios)
    p.add_argument("--targets", default=default_targets,
                   help="comma-separated, of: %s (default %s; %s is httpdns-proxy with the squid target "
                        "as its parent proxy)" % (",".join(TARGETS), default_targets, PARENT))
    p.add_argument("--duration", type=int, default=10, help="seconds of each wrk run (2..120, default 10)")
    p.add_argument("--rounds", type=int, default=3, help="wrk rounds over all targets; medians are reported "
                   "(default 3: the median of 3 sets one disturbed run aside)")
    p.add_argument("--tunnels", type=int, default=9000, help="idle tunnels per proxy (default 9000)")
    p.add_argument("--tinyproxy-tunnels", type=int, default=9000, help="idle tunnels for tinyproxy (default 9000)")
    p.add_argument("--tunnel-runs", type=int, default=5, help="1 GiB downloads per target; the median is "
                   "reported (default 5)")
    p.add_argument("--burst", type=int, default=65536, help="bytes each way through every idle tunnel after "
                   "the echo (default 65536)")
    p.add_argument("--tunnel-timeout", type=int, default=60, help="curl's limit per 1 GiB download (seconds)")
    p.add_argument("--idle-deadline", type=int, default=240, help="the idle-tunnel client's deadline (seconds)")
    p.add_argument("--access-log", choices=["on", "off"], default="on",
                   help="httpdns-proxy's access log, to a file (default on: how users run it; the reference "
                        "proxies run with theirs off)")
    p.add_argument("--idle-seconds", type=int, default=60, help="idle time in the footprint scenario (default 60)")
    p.add_argument("--profile", action="store_true", help="also record a perf profile of httpdns-proxy (1 KiB "
                   "keep-alive and a 1 GiB tunnel) into OUT/perf-*.txt")
    p.add_argument("--profile-stacks", choices=["fp", "dwarf"], default="fp",
                   help="how --profile unwinds call stacks: frame pointers (small, user-space callers cut "
                   "short) or dwarf (whole stacks; what the per-function breakdowns in the docs use)")
    p.add_argument("--before-bin", metavar="PATH", default="",
                   help="also measure this httpdns-proxy binary (the before of a change) as target %s, in "
                        "the same rounds (keepalive, light, tunnel, idle, pinned)" % BEFORE)
    p.add_argument("--resolver-bench", metavar="PATH", help="the resolver-bench binary (default: build it)")
    add_binary_arguments(p)
    add_output_arguments(p, "tunnels" if tunnels else "run")


def main(args):
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    args.targets = [t for t in args.targets.split(",") if t]
    for s in args.scenarios:
        if s not in SCENARIOS:
            raise Fail("unknown scenario %r (known: %s)" % (s, ", ".join(SCENARIOS)))
    for t in args.targets:
        if t not in TARGETS:
            raise Fail("unknown target %r (known: %s)" % (t, ", ".join(TARGETS)))
    if not 2 <= args.duration <= 120:
        raise Fail("--duration must be 2..120 seconds")
    if not 1 <= args.rounds <= 10:
        raise Fail("--rounds must be 1..10")
    if max(args.tunnels, args.tinyproxy_tunnels) > 9500:
        raise Fail("at most 9500 tunnels (two sockets each)")
    order = list(TARGETS)
    if args.before_bin:
        if "httpdns-proxy" not in args.targets:
            raise Fail("--before-bin needs the httpdns-proxy target")
        if not os.access(args.before_bin, os.X_OK):
            raise Fail("not an executable: %s" % args.before_bin)
        args.before_bin = os.path.abspath(args.before_bin)
        order.append(BEFORE)
        args.targets.append(BEFORE)
    if PARENT in args.targets and "squid" not in args.targets:
        raise Fail("the %s target needs the squid target (its parent)" % PARENT)
    args.targets = [t for t in order if t in args.targets]  # canonical order
    tools = ["nginx", "wrk", "curl"] + [t for t in ("squid", "tinyproxy") if t in args.targets]
    if "pinned" in args.scenarios:
        tools += ["taskset", "strace"]
    require_tools(tools, services=[t for t in ("nginx", "squid", "tinyproxy") if t in tools])
    need = 2 * max(args.tunnels, args.tinyproxy_tunnels) + 200 if "idle" in args.scenarios else 0
    args.nofile = raise_nofile(need)
    args.proxy_bin, revision = proxy_binary(args)
    if "resolver" in args.scenarios and not args.resolver_bench:
        args.resolver_bench = build_product(args, "resolver-bench")
    record = Run(args, "run", tools + ["swift"])
    record.doc["revision"] = revision
    record.doc["parameters"] = {k: v for k, v in vars(args).items()
                                if k in ("scenarios", "targets", "duration", "rounds", "tunnels", "tinyproxy_tunnels",
                                         "tunnel_runs", "burst", "access_log", "idle_seconds", "nofile")}
    complete, error = False, None
    with session(args.max_seconds) as workdir:
        bench = Bench(args, workdir)
        try:
            bench.main()
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
        finally:
            bench.procs.stop_all()
    record.results.update(bench.results)
    if getattr(bench, "fake_dns_stats", None) is not None:
        record.doc["fake_httpdns_queries"] = bench.fake_dns_stats.get("total")
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1



# ----------------------------------------------------------------------------- tables
def get(results, target, *keys):
    cur = results.get(target)
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            return None
        cur = cur[k]
    return cur


def added_p50_us(results, target):
    t = get(results, target, "light_1k", "p50_ms")
    d = get(results, "direct", "light_1k", "p50_ms")
    if t is None or d is None:
        return None
    return (t - d) * 1000


def render(doc):
    results = doc["results"]
    params = doc["parameters"]
    targets = [t for t in TARGETS + [BEFORE] if t in results]
    sections = []
    http = [t for t in targets if get(results, t, "keepalive_1k") or get(results, t, "light_1k")]
    if http:
        sections.append(_table(results, http, params, [
            ("1 KiB keep-alive req/s (-t2 -c64)", ("keepalive_1k", "rps"), 0, 1, True),
            ("1 KiB keep-alive p50 ms", ("keepalive_1k", "p50_ms"), 2, 1, True),
            ("1 KiB keep-alive p99 ms", ("keepalive_1k", "p99_ms"), 2, 1, True),
            ("1 KiB errors (all rounds)", ("keepalive_1k", "errors"), 0, 1, False),
            ("1 KiB proxy CPU µs/request", ("keepalive_1k", "proxy_cpu_us_per_req"), 1, 1, True),
            ("  of which kernel", ("keepalive_1k", "proxy_sys_us_per_req"), 1, 1, True),
            ("64 KiB keep-alive req/s (-t2 -c64)", ("keepalive_64k", "rps"), 0, 1, True),
            ("64 KiB keep-alive p99 ms", ("keepalive_64k", "p99_ms"), 2, 1, True),
            ("64 KiB errors (all rounds)", ("keepalive_64k", "errors"), 0, 1, False),
            ("64 KiB proxy CPU µs/request", ("keepalive_64k", "proxy_cpu_us_per_req"), 1, 1, True),
            ("one connection 1 KiB p50 µs (-t1 -c1)", ("light_1k", "p50_ms"), 0, 1000, True),
            ("one connection 1 KiB p99 µs (-t1 -c1)", ("light_1k", "p99_ms"), 0, 1000, True),
            ("one connection: added p50 over direct µs", added_p50_us, 0, 1, True),
        ]))
    tun = [t for t in targets if get(results, t, "tunnel_1g") or get(results, t, "idle_tunnels")]
    if tun:
        rows = [("CONNECT 1 GiB MB/s (median of %s)" % params.get("tunnel_runs", "?"), ("tunnel_1g", "mb_per_s"),
                 0, 1, True),
                ("idle tunnel KiB/tunnel", ("idle_tunnels", "kib_per_tunnel"), 1, 1, True),
                ("  after 1 byte each way", ("idle_tunnels", "kib_per_tunnel_after_echo"), 1, 1, True),
                ("  after %s bytes each way" % fmt_num(params.get("burst", 65536)),
                 ("idle_tunnels", "kib_per_tunnel_after_burst"), 1, 1, True),
                ("idle tunnels held", _held, None, 1, False)]
        sections.append(_table(results, tun, params, rows))
    if results.get("ceiling"):
        ceiling = results["ceiling"]
        labels = {"relay-copy-64k": "relay, 64 KiB read/write", "relay-copy-1m": "relay, 1 MiB read/write",
                  "relay-splice-1m": "relay, splice(2), 1 MiB pipe"}
        d = ceiling.get("direct", {}).get("mb_per_s")
        lines = ["| path (1 GiB) | MB/s (median) | ÷ direct | downloads |", "| --- | --- | --- | --- |"]
        for name, v in ceiling.items():
            lines.append("| %s | %s | %s | %s |" % (labels.get(name, name), fmt_num(v["mb_per_s"]),
                                                    ratio(v["mb_per_s"], d),
                                                    ", ".join(fmt_num(x) for x in v["runs_mb_per_s"])))
        sections.append("\n".join(lines))
    rv = get(results, "httpdns-proxy", "resolver")
    if rv:
        lines = ["| measurement | result |", "| --- | ---: |"]
        for label, key, unit in (
                ("`DNSCache.lookup`, 10,000 names in random order (the value-type cache alone)",
                 "cache_core_ns_per_lookup", "ns"),
                ("`CachingResolver.cached`, same names (lock, lookup, hit counted)", "caching_resolver_cached_ns",
                 "ns"),
                ("`CachingResolver.cached`, one hot name", "caching_resolver_cached_hot_ns", "ns"),
                ("`HTTPDNSUpstreamResolver.resolve`, cache hit, 10,000 names (+ `SocketAddress`es and a "
                 "succeeded future)", "upstream_resolver_cached_ns", "ns"),
                ("same, one hot name", "upstream_resolver_cached_hot_ns", "ns"),
                ("cold lookup, one at a time: DoH JSON through libcurl to the in-process fake service (p50)",
                 "cold_lookup_p50_us", "µs"),
                ("cold lookups/s, distinct names, 32 in flight", "cold_lookups_per_second", "/s")):
            if key in rv:
                lines.append("| %s | %s %s |" % (label, fmt_num(rv[key]), unit))
        sections.append("\n".join(lines))
    fp = [(t, get(results, t, "footprint")) for t in ("nginx-proxy", "httpdns-proxy")]
    fp = [(t, f) for t, f in fp if f]
    if fp:
        lines = ["| target | RSS MiB (anon / file): fresh | after 1 KiB keep-alive load | after %s s idle | "
                 "after idle ÷ fresh | threads fresh / loaded / idle |" % fp[0][1]["idle_seconds"],
                 "| --- | --- | --- | --- | --- | --- |"]
        for t, f in fp:
            cell = {k: "%.1f (%.1f / %.1f)" % (f[k]["rss"] / 1024, f[k]["anon"] / 1024, f[k]["file"] / 1024)
                    for k in ("fresh", "after_load", "after_idle")}
            th = f.get("threads", {})
            lines.append("| %s | %s | %s | %s | %.2f× | %s / %s / %s |"
                         % (t, cell["fresh"], cell["after_load"], cell["after_idle"],
                            f["after_idle"]["rss"] / f["fresh"]["rss"],
                            th.get("fresh", "—"), th.get("after_load", "—"), th.get("after_idle", "—")))
        f = get(results, "httpdns-proxy", "footprint")
        if f and "binary_bytes" in f:
            lines.append("")
            lines.append("httpdns-proxy binary: %.1f MiB as built, %s stripped."
                         % (f["binary_bytes"] / 2**20, "%.1f MiB" % (f["stripped_bytes"] / 2**20)
                            if "stripped_bytes" in f else "— MiB"))
        sections.append("\n".join(lines))
    if results.get("pinned"):
        p = results["pinned"]
        anchor = p.get("nginx-proxy", {}).get("cpu_us_per_request")
        lines = ["| target (one connection, one core) | CPU µs per 1 KiB request | ÷ nginx-proxy | syscalls per "
                 "request |", "| --- | --- | --- | --- |"]
        for name, v in p.items():
            lines.append("| %s | %.2f | %s | %.2f |" % (name, v["cpu_us_per_request"],
                                                        ratio(v["cpu_us_per_request"], anchor),
                                                        v["syscalls_per_request"]))
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def _held(results, t):
    it = get(results, t, "idle_tunnels")
    if it is None:
        return None
    return "%s/%s (%d failed)" % (fmt_num(it["opened"]), fmt_num(it["n"]),
                                  it["failed"] + it["echo_failed"] + it.get("burst_failed", 0))


def _table(results, targets, params, rows):
    """Rows of figures per target, then httpdns-proxy's ratio to each base present."""
    bases = [b for b in ("direct", "squid", "nginx-proxy") if b in targets]
    # Through the parent against the same proxy dialing directly: what the parent hop costs it.
    via_parent = PARENT in targets and "httpdns-proxy" in targets
    header = ("| metric | " + " | ".join(targets) + "".join(" | httpdns ÷ %s" % b for b in bases)
              + (" | parent ÷ httpdns" if via_parent else "") + " |")
    lines = [header, "|" + " --- |" * (1 + len(targets) + len(bases) + via_parent)]
    for label, keys, digits, scale, with_ratios in rows:
        vals = []
        for t in targets:
            v = keys(results, t) if callable(keys) else get(results, t, *keys)
            vals.append(v * scale if isinstance(v, (int, float)) else v)
        if all(v is None for v in vals):
            continue  # a scenario this run left out
        h = vals[targets.index("httpdns-proxy")] if "httpdns-proxy" in targets else None
        cells = [v if isinstance(v, str) else fmt_num(v, digits or 0) for v in vals]
        rs = []
        for b in bases:
            bv = vals[targets.index(b)]
            ok = with_ratios and isinstance(h, (int, float)) and isinstance(bv, (int, float)) and bv > 0
            rs.append(ratio(h, bv) if ok else "—")
        if via_parent:
            pv = vals[targets.index(PARENT)]
            ok = with_ratios and isinstance(h, (int, float)) and isinstance(pv, (int, float)) and h > 0
            rs.append(ratio(pv, h) if ok else "—")
        lines.append("| %s | %s%s |" % (label, " | ".join(cells), "".join(" | " + r for r in rs)))
    return "\n".join(lines)
