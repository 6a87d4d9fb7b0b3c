"""The DNS listener under load: dnsperf against httpdns-proxy --dns-listen beside unbound and
dnsmasq configured as caches, all in the same run. Loopback only.

Each server runs pinned to one core (--server-cpu) with one thread; dnsperf runs on another
(--client-cpu). Every server is warmed with the same 50 names (each queried once), so the load is
cached A answers only: httpdns-proxy answers from its HTTPDNS cache (filled from
bench/peers/fake_httpdns.py), unbound and dnsmasq from their caches (filled from a tiny dnspython
upstream). For each server: the highest rate dnsperf reaches in --duration seconds (100
outstanding queries), then latency percentiles from a run at half that rate (dnsperf -v reports
each query's latency), or at a fixed --rate (--no-max skips the maximum run). CPU per answer is the
server's utime+stime over the maximum run divided by the answers in it. --before-bin adds an older
httpdns-proxy binary as one more server in the same run; --mallocs preloads
bench/peers/malloc_count.c into the httpdns-proxy servers and reports heap allocations per answer
over the latency run.
"""
import os
import socket
import subprocess
import threading
import time

from .lib.mallocs import build_counter, preload_env, read_counters
from .lib.peers import fake_httpdns_argv
from .lib.proc import Fail, Processes, free_port, log, session, udp_port
from .lib.procfs import tree_cpu_seconds
from .lib.results import Run, add_output_arguments
from .lib.tools import add_binary_arguments, proxy_binary, require_tools, which

NAMES = ["bench-%02d.test" % i for i in range(50)]
BEFORE = "httpdns-proxy-before"


def upstream_server(port, stop):
    """Authoritative-ish answers for the bench names (TTL 3600) for unbound and dnsmasq to cache."""
    import dns.message
    import dns.rrset
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", port))
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            data, addr = sock.recvfrom(4096)
        except socket.timeout:
            continue
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().rstrip(".")
        if name in NAMES and question.rdtype == 1:
            index = NAMES.index(name)
            response.answer.append(dns.rrset.from_text(question.name, 3600, "IN", "A", "192.0.2.%d" % (index + 1)))
        elif name not in NAMES:
            response.set_rcode(3)
        sock.sendto(response.to_wire(), addr)
    sock.close()


def ask(port, name):
    import dns.message
    import dns.query
    return dns.query.udp(dns.message.make_query(name, "A"), "127.0.0.1", port=port, timeout=5)


def wait_udp(port, deadline=20.0):
    end = time.time() + deadline
    while time.time() < end:
        try:
            ask(port, "warmup.invalid")
            return
        except Exception:
            time.sleep(0.2)
    raise Fail("no DNS answer on port %d" % port)


def dnsperf(args, port, datafile, rate=None, verbose=False, duration=None):
    argv = ["taskset", "-c", args.client_cpu, "dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", str(datafile),
            "-l", str(duration or args.duration), "-c", "4", "-q", "100", "-t", "2"]
    if rate:
        argv += ["-Q", str(int(rate))]
    if verbose:
        argv += ["-v"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=(duration or args.duration) + 60).stdout
    return parse_dnsperf(out, verbose)


def parse_dnsperf(out, verbose=False):
    """Queries per second, queries lost and (with -v) every answer's latency in ms."""
    result = {"qps": None, "lost": None, "completed": None, "latencies_ms": []}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Queries completed:"):
            result["completed"] = int(line.split()[2])
        elif line.startswith("Queries per second:"):
            result["qps"] = float(line.split()[-1])
        elif line.startswith("Queries lost:"):
            result["lost"] = int(line.split()[2])
        elif verbose and line.startswith(">"):
            # "> NOERROR bench-01.test A 0.000123"
            try:
                result["latencies_ms"].append(float(line.split()[-1]) * 1000)
            except ValueError:
                pass
    return result


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def measure(args, name, port, datafile, pid=None, mallocs=None):
    for n in NAMES:
        ask(port, n)
    cpu0 = tree_cpu_seconds(pid) if pid else None
    best = {"qps": None, "lost": None, "completed": None} if args.no_max else dnsperf(args, port, datafile)
    cpu_us = None
    if cpu0 is not None and best["completed"]:
        cpu_us = round((tree_cpu_seconds(pid) - cpu0) * 1e6 / best["completed"], 2)
    half = args.rate or (best["qps"] / 2 if best["qps"] else 1000)
    allocations0 = sum(read_counters(mallocs)) if mallocs else None
    latency = dnsperf(args, port, datafile, rate=half, verbose=True,
                      duration=args.latency_duration or min(args.duration, 5))
    per_answer = None
    if allocations0 is not None and latency["completed"]:
        per_answer = round((sum(read_counters(mallocs)) - allocations0) / latency["completed"], 2)
    lat = latency["latencies_ms"]
    row = {
        "server": name, "max_qps": best["qps"], "lost_at_max": best["lost"], "cpu_us_per_answer": cpu_us,
        "half_rate": half,
        "achieved_qps": latency["qps"],
        "p50_ms": percentile(lat, 50), "p90_ms": percentile(lat, 90), "p99_ms": percentile(lat, 99),
        "p999_ms": percentile(lat, 99.9), "answers_timed": len(lat), "lost_at_half": latency["lost"],
        "allocations_per_answer": per_answer,
    }
    log("%s: %s" % (name, row))
    return row


