"""SOCKS5 through httpdns-proxy beside microsocks and dante, measured in one run. Loopback only,
bounded in time.

Starts nginx (1 KiB and a sparse 1 GiB file), the fake HTTPDNS service, httpdns-proxy (SOCKS on
its own port, the mixed port), microsocks and dante (danted), then per target:

  setup   rounds of N sequential connections from one client: SOCKS5 greeting, CONNECT, GET /1k
          from nginx, read to the close. The destination is the address 127.0.0.1 for every
          target, and for httpdns-proxy also the name origin.test (resolved through the fake
          HTTPDNS service, then its cache). Proxy CPU per connection = utime+stime delta of the
          proxy's process tree / connections; the median round is reported.
  tunnel  1 GiB from nginx through one SOCKS5 tunnel (curl --socks5-hostname for httpdns-proxy,
          --socks5 with the address for the others), beside curl straight to nginx: MB/s and the
          proxy's CPU %, median of the runs.
"""
import os
import socket
import statistics
import struct
import time

from .lib.peers import fake_httpdns_argv, httpdns_proxy_json_args, nginx_argv, nginx_conf
from .lib.proc import Fail, Processes, free_port, log, run, session
from .lib.procfs import tree_cpu_seconds
from .lib.results import Run, add_output_arguments, fmt_num, ratio
from .lib.tools import add_binary_arguments, proxy_binary, require_tools, revision_of

GiB = 1 << 30
TARGETS = ["httpdns-proxy", "microsocks", "dante"]
BEFORE = "httpdns-proxy (before)"
REQUEST = b"GET /1k HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n"


def start_nginx(procs, d, port):
    www = d / "www"
    www.mkdir(parents=True)
    (www / "1k").write_bytes(os.urandom(1024))
    with open(www / "1g", "wb") as f:  # sparse: nginx sends page-cache zeros
        f.truncate(GiB)
    for p in (d, www):
        os.chmod(p, 0o755)
    (d / "nginx.conf").write_text(nginx_conf(d, "    server { listen 127.0.0.1:%d backlog=4096; root %s; }\n"
                                             % (port, www)))
    procs.start("nginx", nginx_argv(d), d / "nginx.log")
    procs.wait_port("nginx", port)


def start_targets(procs, binaries, d, ports):
    """httpdns-proxy (and BEFORE, an older binary, when given), microsocks and dante on
    ports[name]."""
    for name, binary in binaries.items():
        procs.start(name, [binary, "--listen", "127.0.0.1:%d" % ports[name],
                           "--admin-listen", "127.0.0.1:%d" % free_port(),
                           *httpdns_proxy_json_args(ports["httpdns"]), "--allow-destination", "127.0.0.0/8",
                           "--connect-ports", str(ports["nginx"]), "--access-log", "off", "--log-level", "warning"],
                    d / ("%s.log" % name))
    procs.start("microsocks", ["microsocks", "-i", "127.0.0.1", "-p", ports["microsocks"]], d / "microsocks.log")
    user = "user.privileged: root\nuser.unprivileged: nobody\n" if os.geteuid() == 0 else ""
    (d / "danted.conf").write_text(
        "logoutput: stderr\ninternal: 127.0.0.1 port = %d\nexternal: 127.0.0.1\n"
        "clientmethod: none\nsocksmethod: none\n%s"
        "client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }\n"
        "socks pass { from: 127.0.0.0/8 to: 127.0.0.0/8 command: connect }\n" % (ports["dante"], user))
    procs.start("dante", ["danted", "-f", d / "danted.conf"], d / "dante.log")
    for name in list(binaries) + TARGETS[1:]:
        procs.wait_port(name, ports[name])


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise Fail("SOCKS peer closed after %d of %d bytes" % (len(data), n))
        data += chunk
    return data


