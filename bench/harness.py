#!/usr/bin/env python3
"""httpdns-proxy benchmark harness (issue 6). Started by bench/run.sh; loopback only.

Starts a local origin (nginx), a fake HTTPDNS service, the reference proxies (tinyproxy,
squid) and httpdns-proxy, measures direct / tinyproxy / squid / httpdns-proxy, prints a
markdown table with ratios to direct and to squid and writes JSON. Every process it starts
runs in its own process group, is listed in WORKDIR/pids (so run.sh's EXIT trap can stop
it too) and is stopped when the harness ends, whatever the reason.
"""
import argparse
import datetime
import json
import os
import platform
import pwd
import grp
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
TARGETS = ["direct", "tinyproxy", "squid", "nginx-proxy", "httpdns-proxy"]
PROXIES = ["tinyproxy", "squid", "nginx-proxy", "httpdns-proxy"]
# nginx is the anchor for HTTP figures: a keep-alive reverse-proxy pool, the best event-driven C
# path a user could pick; it has no CONNECT, so tunnel scenarios leave it out.
HTTP_ONLY = {"nginx-proxy"}
# --before-bin: a second httpdns-proxy binary (the "before" of a change) measured in the same
# rounds as the "after" one, as one more target
BEFORE = "httpdns-proxy-before"
SCENARIOS = ["keepalive", "light", "tunnel", "idle", "resolver", "footprint"]
OPTIONAL_SCENARIOS = ["ceiling", "pinned"]
RELAYS = [("relay-copy-64k", "copy", 65536), ("relay-copy-1m", "copy", 1 << 20),
          ("relay-splice-1m", "splice", 1 << 20)]
GiB = 1 << 30


class Fail(Exception):
    """A clear, expected failure: printed without a traceback."""