def add_arguments(ap):
    ap.add_argument("--duration", type=int, default=10, help="seconds of the maximum-rate run (default 10)")
    ap.add_argument("--server-cpu", default="0", help="the core every server runs on (default 0)")
    ap.add_argument("--client-cpu", default="1", help="the core dnsperf runs on (default 1)")
    ap.add_argument("--servers", default="httpdns-proxy,unbound,dnsmasq")
    ap.add_argument("--rate", type=float, help="latency run at this fixed rate (queries/s) instead of half the maximum")
    ap.add_argument("--no-max", action="store_true", help="skip the maximum-rate run (with --rate)")
    ap.add_argument("--latency-duration", type=int, help="seconds of the latency run (default min(duration, 5))")
    ap.add_argument("--proxy-threads", default="1", help="httpdns-proxy --threads (default 1: one event loop)")
    ap.add_argument("--proxy-log-level", default="warning", help="httpdns-proxy --log-level")
    ap.add_argument("--mallocs", action="store_true",
                    help="heap allocations per answer of the httpdns-proxy servers (bench/peers/malloc_count.c)")
    ap.add_argument("--before-bin", metavar="PATH", default="",
                    help="also measure this httpdns-proxy binary (the before of a change) as server %s" % BEFORE)
    add_binary_arguments(ap)
    add_output_arguments(ap, "dns")


def main(args):
    require_tools(["dnsperf", "taskset", "unbound", "dnsmasq"], services=["unbound", "dnsmasq"])
    try:
        import dns.message  # noqa: F401  (dnspython: the upstream and the warm-up queries)
    except ImportError:
        raise Fail("dnspython is missing (scripts/ensure-deps.sh --with-test-tools)") from None
    args.binary, revision = proxy_binary(args)
    servers = [s for s in args.servers.split(",") if s]
    if args.before_bin:
        if not os.access(args.before_bin, os.X_OK):
            raise Fail("not an executable: %s" % args.before_bin)
        args.before_bin = os.path.abspath(args.before_bin)
        servers.insert(servers.index("httpdns-proxy") if "httpdns-proxy" in servers else 0, BEFORE)
    args.servers = ",".join(servers)
    record = Run(args, "dns", ["dnsperf", "unbound", "dnsmasq"])
    record.doc["revision"] = revision
    record.doc["parameters"] = {"duration": args.duration, "server_cpu": args.server_cpu,
                                "client_cpu": args.client_cpu, "rate": args.rate, "no_max": args.no_max,
                                "latency_duration": args.latency_duration or min(args.duration, 5),
                                "proxy_threads": args.proxy_threads, "names": len(NAMES)}
    complete, error, rows = False, None, []
    with session(args.max_seconds, "httpdns-dns-") as work:
        try:
            measure_all(args, work, rows)
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
    record.results["rows"] = rows
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1


