"""Time to first byte through the proxy when the first of two addresses of a name is down.

The name bench.test has two addresses in a static list, 127.0.0.2 first and 127.0.0.1 second;
the origin (python3 -m http.server) listens on the same port of both or of 127.0.0.1 only.
Three shapes of the first address:

  alive     both answer
  dead      nothing listens on 127.0.0.2: the kernel refuses at once, like a host that answers RST
  dropping  a listener on 127.0.0.2 whose accept queue is full, so SYNs are dropped, like an
            unreachable address

Cold: a fresh proxy per request, whose address-health table is empty (it also pays its other
first-request costs; compare with the cold alive row). Warm: one proxy, one request first (which
teaches it), then N. --pool-max-idle 0, so every request dials. curl's time_starttransfer, each
request capped at 5 s. Loopback only.
"""
import socket
import statistics
import subprocess
import time

from .lib.proc import Fail, Processes, free_port, log, run, session, wait_port
from .lib.results import Run, add_output_arguments
from .lib.tools import add_binary_arguments, proxy_binary, require_tools

CASES = ["alive_cold", "dead_cold", "drop_cold", "alive_warm", "dead_warm", "drop_warm"]
LABELS = {"alive": "alive", "dead": "dead (refused)", "drop": "dropping"}


class ConnectByIP:
    def __init__(self, binary, work, n):
        self.binary, self.work, self.n = binary, work, n
        self.procs = Processes(work)
        self.origin_port = free_port()
        (work / "www").mkdir()
        (work / "www" / "index.html").write_text("hello\n")
        (work / "list.json").write_text(
            '{"service":"bench","enable":1,"domainlist":[{"domain":"bench.test","ips":["127.0.0.2","127.0.0.1"]}]}\n')
        self.proxy_port = None

    def start_origin(self, address):
        name = "origin-" + address
        self.procs.start(name, ["python3", "-m", "http.server", str(self.origin_port), "--bind", address,
                                "--directory", str(self.work / "www")], self.work / ("%s.log" % name))
        end = time.monotonic() + 10
        while time.monotonic() < end:
            self.procs.check_alive(name)
            try:
                with socket.create_connection((address, self.origin_port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise Fail("origin on %s did not start" % address)

    def start_proxy(self):
        self.proxy_port, admin = free_port(), free_port()
        self.procs.start("proxy", [self.binary, "--listen", "127.0.0.1:%d" % self.proxy_port,
                                   "--admin-listen", "127.0.0.1:%d" % admin, "--provider", "static",
                                   "--static-list", self.work / "list.json", "--system-fallback", "false",
                                   "--allow-destination", "127.0.0.0/8", "--ip-family", "ipv4", "--pool-max-idle", "0",
                                   "--access-log", "off", "--log-level", "error", "--threads", "1"],
                         self.work / "proxy.log", stdout=subprocess.DEVNULL)
        # ready when the admin listener answers: nothing is dialed, so the health table starts empty
        wait_port(admin, lambda: self.procs.check_alive("proxy"), 10, "the proxy's admin listener")
        wait_port(self.proxy_port, lambda: self.procs.check_alive("proxy"), 10, "the proxy")

    def ttfb(self):
        res = run(["curl", "-s", "-o", "/dev/null", "-m", "5", "-w", "%{time_starttransfer}", "-x",
                   "http://127.0.0.1:%d" % self.proxy_port, "http://bench.test:%d/" % self.origin_port], 15,
                  check=False)
        try:
            return float(res.stdout.strip()) * 1000
        except ValueError:
            raise Fail("curl through the proxy failed: %r %s" % (res.stdout, res.stderr)) from None

    def cold(self):
        out = []
        for _ in range(self.n):
            self.start_proxy()
            out.append(self.ttfb())
            self.procs.stop("proxy")
        return out

    def warm(self):
        self.start_proxy()
        self.ttfb()
        out = [self.ttfb() for _ in range(self.n)]
        self.procs.stop("proxy")
        return out

    def dropping_listener(self):
        """A listener on 127.0.0.2 with a full accept queue (filled, never accepted)."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.2", self.origin_port))
        listener.listen(0)
        held = []
        for _ in range(3):
            c = socket.socket()
            c.settimeout(0.3)
            try:
                c.connect(("127.0.0.2", self.origin_port))
                held.append(c)
            except OSError:
                c.close()
        return [listener] + held

    def measure(self):
        samples = {}
        self.start_origin("127.0.0.1")
        log("first address dead (refused)")
        samples["dead_cold"], samples["dead_warm"] = self.cold(), self.warm()
        log("first address dropping SYNs")
        held = self.dropping_listener()
        try:
            samples["drop_cold"], samples["drop_warm"] = self.cold(), self.warm()
        finally:
            for s in held:
                s.close()
        log("both addresses alive")
        self.start_origin("127.0.0.2")  # same port: now both addresses answer
        samples["alive_cold"], samples["alive_warm"] = self.cold(), self.warm()
        return summarize(samples)


def p90(values):
    values = sorted(values)
    return values[max(0, int(len(values) * 0.9) - 1)]


def summarize(samples):
    out = {}
    for case in CASES:
        v = samples[case]
        out[case] = {"median_ms": round(statistics.median(v), 3), "p90_ms": round(p90(v), 3),
                     "samples_ms": [round(x, 3) for x in v]}
    return out


def add_arguments(p):
    p.add_argument("-n", "--requests", type=int, default=30, help="requests per case (default 30)")
    add_binary_arguments(p)
    add_output_arguments(p, "connect-by-ip")
    p.set_defaults(max_seconds=900)


def main(args):
    require_tools(["curl"])
    binary, revision = proxy_binary(args)
    record = Run(args, "connect-by-ip", ["curl"])
    record.doc["revision"] = revision
    record.doc["parameters"] = {"requests": args.requests}
    complete, error = False, None
    with session(args.max_seconds, "httpdns-connect-") as work:
        bench = ConnectByIP(binary, work, args.requests)
        try:
            record.results["cases"] = bench.measure()
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
        finally:
            bench.procs.stop_all()
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1


def render(doc):
    c = doc["results"]["cases"]
    lines = ["| first address | cold median (ms) | cold p90 (ms) | cold ÷ alive | warm median (ms) | warm p90 (ms) "
             "| warm ÷ alive |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for shape in ("alive", "dead", "drop"):
        cells = [LABELS[shape]]
        for phase in ("cold", "warm"):
            v, base = c["%s_%s" % (shape, phase)], c["alive_%s" % phase]
            cells += ["%.1f" % v["median_ms"], "%.1f" % v["p90_ms"], "%.2f" % (v["median_ms"] / base["median_ms"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