def one_connection(port, nginx_port, name):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"\x05\x01\x00")
        if recv_exactly(s, 2) != b"\x05\x00":
            raise Fail("SOCKS5 greeting refused on port %d" % port)
        address = b"\x03" + bytes([len(name)]) + name.encode() if name else b"\x01" + socket.inet_aton("127.0.0.1")
        s.sendall(b"\x05\x01\x00" + address + struct.pack(">H", nginx_port))
        head = recv_exactly(s, 4)
        if head[1] != 0:
            raise Fail("SOCKS5 CONNECT failed on port %d: reply %d" % (port, head[1]))
        recv_exactly(s, {1: 4, 4: 16}.get(head[3], 0) + 2)
        s.sendall(REQUEST)
        response = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            response += chunk
        if not response.startswith(b"HTTP/1.1 200") or len(response) < 1024:
            raise Fail("GET /1k through port %d: %r" % (port, response[:80]))


def setup_round(procs, target, port, nginx_port, name, count):
    pid = procs.pid(target)
    cpu0, t0 = tree_cpu_seconds(pid), time.monotonic()
    for _ in range(count):
        one_connection(port, nginx_port, name)
    wall = time.monotonic() - t0
    cpu = tree_cpu_seconds(pid) - cpu0
    return {"cpu_us_per_conn": round(cpu * 1e6 / count, 1), "conns_per_s": round(count / wall, 1)}


def tunnel_once(procs, target, port, nginx_port, timeout):
    argv = ["curl", "-sS", "--max-time", str(timeout), "-o", "/dev/null", "-w", "%{http_code} %{size_download} "
            "%{speed_download}"]
    if target in ("httpdns-proxy", BEFORE):
        argv += ["--socks5-hostname", "127.0.0.1:%d" % port, "http://origin.test:%d/1g" % nginx_port]
    elif target != "direct":
        argv += ["--socks5", "127.0.0.1:%d" % port, "http://127.0.0.1:%d/1g" % nginx_port]
    else:
        argv.append("http://127.0.0.1:%d/1g" % nginx_port)
    pid = procs.pid(target) if target != "direct" else None
    cpu0, t0 = (tree_cpu_seconds(pid) if pid else 0), time.monotonic()
    res = run(argv, timeout + 15, check=False)
    wall = time.monotonic() - t0
    parts = res.stdout.split()
    if res.returncode != 0 or len(parts) != 3 or parts[0] != "200" or int(parts[1]) != GiB:
        raise Fail("%s: 1 GiB through SOCKS failed: %r %s" % (target, res.stdout, res.stderr.strip()))
    out = {"mb_per_s": round(float(parts[2]) / 1e6, 1)}
    if pid:
        out["proxy_cpu_pct"] = round(100 * (tree_cpu_seconds(pid) - cpu0) / wall, 1)
    return out


def median_of(runs, key):
    values = [r[key] for r in runs if key in r]
    return round(statistics.median(values), 1) if values else None


def measure(args, binary, d, procs):
    binaries = {"httpdns-proxy": binary}
    if args.before_bin:
        binaries[BEFORE] = os.path.abspath(args.before_bin)
    targets = TARGETS + ([BEFORE] if args.before_bin else [])
    ports = {name: free_port() for name in ["nginx", "httpdns"] + targets}
    start_nginx(procs, d, ports["nginx"])
    procs.start("fake-httpdns", fake_httpdns_argv(ports["httpdns"]), d / "fake-httpdns.log")
    procs.wait_port("fake-httpdns", ports["httpdns"])
    start_targets(procs, binaries, d, ports)
    cases = [(t, t, None) for t in targets] + [("httpdns-proxy (name)", "httpdns-proxy", "origin.test")]
    for _, target, name in cases:  # warm-up and sanity, not recorded
        setup_round(procs, target, ports[target], ports["nginx"], name, 50)
    setup = {label: [] for label, _, _ in cases}
    for rnd in range(1, args.rounds + 1):
        order = cases if rnd % 2 else list(reversed(cases))
        for label, target, name in order:
            r = setup_round(procs, target, ports[target], ports["nginx"], name, args.connections)
            setup[label].append(r)
            log("  r%d %-21s %7.1f µs CPU/connection  %7.1f connections/s" % (rnd, label, r["cpu_us_per_conn"],
                                                                            r["conns_per_s"]))
    tunnel = {t: [] for t in ["direct"] + targets}
    tunnel_once(procs, "direct", 0, ports["nginx"], args.tunnel_timeout)  # page cache warm, not recorded
    for _ in range(args.tunnel_runs):
        for t in ["direct"] + targets:
            r = tunnel_once(procs, t, ports.get(t, 0), ports["nginx"], args.tunnel_timeout)
            tunnel[t].append(r)
            log("  1 GiB %-13s %8.1f MB/s  proxy CPU %s %%" % (t, r["mb_per_s"], r.get("proxy_cpu_pct", "-")))
    return {
        "setup": {label: {"cpu_us_per_conn": median_of(runs, "cpu_us_per_conn"),
                          "conns_per_s": median_of(runs, "conns_per_s"), "runs": runs}
                  for label, runs in setup.items()},
        "tunnel": {t: {"mb_per_s": median_of(runs, "mb_per_s"), "proxy_cpu_pct": median_of(runs, "proxy_cpu_pct"),
                       "runs_mb_per_s": [r["mb_per_s"] for r in runs]} for t, runs in tunnel.items()},
    }


