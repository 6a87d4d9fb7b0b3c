"""Before/after: CPU per request of two httpdns-proxy binaries (or one binary with two flag
sets), measured in one run -- the rule for changes on the request path. Loopback only.

Starts nginx (1 KiB and 64 KiB files), the fake HTTPDNS service and both proxies (plus one of
each with the access log on, written to /dev/null), then:

  keep-alive  rounds of wrk -t2 -c64 (absolute-form GET through a proxy; origin.test resolved by
              the fake HTTPDNS service) against direct nginx, base and head; base and head
              alternate, and which of them goes first rotates each round. Proxy CPU per request
              = utime+stime delta of the proxy's process tree / requests (and the same from
              per-thread schedstat, at nanosecond resolution).
  hostile     request heads of ~65 KB (a 14,000-token Connection field and thousands of short
              fields) sent over raw loopback sockets, a new connection each; proxy CPU seconds
              per head for base and head.

--base-args / --head-args are appended to each side's command line (after the harness's own
flags, so they override them); --proxy-user USER:PASS makes every request to a proxy carry
Proxy-Authorization: Basic (a proxy without authentication strips it). --head-tls reaches head
through its TLS listener (--tls-listen, a P-256 certificate made for the run; wrk and curl speak
TLS to the proxy), so base against head is the plain listener against the TLS one.
"""
import base64
import os
import re
import shlex
import socket
import time
from pathlib import Path

from .lib.peers import fake_httpdns_argv, httpdns_proxy_json_args, nginx_argv, nginx_conf
from .lib.proc import Fail, Processes, free_port, log, run, session
from .lib.procfs import tree_cpu_split, tree_sched_ns
from .lib.results import Run, add_output_arguments, fmt_num, median, relpath
from .lib.tools import raise_nofile, require_tools, revision_of
from .lib.wrk import script, wrk

# name -> (binary key, access log on)
PROXIES = {"base": ("base", False), "head": ("head", False),
           "base+log": ("base", True), "head+log": ("head", True)}


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "—"
    return "%.3f" % (a / b)


class AB:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = Path(workdir)
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

    @staticmethod
    def run(argv, timeout, env=None, check=True):
        return run(argv, timeout, env=env, check=check)

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
        # Same origin as bench run's, plus header buffers large enough that the hostile heads a
        # proxy forwards are answered by nginx (200) instead of refused for size (400).
        (d / "nginx.conf").write_text(nginx_conf(d, f"""    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {www};
    }}
""", http_extra="    large_client_header_buffers 8 128k;\n"))
        self.procs.start("nginx", nginx_argv(d), self.logs / "nginx.log")
        self.procs.wait_port("nginx", port)
        log("nginx on 127.0.0.1:%d" % port)

    def start_fake_httpdns(self):
        port = self.ports["httpdns"] = free_port()
        self.procs.start("fake-httpdns", fake_httpdns_argv(port), self.logs / "fake-httpdns.log")
        self.procs.wait_port("fake-httpdns", port)
        log("fake HTTPDNS on 127.0.0.1:%d" % port)

    def proxy_certificate(self):
        """A self-signed P-256 certificate for 127.0.0.1 (the TLS listener's), made once."""
        cert, key = self.workdir / "proxy.pem", self.workdir / "proxy.key"
        if not cert.exists():
            self.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                      "-addext", "subjectAltName=IP:127.0.0.1"], 30)
        return cert, key

    def over_tls(self, name):
        return self.args.head_tls and name.startswith("head")

    def start_proxy(self, name):
        key, access_log = PROXIES[name]
        port = self.ports[name] = free_port()
        admin = free_port()
        argv = [self.bins[key], "--listen", "127.0.0.1:%d" % port,
                "--admin-listen", "127.0.0.1:%d" % admin,
                *httpdns_proxy_json_args(self.ports["httpdns"]),
                "--allow-destination", "127.0.0.0/8",
                "--connect-ports", str(self.ports["nginx"]),
                "--access-log", "stdout" if access_log else "off", "--log-level", "warning"]
        if self.over_tls(name):
            cert, keyfile = self.proxy_certificate()
            tls_port = self.ports[name + " tls"] = free_port()
            argv += ["--tls-listen", "127.0.0.1:%d" % tls_port, "--tls-cert", str(cert), "--tls-key", str(keyfile)]
        argv += self.extra[key]  # last: a flag given again overrides the one above
        logpath = self.logs / ("%s.log" % name.replace("+", "-"))
        (self.logs / ("%s.argv" % name.replace("+", "-"))).write_text(shlex.join(argv) + "\n")
        # stdout is the access log only (whichever flags turned it on): /dev/null, so a log on
        # costs formatting and a write, never disk space; stderr (logs) to the log file
        with open(os.devnull, "wb") as devnull:
            self.procs.start(name, argv, logpath, stdout=devnull)
        self.procs.wait_port(name, port)
        if self.over_tls(name):
            self.procs.wait_port(name, self.ports[name + " tls"])
        log("%-8s on 127.0.0.1:%d (%s%s)" % (name, port, relpath(self.bins[key]),
                                             (" " + shlex.join(self.extra[key])) if self.extra[key] else ""))

    # ---------------------------------------------------------------- wire
    def request_for(self, target, path):
        nginx = self.ports["nginx"]
        if target == "direct":
            host = "127.0.0.1:%d" % nginx
            return "http://%s" % host, path, host, ["http://%s%s" % (host, path)]
        host = "origin.test:%d" % nginx
        if self.over_tls(target):
            proxy = "https://127.0.0.1:%d" % self.ports[target + " tls"]
            curl = ["-x", proxy, "--proxy-insecure"]  # the run's own self-signed certificate
        else:
            proxy = "http://127.0.0.1:%d" % self.ports[target]
            curl = ["-x", proxy]
        curl += ["--proxy-user", self.args.proxy_user] if self.args.proxy_user else []
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
                "-s", script("absolute.lua"), url]
        pid = self.procs.pid(target) if target != "direct" else None
        if pid:
            self.procs.check_alive(target)
        env = {"BENCH_TARGET": req_target, "BENCH_HOST": host}
        if pid and self.auth:
            env["BENCH_PROXY_AUTHORIZATION"] = self.auth
        if self.args.connection_close:
            env["BENCH_CONNECTION_CLOSE"] = "1"
        split0 = tree_cpu_split(pid) if pid else (0.0, 0.0)
        ns0 = tree_sched_ns(pid) if pid else 0
        r = wrk(argv, env, duration + 30)
        split1 = tree_cpu_split(pid) if pid else (0.0, 0.0)
        ns1 = tree_sched_ns(pid) if pid else 0
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
               fmt_num(out.get("cpu_us_per_req"), 1), out["p99_ms"], out["errors"],
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
        if a.hostile_reps:
            log("hostile heads: %d per binary and variant, %d round(s)" % (a.hostile_reps, a.hostile_rounds))
        for rnd in range(1, a.hostile_rounds + 1 if a.hostile_reps else 1):
            order = ["head", "base"] if rnd % 2 == 0 else ["base", "head"]
            for variant, fields, tokens in variants:
                for t in order:
                    self.hostile(variant, fields, tokens, t, a.hostile_reps, rnd)
        # the keep-alive path still works after the hostile heads
        for t in ("base", "head"):
            self.sanity(t)