def log(msg):
    sys.stderr.write("[bench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    env.update(extra or {})
    return env


# ----------------------------------------------------------------------------- processes
class Processes:
    """Every started process: own session/process group, pid recorded in a file."""

    def __init__(self, workdir):
        self.pidfile = workdir / "pids"
        self.procs = {}  # name -> (Popen, logpath)

    def _write(self):
        tmp = self.pidfile.with_suffix(".tmp")
        tmp.write_text("".join("%d\n" % p.pid for p, _ in self.procs.values()))
        os.replace(tmp, self.pidfile)

    def start(self, name, argv, logpath, **kw):
        if name in self.procs:
            raise Fail("internal: %s already running" % name)
        out = open(logpath, "ab")
        proc = subprocess.Popen(argv, stdout=kw.pop("stdout", out), stderr=out,
                                stdin=kw.pop("stdin", subprocess.DEVNULL),
                                start_new_session=True, env=clean_env(kw.pop("env", None)), **kw)
        out.close()
        self.procs[name] = (proc, logpath)
        self._write()
        return proc

    def stop(self, name, grace=5.0):
        entry = self.procs.pop(name, None)
        if entry is None:
            return
        proc, _ = entry
        self._signal(proc, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal(proc, signal.SIGKILL)
            proc.wait(5)
        # children left in the group (nginx worker, helpers)
        self._signal(proc, signal.SIGKILL)
        self._write()

    @staticmethod
    def _signal(proc, sig):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop_all(self):
        for name in list(self.procs):
            self.stop(name)

    def check_alive(self, name):
        proc, logpath = self.procs[name]
        if proc.poll() is not None:
            raise Fail("%s exited with status %s; last log lines:\n%s"
                       % (name, proc.returncode, tail(logpath)))

    def pid(self, name):
        return self.procs[name][0].pid


def tail(path, lines=15):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def nginx_conf(d, servers, http_extra="", workers=1):
    """The benchmark nginx's configuration in directory `d`: `workers` workers, keep-alive tuned
    for load, temp paths and pid inside `d`, then `servers` (server blocks) inside `http`."""
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    return (f"""{user}worker_processes {workers};
worker_rlimit_nofile 20000;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
{http_extra}    default_type application/octet-stream;
    client_body_temp_path {d}/tmp-body;
    proxy_temp_path {d}/tmp-proxy;
    fastcgi_temp_path {d}/tmp-fastcgi;
    uwsgi_temp_path {d}/tmp-uwsgi;
    scgi_temp_path {d}/tmp-scgi;
    open_file_cache max=16 inactive=600s;
    open_file_cache_valid 600s;
""" + servers + "}\n")



def wait_port(procs, name, port, deadline=30.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        procs.check_alive(name)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise Fail("%s did not listen on 127.0.0.1:%d within %.0f s; last log lines:\n%s"
               % (name, port, deadline, tail(procs.procs[name][1])))


# ----------------------------------------------------------------------------- /proc
def process_tree(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc/%s/stat" % entry).read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def status_field(pid, field):
    try:
        for line in Path("/proc/%d/status" % pid).read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kib(pid):
    return sum(status_field(p, "VmRSS") for p in process_tree(pid))


def rss_split_kib(pid):
    """RSS of the process tree split into anonymous and file-backed KiB (smaps_rollup)."""
    rss = anon = 0
    for p in process_tree(pid):
        try:
            for line in Path("/proc/%d/smaps_rollup" % p).read_text().splitlines():
                parts = line.split()
                if parts[0] == "Rss:":
                    rss += int(parts[1])
                elif parts[0] == "Anonymous:":
                    anon += int(parts[1])
        except (OSError, ValueError, IndexError):
            pass
    return {"rss": rss, "anon": anon, "file": rss - anon}


def tree_threads(pid):
    return sum(status_field(p, "Threads") for p in process_tree(pid))


CLK_TCK = os.sysconf("SC_CLK_TCK")


def tree_cpu_split(pid):
    """(user, system) CPU seconds of a process and its descendants."""
    user = system = 0
    for p in process_tree(pid):
        try:
            fields = Path("/proc/%d/stat" % p).read_text().rsplit(")", 1)[1].split()
            user += int(fields[11])
            system += int(fields[12])
        except (OSError, IndexError):
            pass
    return user / CLK_TCK, system / CLK_TCK


def tree_cpu_seconds(pid):
    return sum(tree_cpu_split(pid))


# ----------------------------------------------------------------------------- the bench
class Bench:
    def __init__(self, args):
        self.args = args
        self.workdir = Path(args.workdir)
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
        self.procs.start("nginx", ["nginx", "-p", str(d), "-e", str(d / "error.log"),
                                   "-c", str(d / "nginx.conf")], self.logs / "nginx.log")
        wait_port(self.procs, "nginx", port)
        res = self.run(["curl", "-sS", "--max-time", "5", "-o", "/dev/null", "-w",
                        "%{http_code} %{size_download}", "http://127.0.0.1:%d/1k" % port], 10)
        if res.stdout.strip() != "200 1024":
            raise Fail("nginx sanity check failed: %r" % res.stdout)
        log("nginx on 127.0.0.1:%d" % port)

    def start_fake_httpdns(self):
        port = self.ports["httpdns"] = free_port()
        self.procs.start("fake-httpdns", [sys.executable, str(BENCH_DIR / "fake_httpdns.py"),
                                          "--port", str(port)], self.logs / "fake-httpdns.log")
        wait_port(self.procs, "fake-httpdns", port)
        log("fake HTTPDNS on 127.0.0.1:%d" % port)

    def start_idle_server(self):
        port = self.ports["idle"] = free_port()
        self.idle_status = self.workdir / "idle-status.json"
        self.procs.start("idle-server", [sys.executable, str(BENCH_DIR / "tunnels.py"), "server",
                                         "--port", str(port), "--status", str(self.idle_status)],
                         self.logs / "idle-server.log")
        wait_port(self.procs, "idle-server", port)
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
        if name in ("httpdns-proxy", BEFORE):
            admin = free_port()
            binary = self.args.before_bin if name == BEFORE else self.args.proxy_bin
            argv = [binary, "--listen", "127.0.0.1:%d" % port,
                    "--admin-listen", "127.0.0.1:%d" % admin,
                    "--provider", "json",
                    "--resolver-url", "http://localhost:%d/resolve" % self.ports["httpdns"],
                    "--resolver-ip", "127.0.0.1", "--system-fallback", "false",
                    "--allow-destination", "127.0.0.0/8",
                    "--connect-ports", ",".join(map(str, self.connect_ports())),
                    "--access-log", str(d / "access.log") if self.args.access_log == "on" else "off",
                    "--log-level", "warning",
                    # every load comes from one client IP; the default per-client limit (256)
                    # would refuse most of the idle tunnels
                    "--max-connections-per-client", str(max_clients or 4096)]
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
            argv = ["nginx", "-p", str(d), "-e", str(d / "error.log"), "-c", str(d / "nginx.conf")]
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
        wait_port(self.procs, name, port)
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
        host = ("origin.test:%d" if target in ("httpdns-proxy", BEFORE) else "127.0.0.1:%d") % nginx
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
                "--timeout", "5s", "-s", str(BENCH_DIR / "absolute.lua"), url]
        pid = self.procs.pid(target) if target in self.procs.procs else None
        nginx_pid = self.procs.pid("nginx")
        split0 = tree_cpu_split(pid) if pid else (0, 0)
        cpu0 = sum(split0)
        ncpu0 = tree_cpu_seconds(nginx_pid)
        t0 = time.monotonic()
        res = self.run(argv, duration + 30, env={"BENCH_TARGET": req_target, "BENCH_HOST": host})
        wall = time.monotonic() - t0
        m = re.search(r"^BENCH_JSON (.*)$", res.stdout, re.M)
        if not m:
            raise Fail("wrk printed no result: " + res.stdout[-500:] + res.stderr[-500:])
        r = json.loads(m.group(1))
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
        client = subprocess.Popen(
            [sys.executable, str(BENCH_DIR / "tunnels.py"), "client", "--proxy-port", str(port),
             "--target", "127.0.0.1:%d" % self.ports["idle"], "-n", str(n),
             "--deadline", str(self.args.idle_deadline)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.logs / "tunnel-client.log", "ab"),
            text=True, start_new_session=True, env=clean_env())
        self.procs.procs["tunnel-client"] = (client, self.logs / "tunnel-client.log")
        self.procs._write()
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
        """bench/pinned.py: CPU per 1 KiB request on one kept-alive connection, origin, proxy and
        client pinned to one core, and system calls per request, httpdns-proxy beside nginx-proxy."""
        out = self.workdir / "pinned.json"
        log("pinned: one connection, one core, %d rounds of %d s" % (self.args.rounds, self.args.duration))
        bins = ["--bin", "httpdns-proxy=%s" % self.args.proxy_bin]
        if self.args.before_bin:
            bins += ["--bin", "%s=%s" % (BEFORE, self.args.before_bin)]
        self.run([sys.executable, str(BENCH_DIR / "pinned.py")] + bins + [
                  "--rounds", str(max(3, self.args.rounds)), "--duration", str(min(5, self.args.duration)),
                  "--access-log", self.args.access_log, "--out", str(out)], timeout=1200)
        doc = json.loads(out.read_text())
        result = {}
        for name, runs in doc["per_request_us"].items():
            result[name] = {"cpu_us_per_request": statistics.median(runs), "runs": runs,
                            "syscalls_per_request": doc["syscalls"][name]["per_request"]}
        return result

    def ceiling(self):
        """1 GiB through minimal relays (bench/relay.py) next to direct and httpdns-proxy."""
        names = ["direct"] + [r[0] for r in RELAYS]
        try:
            for name, mode, chunk in RELAYS:
                port = self.ports[name] = free_port()
                self.procs.start(name, [sys.executable, str(BENCH_DIR / "relay.py"), "--port",
                                        str(port), "--mode", mode, "--chunk", str(chunk)],
                                 self.logs / ("%s.log" % name))
                wait_port(self.procs, name, port)
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
            if shutil_which("strip") and self.run(["strip", "-o", str(stripped), self.args.proxy_bin],
                                                   120, check=False).returncode == 0:
                out["stripped_bytes"] = os.path.getsize(stripped)
                stripped.unlink()
        log("  %-13s RSS fresh %.1f MiB (anon %.1f), after load %.1f MiB, after %d s idle %.1f MiB; "
            "threads (all processes) fresh %d, after load %d, idle %d"
            % (name, fresh["rss"] / 1024, fresh["anon"] / 1024, loaded["rss"] / 1024,
               self.args.idle_seconds, idle["rss"] / 1024,
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
        if not shutil_which("perf"):
            log("perf not found: skipping the profile")
            return
        self.start_proxy("httpdns-proxy")
        try:
            pid = self.procs.pid("httpdns-proxy")
            self.sanity("httpdns-proxy")
            for label, action in (("keepalive-1k", None), ("tunnel-1g", None)):
                data = self.out / ("perf-%s.data" % label)
                for old in (data, data.with_name(data.name + ".old")):
                    old.unlink(missing_ok=True)  # perf would keep the previous one as .old
                perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(pid),
                                         "-o", str(data), "--", "sleep", str(self.args.duration)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
                self.procs.procs["perf"] = (perf, self.logs / "perf.log")
                self.procs._write()
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
                if shutil_which("swift"):
                    dm = subprocess.run(["swift", "demangle", "--simplified"], input=text,
                                        capture_output=True, text=True, timeout=120)
                    if dm.returncode == 0:
                        text = dm.stdout
                report.write_text(text)
                summary = self.out / ("perf-%s-summary.txt" % label)
                res = subprocess.run([sys.executable, str(BENCH_DIR / "perf_summary.py"), str(data)],
                                     capture_output=True, text=True, timeout=900)
                summary.write_text(res.stdout + res.stderr)
                log("profile written to %s and %s" % (os.path.relpath(report, REPO),
                                                     os.path.relpath(summary, REPO)))
        finally:
            self.stop_proxy("httpdns-proxy")

    # ---- the run
    def main(self):
        a = self.args
        targets = a.targets
        self.start_origin()
        if "httpdns-proxy" in targets:
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
                if target == "direct" or target in HTTP_ONLY:
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
                import urllib.request
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


def shutil_which(name):
    import shutil
    return shutil.which(name)


# ----------------------------------------------------------------------------- reporting
def first_line(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return ((r.stdout or "") + (r.stderr or "")).strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        return "unknown"


def machine_info(args):
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = status = None
    try:
        mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    commit = os.environ.get("BENCH_PROXY_REV") or (
        first_line(["git", "-C", str(REPO), "describe", "--always", "--dirty"]) + " (working tree)")
    return {
        "nproc": os.cpu_count(), "cpu": cpu, "mem_mib": mem, "kernel": platform.release(),
        "nofile_limit": args.nofile,
        "versions": {
            "nginx": first_line(["nginx", "-v"]),
            "squid": first_line(["squid", "-v"]),
            "tinyproxy": first_line(["tinyproxy", "-v"]),
            "wrk": first_line(["wrk", "-v"]),
            "curl": first_line(["curl", "--version"]),
            "swift": first_line(["swift", "--version"]) if shutil_which("swift") else "n/a",
            "python": platform.python_version(),
        },
        "httpdns_proxy_commit": commit,
    }


def fmt_num(v, digits=0):
    if v is None:
        return "—"
    if digits == 0:
        return "{:,.0f}".format(v)
    return "{:,.{d}f}".format(v, d=digits)


def ratio(a, b, digits=2):
    if a is None or b in (None, 0):
        return "—"
    return "%.*f×" % (digits, a / b)


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


def evaluate_targets(results):
    """The issue's targets for httpdns-proxy, each judged from this run's numbers."""
    h, s, d = "httpdns-proxy", "squid", "direct"
    out = []

    def add(name, need, have, met, note):
        out.append({"target": name, "need": need, "have": have, "met": met, "note": note})

    def ratio_target(name, metric, base, factor, errors_key=None):
        v, b = get(results, h, *metric), get(results, base, *metric)
        if v is None or b is None:
            return add(name, "%.2f× %s" % (factor, base), None, None, "not measured")
        r = v / b
        errs = get(results, h, *(metric[:-1] + (errors_key,))) if errors_key else 0
        met = r >= factor and not errs
        note = "%.2f× %s" % (r, base)
        if r < factor:
            note += ", misses by %.0f %% (needs %s, has %s)" % (
                100 * (1 - r / factor), fmt_num(factor * b), fmt_num(v))
        if errs:
            note += ", %d errors" % errs
        add(name, "≥ %.2f× %s%s" % (factor, base, ", 0 errors" if errors_key else ""),
            round(r, 3), met, note)

    ratio_target("1 KiB keep-alive req/s", ("keepalive_1k", "rps"), s, 2.0, "errors")
    ratio_target("64 KiB keep-alive req/s", ("keepalive_64k", "rps"), s, 4.0, "errors")
    ha, sa = added_p50_us(results, h), added_p50_us(results, s)
    if ha is None or sa is None:
        add("light-load added p50", "≤ 0.5× squid's added", None, None, "not measured")
    else:
        limit = 0.5 * sa
        note = "adds %.0f µs, squid adds %.0f µs (limit %.0f µs)" % (ha, sa, limit)
        if ha > limit:
            note += ", misses by %.0f µs" % (ha - limit)
        add("light-load added p50", "≤ 0.5× squid's added", round(ha / sa, 3) if sa > 0 else None,
            ha <= limit, note)
    ratio_target("CONNECT 1 GiB throughput", ("tunnel_1g", "mb_per_s"), d, 0.8)
    it = get(results, h, "idle_tunnels")
    if it is None:
        add("idle tunnel memory", "≤ 12 KiB/tunnel, 9,000 held", None, None, "not measured")
    else:
        k = it["kib_per_tunnel"]
        held = it["opened"] == it["n"] and it["failed"] == 0 and it["echo_failed"] == 0
        met = k is not None and k <= 12 and held and it["n"] >= 9000
        note = "%.1f KiB/tunnel, %d/%d held, %d echo failures" % (k or 0, it["opened"], it["n"],
                                                                  it["echo_failed"])
        if k is not None and k > 12:
            note += ", misses by %.1f KiB (%.0f %%)" % (k - 12, 100 * (k - 12) / 12)
        add("idle tunnel memory", "≤ 12 KiB/tunnel, 9,000 held", k, met, note)
    # issue 16: nginx (as a keep-alive proxy) is the anchor for HTTP figures
    n = "nginx-proxy"
    ratio_target("1 KiB req/s vs nginx", ("keepalive_1k", "rps"), n, 1.0, "errors")
    v, b = get(results, h, "keepalive_1k", "proxy_cpu_us_per_req"), get(results, n, "keepalive_1k", "proxy_cpu_us_per_req")
    if v is None or b is None:
        add("1 KiB CPU/request vs nginx", "≤ 1.20× nginx", None, None, "not measured")
    else:
        r = v / b
        add("1 KiB CPU/request vs nginx", "≤ 1.20× nginx", round(r, 3), r <= 1.2,
            "%.1f µs vs nginx %.1f µs (%.2f×)%s" % (v, b, r, "" if r <= 1.2 else
                                                  ", misses by %.1f µs" % (v - 1.2 * b)))
    ratio_target("64 KiB req/s vs nginx", ("keepalive_64k", "rps"), n, 1.0, "errors")
    hn, nn = added_p50_us(results, h), added_p50_us(results, n)
    if hn is None or nn is None:
        add("light-load added p50 vs nginx", "≤ nginx's added", None, None, "not measured")
    else:
        add("light-load added p50 vs nginx", "≤ nginx's added", round(hn / nn, 3) if nn > 0 else None,
            hn <= nn, "adds %.0f µs, nginx adds %.0f µs" % (hn, nn))
    runs = get(results, h, "tunnel_1g", "runs_mb_per_s")
    dm = get(results, d, "tunnel_1g", "mb_per_s")
    if runs and dm:
        worst = min(runs) / dm
        add("CONNECT 1 GiB, every download", "≥ 0.90× direct", round(worst, 3), worst >= 0.9,
            "worst %.2f×, median %.2f× direct (downloads %s MB/s, direct median %.0f)"
            % (worst, get(results, h, "tunnel_1g", "mb_per_s") / dm,
               ", ".join("%.0f" % x for x in runs), dm))
    fp = get(results, h, "footprint")
    if fp is None:
        add("footprint", "fresh ≤ 20 MiB, loaded ≤ 30 MiB, idle ≤ 1.1× fresh", None, None, "not measured")
    else:
        fr, ld, il = (fp[k]["rss"] / 1024 for k in ("fresh", "after_load", "after_idle"))
        add("fresh RSS", "≤ 20 MiB", round(fr, 1), fr <= 20, "%.1f MiB (anon %.1f, file-backed %.1f)"
            % (fr, fp["fresh"]["anon"] / 1024, fp["fresh"]["file"] / 1024))
        add("RSS after keep-alive load", "≤ 30 MiB", round(ld, 1), ld <= 30, "%.1f MiB" % ld)
        add("RSS after an idle minute", "≤ 1.10× fresh", round(il / fr, 3), il <= 1.1 * fr,
            "%.1f MiB after %d s (%.2f× fresh)" % (il, fp["idle_seconds"], il / fr))
    rv = get(results, h, "resolver")
    if rv is None:
        add("cached resolve", "< 1 µs", None, None, "not measured")
    else:
        c, i = rv["caching_resolver_cached_ns"], rv["upstream_resolver_cached_ns"]
        note = ("cache %.0f ns (10k names, random order), %.0f ns (hot name); with SocketAddresses "
                "and a future (what the connector gets) %.0f / %.0f ns"
                % (c, rv["caching_resolver_cached_hot_ns"], i, rv["upstream_resolver_cached_hot_ns"]))
        add("cached resolve", "< 1 µs", round(c, 1), c < 1000, note)
    return out


def markdown(results, meta, targets_eval):
    T = TARGETS
    lines = []
    dur = meta["args"]["duration"]
    lines.append("wrk figures: median of %d rounds of %d s; tunnel: median of %d downloads."
                 % (meta["args"]["rounds"], dur, meta["args"]["tunnel_runs"]))
    lines.append("")
    hdr = ("| metric | " + " | ".join(T)
           + " | httpdns ÷ direct | httpdns ÷ squid | httpdns ÷ nginx-proxy |")
    lines += [hdr, "|" + " --- |" * (len(T) + 4)]

    def row(label, keys, digits=0, scale=1.0, ratios=True):
        vals = []
        for t in T:
            v = get(results, t, *keys)
            vals.append(None if v is None else v * scale)
        h = vals[T.index("httpdns-proxy")]
        rs = [ratio(h, vals[T.index(b)]) if ratios else "—" for b in ("direct", "squid", "nginx-proxy")]
        lines.append("| %s | %s | %s |" % (label, " | ".join(fmt_num(v, digits) for v in vals),
                                           " | ".join(rs)))

    row("1 KiB keep-alive req/s (-t2 -c64, %ds)" % dur, ("keepalive_1k", "rps"))
    row("1 KiB keep-alive p50 ms", ("keepalive_1k", "p50_ms"), 2)
    row("1 KiB keep-alive p99 ms", ("keepalive_1k", "p99_ms"), 2)
    row("1 KiB errors (non-2xx + socket, all rounds)", ("keepalive_1k", "errors"), ratios=False)
    row("1 KiB proxy CPU µs/request", ("keepalive_1k", "proxy_cpu_us_per_req"), 1)
    row("  of which kernel (system time)", ("keepalive_1k", "proxy_sys_us_per_req"), 1)
    row("64 KiB keep-alive req/s (-t2 -c64, %ds)" % dur, ("keepalive_64k", "rps"))
    row("64 KiB keep-alive p50 ms", ("keepalive_64k", "p50_ms"), 2)
    row("64 KiB keep-alive p99 ms", ("keepalive_64k", "p99_ms"), 2)
    row("64 KiB errors (non-2xx + socket, all rounds)", ("keepalive_64k", "errors"), ratios=False)
    row("64 KiB proxy CPU µs/request", ("keepalive_64k", "proxy_cpu_us_per_req"), 1)
    row("light load 1 KiB p50 µs (-t1 -c1)", ("light_1k", "p50_ms"), 0, 1000)
    row("light load 1 KiB p99 µs (-t1 -c1)", ("light_1k", "p99_ms"), 0, 1000)
    added = [added_p50_us(results, t) for t in T]
    h, s, n = (added[T.index(t)] for t in ("httpdns-proxy", "squid", "nginx-proxy"))
    lines.append("| light load added p50 over direct µs | %s | — | %s | %s |"
                 % (" | ".join(fmt_num(v) for v in added), ratio(h, s) if s and s > 0 else "—",
                    ratio(h, n) if n and n > 0 else "—"))
    row("CONNECT tunnel 1 GiB MB/s (median)", ("tunnel_1g", "mb_per_s"))
    row("idle tunnel memory KiB/tunnel", ("idle_tunnels", "kib_per_tunnel"), 1)
    row("same, after 1 byte each way KiB/tunnel", ("idle_tunnels", "kib_per_tunnel_after_echo"), 1)
    row("same, after a burst each way KiB/tunnel", ("idle_tunnels", "kib_per_tunnel_after_burst"), 1)
    held = []
    for t in T:
        it = get(results, t, "idle_tunnels")
        held.append("—" if it is None else "%s/%s (%d failed)" % (
            fmt_num(it["opened"]), fmt_num(it["n"]),
            it["failed"] + it["echo_failed"] + it.get("burst_failed", 0)))
    lines.append("| idle tunnels held | %s | — | — | — |" % " | ".join(held))
    rv = get(results, "httpdns-proxy", "resolver")

    def httpdns_only(label, value):
        """A row with a value for httpdns-proxy only (the resolver is measured once)."""
        cells = ["—"] * len(T)
        cells[T.index("httpdns-proxy")] = value
        lines.append("| %s | %s | — | — | — |" % (label, " | ".join(cells)))
    if rv is None:
        httpdns_only("cached resolve ns/lookup", "—")
        httpdns_only("cold resolve through fake HTTPDNS", "—")
    else:
        httpdns_only("cached resolve ns/lookup: cache, 10k names / one hot name", "%s / %s"
                     % (fmt_num(rv["caching_resolver_cached_ns"]), fmt_num(rv["caching_resolver_cached_hot_ns"])))
        httpdns_only("same, as the connector gets it (SocketAddresses + future)", "%s / %s"
                     % (fmt_num(rv["upstream_resolver_cached_ns"]), fmt_num(rv["upstream_resolver_cached_hot_ns"])))
        httpdns_only("cold resolve through fake HTTPDNS: p50 µs (1 in flight) / lookups/s (32 in flight)", "%s / %s"
                     % (fmt_num(rv.get("cold_lookup_p50_us")), fmt_num(rv["cold_lookups_per_second"])))
    lines.append("")
    lines.append("Ratios for every proxy (value ÷ direct / ÷ squid / ÷ nginx-proxy):")
    lines.append("")
    lines.append("| metric | " + " | ".join(PROXIES) + " |")
    lines.append("|" + " --- |" * (len(PROXIES) + 1))
    for label, keys in (("1 KiB req/s", ("keepalive_1k", "rps")),
                        ("1 KiB CPU µs/request", ("keepalive_1k", "proxy_cpu_us_per_req")),
                        ("64 KiB req/s", ("keepalive_64k", "rps")),
                        ("64 KiB CPU µs/request", ("keepalive_64k", "proxy_cpu_us_per_req")),
                        ("light p50", ("light_1k", "p50_ms")),
                        ("tunnel MB/s", ("tunnel_1g", "mb_per_s"))):
        d, s, n = (get(results, b, *keys) for b in ("direct", "squid", "nginx-proxy"))
        cells = []
        for t in PROXIES:
            v = get(results, t, *keys)
            cells.append("%s / %s / %s" % (ratio(v, d), ratio(v, s), ratio(v, n)))
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    fp = [(t, get(results, t, "footprint")) for t in ("nginx-proxy", "httpdns-proxy")]
    if any(f for _, f in fp):
        lines.append("")
        lines.append("Footprint (RSS of the process tree, MiB; file-backed = binary and libraries):")
        lines.append("")
        lines.append("| target | fresh (anon / file) | after 1 KiB keep-alive load | after %s s idle | after idle ÷ fresh |"
                     % next(f["idle_seconds"] for _, f in fp if f))
        lines.append("| --- | --- | --- | --- | --- |")
        for t, f in fp:
            if not f:
                continue
            mib = lambda k: f[k]["rss"] / 1024  # noqa: E731
            lines.append("| %s | %.1f (%.1f / %.1f) | %.1f | %.1f | %.2f× |"
                         % (t, mib("fresh"), f["fresh"]["anon"] / 1024, f["fresh"]["file"] / 1024,
                            mib("after_load"), mib("after_idle"), mib("after_idle") / mib("fresh")))
        f = get(results, "httpdns-proxy", "footprint")
        if f and "binary_bytes" in f:
            lines.append("")
            lines.append("httpdns-proxy binary: %.1f MiB as built, %s stripped."
                         % (f["binary_bytes"] / 2**20, "%.1f MiB" % (f["stripped_bytes"] / 2**20)
                            if "stripped_bytes" in f else "— MiB"))
    pinned = results.get("pinned")
    if pinned:
        lines.append("")
        lines.append("One kept-alive connection, origin, proxy and client pinned to one core (bench/pinned.py):")
        lines.append("")
        lines.append("| target | CPU µs per 1 KiB request (median) | ÷ nginx-proxy | syscalls per request |")
        lines.append("| --- | --- | --- | --- |")
        anchor = pinned.get("nginx-proxy", {}).get("cpu_us_per_request")
        for name, v in pinned.items():
            lines.append("| %s | %.2f | %s | %.2f |" % (name, v["cpu_us_per_request"], ratio(v["cpu_us_per_request"], anchor),
                                                    v["syscalls_per_request"]))
    ceiling = results.get("ceiling")
    if ceiling:
        lines.append("")
        lines.append("Tunnel ceiling (1 GiB through minimal relays, same run):")
        lines.append("")
        lines.append("| path | MB/s (median) | ÷ direct | runs |")
        lines.append("| --- | --- | --- | --- |")
        d = ceiling.get("direct", {}).get("mb_per_s")
        for name, v in ceiling.items():
            lines.append("| %s | %s | %s | %s |" % (name, fmt_num(v["mb_per_s"]), ratio(v["mb_per_s"], d),
                                                  ", ".join(fmt_num(x) for x in v["runs_mb_per_s"])))
    lines.append("")
    lines.append("Targets (httpdns-proxy, this run):")
    lines.append("")
    lines.append("| target | need | met | detail |")
    lines.append("| --- | --- | --- | --- |")
    for t in targets_eval:
        met = {True: "yes", False: "**no**", None: "—"}[t["met"]]
        lines.append("| %s | %s | %s | %s |" % (t["target"], t["need"], met, t["note"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description="httpdns-proxy benchmark harness (use bench/run.sh)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", default=str(BENCH_DIR / "out"))
    ap.add_argument("--proxy-bin", required=True)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tunnels", type=int, default=9000)
    ap.add_argument("--tinyproxy-tunnels", type=int, default=9000)
    ap.add_argument("--tunnel-runs", type=int, default=5)
    ap.add_argument("--burst", type=int, default=65536)
    ap.add_argument("--tunnel-timeout", type=int, default=60)
    ap.add_argument("--idle-deadline", type=int, default=240)
    ap.add_argument("--nofile", type=int, default=20000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--command", default="")
    ap.add_argument("--resolver-bench", default="")
    ap.add_argument("--access-log", choices=["on", "off"], default="on")
    ap.add_argument("--idle-seconds", type=int, default=60)
    ap.add_argument("--before-bin", default="",
                    help="a second httpdns-proxy binary, measured as target %s in the same rounds" % BEFORE)
    args = ap.parse_args()
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    args.targets = [t for t in args.targets.split(",") if t]
    for s in args.scenarios:
        if s not in SCENARIOS + OPTIONAL_SCENARIOS:
            sys.exit("unknown scenario %r (known: %s)" % (s, ", ".join(SCENARIOS + OPTIONAL_SCENARIOS)))
    for t in args.targets:
        if t not in TARGETS:
            sys.exit("unknown target %r (known: %s)" % (t, ", ".join(TARGETS)))
    if args.before_bin:
        if "httpdns-proxy" not in args.targets:
            sys.exit("--before-bin needs the httpdns-proxy target")
        TARGETS.append(BEFORE)
        PROXIES.append(BEFORE)
        args.targets.append(BEFORE)
    args.targets = [t for t in TARGETS if t in args.targets]  # canonical order

    bench = Bench(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()

    def on_signal(signum, _frame):
        raise Fail("interrupted by signal %d" % signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    status = 0
    try:
        bench.main()
    except Fail as e:
        log("FAILED: %s" % e)
        status = 1
    finally:
        bench.procs.stop_all()
    meta = {
        "started": started.isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - t0, 1),
        "command": args.command,
        "args": {k: v for k, v in vars(args).items() if k not in ("workdir", "out", "command")},
        "machine": machine_info(args),
        "complete": status == 0,
    }
    meta["args"]["proxy_bin"] = os.path.relpath(args.proxy_bin, REPO)
    if args.before_bin:
        meta["args"]["before_bin"] = os.path.relpath(args.before_bin, REPO)
    evals = evaluate_targets(bench.results)
    doc = {"meta": meta, "results": bench.results, "targets": evals,
           "fake_httpdns_stats": getattr(bench, "fake_dns_stats", None)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    table = markdown(bench.results, meta, evals)
    (out / "results.md").write_text(table + "\n")
    print(table)
    log("%s in %.0f s; JSON: %s" % ("done" if status == 0 else "incomplete run",
                                    meta["seconds"], os.path.relpath(out / "results.json", REPO)))
    return status


if __name__ == "__main__":
    sys.exit(main())