def add_arguments(parser):
    parser.add_argument("--connections", type=int, default=2000, help="sequential connections per setup round "
                        "(default 2000)")
    parser.add_argument("--rounds", type=int, default=3, help="setup rounds; the median is reported (default 3)")
    parser.add_argument("--tunnel-runs", type=int, default=3, help="1 GiB downloads per target (default 3)")
    parser.add_argument("--before-bin", metavar="PATH", help="also measure this older httpdns-proxy binary "
                        "in the same rounds (before/after)")
    parser.add_argument("--tunnel-timeout", type=int, default=120, help="seconds for one 1 GiB download "
                        "(default 120)")
    add_binary_arguments(parser)
    add_output_arguments(parser, "socks")
    parser.set_defaults(max_seconds=900)


def main(args):
    require_tools(["nginx", "curl", "microsocks", "danted"], services=["nginx", "danted"])
    binary, revision = proxy_binary(args)
    record = Run(args, "socks", ["nginx", "curl", "microsocks", "danted"])
    record.doc["revision"] = revision
    record.doc["parameters"] = {"connections": args.connections, "rounds": args.rounds,
                                "tunnel_runs": args.tunnel_runs}
    if args.before_bin:
        record.doc["parameters"]["before_rev"] = revision_of(args.before_bin)
    complete, error = False, None
    with session(args.max_seconds, "httpdns-socks-") as d:
        procs = Processes(d)
        try:
            record.results.update(measure(args, binary, d, procs))
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
        finally:
            procs.stop_all()
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1


def render(doc):
    r = doc["results"]
    setup, tunnel = r["setup"], r["tunnel"]
    base = setup["microsocks"]["cpu_us_per_conn"]
    lines = ["| SOCKS5 setup (%s sequential connections, median of %d rounds) | proxy CPU µs/connection | "
             "÷ microsocks | connections/s |" % ("{:,}".format(doc["parameters"]["connections"]),
                                                 doc["parameters"]["rounds"]),
             "| --- | ---: | ---: | ---: |"]
    for label in TARGETS + [BEFORE, "httpdns-proxy (name)"]:
        if label not in setup:
            continue
        s = setup[label]
        shown = label if label != "httpdns-proxy (name)" else "httpdns-proxy, CONNECT to a name (HTTPDNS cache)"
        cpu = s["cpu_us_per_conn"]
        lines.append("| %s | %s | %s | %s |" % (shown, fmt_num(cpu, 1), ratio(cpu, base), fmt_num(s["conns_per_s"])))
    direct = tunnel["direct"]["mb_per_s"]
    lines += ["", "| 1 GiB through one tunnel (median of %d) | MB/s | ÷ direct | proxy CPU %% |"
              % doc["parameters"]["tunnel_runs"], "| --- | ---: | ---: | ---: |"]
    for t in ["direct"] + TARGETS + [BEFORE]:
        if t not in tunnel:
            continue
        x = tunnel[t]
        lines.append("| %s | %s | %s | %s |" % (t, fmt_num(x["mb_per_s"]), ratio(x["mb_per_s"], direct),
                                              fmt_num(x["proxy_cpu_pct"], 1) if x["proxy_cpu_pct"] is not None
                                              else "—"))
    return "\n".join(lines)