# ----------------------------------------------------------------------------- command line
def add_arguments(p):
    p.add_argument("--base-bin", required=True, metavar="PATH", help="the before httpdns-proxy binary")
    p.add_argument("--head-bin", required=True, metavar="PATH",
                   help="the after binary (may be the same as --base-bin when --base-args/--head-args differ)")
    p.add_argument("--base-args", default="", metavar='"ARGS"',
                   help="extra proxy arguments for base, as shell words, after the harness's own flags "
                        "(a flag given again overrides)")
    p.add_argument("--head-args", default="", metavar='"ARGS"', help="the same for head")
    p.add_argument("--base-label", default="base", help="base's name in the table (default base)")
    p.add_argument("--head-label", default="head", help="head's name in the table (default head)")
    p.add_argument("--proxy-user", default="", metavar="USER:PASS",
                   help="every request to a proxy carries Proxy-Authorization: Basic base64(USER:PASS), on "
                        "both sides; the password is not written to the results")
    p.add_argument("--rounds", type=int, default=3, help="wrk rounds; medians are reported (default 3)")
    p.add_argument("--duration", type=int, default=10, help="seconds of each wrk run (2..120, default 10)")
    p.add_argument("--no-access-log", dest="access_log", action="store_false",
                   help="skip the rows with the access log on (stdout to /dev/null); use it when "
                        "--base-args/--head-args set --access-log themselves")
    p.add_argument("--no-64k", dest="with_64k", action="store_false", help="skip the 64 KiB keep-alive rows")
    p.add_argument("--connection-close", action="store_true",
                   help="every wrk request says Connection: close, so each opens a connection of its own: "
                        "CPU per connection rather than per kept-alive request")
    p.add_argument("--hostile-reps", type=int, default=20, help="hostile heads per binary and variant (default 20; "
                   "0: none)")
    p.add_argument("--hostile-rounds", type=int, default=3, help="rounds of hostile heads (default 3)")
    p.add_argument("--head-tls", action="store_true",
                   help="reach head through its TLS listener (--tls-listen with a certificate made for the run): "
                        "the plain listener against the TLS one; no hostile heads")
    add_output_arguments(p, "ab")
    p.set_defaults(max_seconds=900)