def measure_all(args, work, rows):
    procs = Processes(work)
    stop = threading.Event()
    try:
        datafile = work / "queries.txt"
        datafile.write_text("".join("%s A\n" % n for n in NAMES))
        upstream = udp_port()
        threading.Thread(target=upstream_server, args=(upstream, stop), daemon=True).start()
        pin = ["taskset", "-c", args.server_cpu]
        counter_lib = None
        if args.mallocs:
            counter_lib = build_counter(work)
        for server in args.servers.split(","):
            port = udp_port()
            counters, env = None, None
            if server in ("httpdns-proxy", BEFORE):
                service = free_port()
                fake = fake_httpdns_argv(service, 3600, ["%s=192.0.2.%d" % (n, i + 1) for i, n in enumerate(NAMES)])
                procs.start("fake-httpdns", fake, work / "fake.log")
                time.sleep(1)
                binary = args.before_bin if server == BEFORE else args.binary
                argv = pin + [binary, "--provider", "json",
                              "--resolver-url", "http://127.0.0.1:%d/resolve" % service,
                              "--resolver-ip", "127.0.0.1", "--ip-family", "ipv4", "--system-fallback", "false",
                              "--threads", args.proxy_threads, "--listen", "127.0.0.1:%d" % free_port(),
                              "--admin-listen", "off", "--dns-listen", "127.0.0.1:%d" % port, "--dns-rate-limit", "0",
                              "--dns-upstream", "127.0.0.1:%d" % upstream, "--log-level", args.proxy_log_level]
                if counter_lib:
                    counters = work / ("%s.mallocs" % server)
                    env = preload_env(counter_lib, counters)
                procs.start(server, argv, work / ("%s.log" % server), env=env)
            elif server == "unbound":
                conf = work / "unbound.conf"
                conf.write_text("""server:
    interface: 127.0.0.1
    port: %d
    do-daemonize: no
    num-threads: 1
    so-reuseport: no
    username: ""
    chroot: ""
    directory: "%s"
    pidfile: ""
    use-syslog: no
    logfile: ""
    verbosity: 0
    access-control: 127.0.0.0/8 allow
    do-not-query-localhost: no
    module-config: "iterator"
    qname-minimisation: no
    prefetch: no
    ratelimit: 0
    ip-ratelimit: 0
forward-zone:
    name: "."
    forward-addr: 127.0.0.1@%d
""" % (port, work, upstream))
                unbound = which("unbound")
                procs.start(server, pin + [unbound, "-d", "-c", str(conf)], work / "unbound.log")
            elif server == "dnsmasq":
                dnsmasq = which("dnsmasq")
                procs.start(server, pin + [dnsmasq, "-k", "-C", "/dev/null", "--no-resolv", "--no-hosts", "--user=root",
                                           "--pid-file=", "--server=127.0.0.1#%d" % upstream, "--port=%d" % port,
                                           "--listen-address=127.0.0.1", "--bind-interfaces", "--cache-size=10000",
                                           "--dns-forward-max=1000"], work / "dnsmasq.log")
            else:
                raise Fail("unknown server %s" % server)
            wait_udp(port)
            rows.append(measure(args, server, port, datafile, procs.pid(server), counters))
            procs.stop(server)
            if server in ("httpdns-proxy", BEFORE):
                procs.stop("fake-httpdns")
    finally:
        stop.set()
        procs.stop_all()


def render(doc):
    rows = doc["results"]["rows"]
    fixed = doc["parameters"].get("no_max")

    def f(v):
        return "—" if v is None else ("%.3f" % v if isinstance(v, float) and v < 100 else "{:,.0f}".format(v))
    if fixed:
        allocations = any(r.get("allocations_per_answer") is not None for r in rows)
        lines = ["| server (1 core) | rate (qps) | p50 (ms) | p90 (ms) | p99 (ms) | p99.9 (ms) | lost |"
                 + (" allocations/answer |" if allocations else ""),
                 "| --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if allocations else "")]
        for r in rows:
            extra = ""
            if allocations:
                a = r.get("allocations_per_answer")
                extra = " %s |" % ("—" if a is None else "%.2f" % a)
            lines.append("| %s | %s | %s | %s | %s | %s | %s |%s" % (
                r["server"], f(r["achieved_qps"]), f(r["p50_ms"]), f(r["p90_ms"]), f(r["p99_ms"]), f(r["p999_ms"]),
                r["lost_at_half"], extra))
        return "\n".join(lines)
    lines = ["| server (1 core) | max cached A qps | lost | CPU µs/answer | latency run at (qps) | p50 (ms) | p90 (ms) "
             "| p99 (ms) | p99.9 (ms) | lost |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        cpu = r.get("cpu_us_per_answer")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["server"], f(r["max_qps"]), "—" if r["lost_at_max"] is None else r["lost_at_max"],
            "—" if cpu is None else "%.2f" % cpu, f(r["achieved_qps"]),
            f(r["p50_ms"]), f(r["p90_ms"]), f(r["p99_ms"]), f(r["p999_ms"]), r["lost_at_half"]))
    return "\n".join(lines)