def main(args):
    for b in (args.base_bin, args.head_bin):
        if not os.access(b, os.X_OK):
            raise Fail("not an executable: %s" % b)
    if args.head_tls:
        args.hostile_reps = 0  # raw heads are written to the plain port
    if os.path.samefile(args.base_bin, args.head_bin) and args.base_args == args.head_args and not args.head_tls:
        raise Fail("base and head are the same binary with the same arguments: nothing to compare "
                   "(--base-args/--head-args)")
    if args.proxy_user and ":" not in args.proxy_user:
        raise Fail("--proxy-user must be USER:PASS")
    try:
        shlex.split(args.base_args)
        shlex.split(args.head_args)
    except ValueError as e:
        raise Fail("--base-args/--head-args: %s" % e) from None
    if not 2 <= args.duration <= 120 or not 1 <= args.rounds <= 10:
        raise Fail("--duration must be 2..120 seconds and --rounds 1..10")
    if not 0 <= args.hostile_reps <= 1000 or not 1 <= args.hostile_rounds <= 10:
        raise Fail("--hostile-reps 0..1000, --hostile-rounds 1..10")
    require_tools(["nginx", "wrk", "curl"] + (["openssl"] if args.head_tls else []), services=["nginx"])
    raise_nofile()
    record = Run(args, "ab", ["nginx", "wrk", "curl"])
    params = {k: v for k, v in vars(args).items()
              if k in ("rounds", "duration", "access_log", "with_64k", "hostile_reps", "hostile_rounds",
                       "base_args", "head_args", "base_label", "head_label", "connection_close", "head_tls")}
    for k in ("base", "head"):
        b = getattr(args, "%s_bin" % k)
        params["%s_rev" % k] = revision_of(b)
        params["%s_bin" % k] = relpath(os.path.abspath(b))
    if args.proxy_user:  # the password stays out of the results
        params["proxy_user"] = args.proxy_user.split(":", 1)[0] + ":***"
        record.doc["command"] = re.sub(r"(--proxy-user[ =])\S+", r"\1USER:***", record.doc["command"])
    record.doc["parameters"] = params
    record.doc["revision"] = params["head_rev"]
    complete, error = False, None
    with session(args.max_seconds, "httpdns-ab-") as workdir:
        ab = AB(args, workdir)
        try:
            ab.main()
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
        finally:
            ab.procs.stop_all()
    record.results.update(ab.results)
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1


# ----------------------------------------------------------------------------- tables
def render(doc):
    a = doc["parameters"]
    results = doc["results"]
    labels = {"base": a.get("base_label", "base"), "head": a.get("head_label", "head")}
    labels["base+log"] = labels["base"] + ", access log on"
    labels["head+log"] = labels["head"] + ", access log on"
    ka = results["keepalive"]

    def rows(target, path):
        return [r for r in ka if r["target"] == target and r["path"] == path]

    def m(target, path, key):
        return median([r.get(key) for r in rows(target, path)])

    each = ", new connection each" if a.get("connection_close") else ""
    lines = ["| target | size | req/s | ÷ direct | CPU µs/request | %s ÷ %s CPU | of which kernel µs | p99 ms | "
             "errors |" % (labels["head"], labels["base"]),
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for path in ("/1k", "/64k"):
        d = m("direct", path, "rps")
        if d is None:
            continue
        for t in ("direct", "base", "head", "base+log", "head+log"):
            if not rows(t, path):
                continue
            cpu = m(t, path, "cpu_us_per_req")
            r = ratio(cpu, m(t.replace("head", "base"), path, "cpu_us_per_req")) if t.startswith("head") else "—"
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %d |"
                         % (labels.get(t, t), path.strip("/").replace("k", " KiB") + each, fmt_num(m(t, path, "rps")),
                            ratio(m(t, path, "rps"), d), fmt_num(cpu, 1), r, fmt_num(m(t, path, "sys_us_per_req"), 1),
                            fmt_num(m(t, path, "p99_ms"), 2), sum(x["errors"] for x in rows(t, path))))
    hs = results.get("hostile") or []
    if hs:
        lines += ["", "| hostile head (%d per binary, %d rounds) | bytes | %s answer | %s answer | %s CPU s/head | "
                  "%s CPU s/head | %s ÷ %s |" % (hs[0]["reps"], len({h["round"] for h in hs}), labels["base"],
                                                labels["head"], labels["base"], labels["head"], labels["head"],
                                                labels["base"]),
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        variants = []
        for h in hs:
            if h["variant"] not in variants:
                variants.append(h["variant"])
        for v in variants:
            def hm(t, key, v=v):
                return median([h[key] for h in hs if h["variant"] == v and h["target"] == t])

            def ans(t, v=v):
                agg = {}
                for h in hs:
                    if h["variant"] == v and h["target"] == t:
                        for k, n in h["statuses"].items():
                            agg[k] = agg.get(k, 0) + n
                return ", ".join("%s×%d" % (k, n) for k, n in sorted(agg.items()))
            nbytes = next(h["head_bytes"] for h in hs if h["variant"] == v)
            lines.append("| %s | %s | %s | %s | %.5f | %.5f | %s |"
                         % (v, fmt_num(nbytes), ans("base"), ans("head"), hm("base", "sched_s_per_head"),
                            hm("head", "sched_s_per_head"),
                            ratio(hm("head", "sched_s_per_head"), hm("base", "sched_s_per_head"))))
    return "\n".join(lines)
