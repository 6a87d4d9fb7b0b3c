"""What a transparent connection costs: CPU to accept, peek at the ClientHello, resolve its SNI
(cached) and dial, and RSS per idle relayed connection.

As root, in the network namespaces of scripts/transparent-netns-lib.sh (the transparent
interception test's): the rules from `transparent-rules --apply`, the proxy as uid 10001 with one
event-loop thread and the access log off, HTTPDNS from the local DoH JSON server of
scripts/transparent-peers.py. An app opens COUNT connections to a decoy address, each sending a
ClientHello for origin.test, and keeps them open; the origin is a sink that holds them. Figures
from /proc/PID/stat (utime+stime) and /proc/PID/status (VmRSS) before and after the COUNT (after
a warm-up of 100, closed); relays counted by the kernel (ss), not by polling the proxy.
"""
import json
import os
import subprocess
import time

from .lib.proc import REPO, Fail, Processes, log, run, session
from .lib.procfs import CLK_TCK, status_field
from .lib.results import Run, add_output_arguments
from .lib.tools import add_binary_arguments, proxy_binary, require_tools

WARM = 100
# Keeps the namespaces up while it waits on stdin; its EXIT trap (the library's) removes them.
SETUP = r'''set -euo pipefail
source scripts/netns-lib.sh
source scripts/transparent-netns-lib.sh
if ! reason="$(netns_available)"; then echo "unavailable $reason"; exit 1; fi
transparent_setup "$1"
echo "ready $POD $ORIGIN_NS $work $peers"
read -r _ || true
'''


class Transparent:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.procs = Processes(workdir)
        self.setup = subprocess.Popen(["bash", "-c", SETUP, "bash", str(os.getpid() % 100000)], cwd=REPO,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      start_new_session=True)
        line = self.setup.stdout.readline().split()
        if not line or line[0] != "ready":
            self.close()
            raise Fail("the network namespaces could not be made: %s" % " ".join(line[1:] or ["(no reason)"]))
        self.pod, self.origin_ns, work, self.peers = line[1:5]
        self.work = type(workdir)(work)

    def close(self):
        self.procs.stop_all()
        if self.setup.poll() is None:
            self.setup.stdin.close()  # the setup shell exits; its trap removes the namespaces
            try:
                self.setup.wait(30)
            except subprocess.TimeoutExpired:
                self.setup.kill()

    def ns(self, namespace, argv):
        return ["ip", "netns", "exec", namespace] + [str(a) for a in argv]

    def wait_until(self, seconds, check, what):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if check():
                return
            time.sleep(0.2)
        raise Fail("timed out waiting for %s" % what)

    def admin(self, path):
        res = run(self.ns(self.pod, ["curl", "-fsS", "--max-time", "5", "http://127.0.0.1:8081" + path]), 10,
                  check=False)
        return res.stdout if res.returncode == 0 else None

    def accepted(self):
        return json.loads(self.admin("/stats"))["access"]["transparent"]["accepted"]

    def relays(self):
        res = run(self.ns(self.pod, ["ss", "-Htn", "state", "established", "dst", "10.233.1.10:8443"]), 10)
        return len(res.stdout.splitlines())

    def cpu(self):
        fields = open("/proc/%d/stat" % self.proxy_pid).read().rsplit(")", 1)[1].split()
        return int(fields[11]), int(fields[12])

    def hold(self, count, release):
        name = "hold-%d" % count
        self.procs.start(name, self.ns(self.pod, ["python3", "-u", self.peers, "hold", "10.233.1.66", "8443",
                                                  "origin.test", count, release]), self.work / ("%s.out" % name))

    def measure(self, count):
        w = self.work
        self.procs.start("peers", self.ns(self.origin_ns, [
            "python3", "-u", self.peers, "servers", "--origin", "10.233.1.10", "--decoy", "10.233.1.66",
            "--doh", "10.233.1.53", "--banner", "10.233.1.77", "--banner6", "fd33:1::77", "--cert", w / "origin.pem",
            "--key", w / "origin.key", "--log", w]), w / "peers.out")
        self.procs.start("sink", self.ns(self.origin_ns, ["python3", "-u", self.peers, "sink", "10.233.1.10", "8443"]),
                         w / "sink.out")
        for name in ("peers", "sink"):
            self.wait_until(10, lambda name=name: "ready" in (w / ("%s.out" % name)).read_text(), name)
        run(self.ns(self.pod, [self.binary, "transparent-rules", "--listener-port", "15001", "--ports", "8443",
                               "--proxy-uid", "10001", "--ipv6", "false", "--apply"]), 30)
        proxy = self.procs.start("proxy", self.ns(self.pod, [
            "setpriv", "--reuid", "10001", "--regid", "10001", "--clear-groups", "--", self.binary, "serve",
            "--listen", "127.0.0.1:8080", "--admin-listen", "127.0.0.1:8081", "--transparent-listen",
            "127.0.0.1:15001", "--provider", "json", "--resolver-url", "http://10.233.1.53/resolve",
            "--system-fallback", "false", "--ip-family", "ipv4", "--allow-destination", "10.233.0.0/16",
            "--threads", "1", "--max-connections", "20000", "--max-connections-per-client", "20000",
            "--access-log", "off"]), w / "proxy.log", stdout=subprocess.DEVNULL)
        self.wait_until(20, lambda: self.admin("/healthz") is not None, "the proxy")
        # ip netns exec runs setpriv, which execs the proxy: the same process
        self.proxy_pid = proxy.pid
        # warm-up: the first connections resolve origin.test, size the buffers and the allocator
        self.hold(WARM, w / "warm.release")
        self.wait_until(60, lambda: self.relays() == WARM, "%d warm-up relays" % WARM)
        (w / "warm.release").touch()
        self.wait_until(60, lambda: self.relays() == 0, "the warm-up relays to close")
        rss0, cpu0, accepted0 = status_field(self.proxy_pid, "VmRSS"), self.cpu(), self.accepted()
        self.hold(count, w / "bench.release")
        relays = self.settle(count)
        rss1, cpu1, accepted1 = status_field(self.proxy_pid, "VmRSS"), self.cpu(), self.accepted()
        (w / "bench.release").touch()
        if relays < count:
            log("only %d of %d connections relayed (see the proxy's log: %s)" % (relays, count, self.refusals()))
        user, system = (cpu1[0] - cpu0[0]) / CLK_TCK, (cpu1[1] - cpu0[1]) / CLK_TCK
        return {"connections": count, "relays": relays, "accepted": accepted1 - accepted0,
                "rss_before_kib": rss0, "rss_after_kib": rss1,
                "kib_per_connection": round((rss1 - rss0) / relays, 2),
                "cpu_us_per_connection": round((user + system) / count * 1e6, 1),
                "sys_us_per_connection": round(system / count * 1e6, 1)}

    def settle(self, count, seconds=300):
        """Relays open once all COUNT are, or once the number has held still for 5 s."""
        end = time.monotonic() + seconds
        last, since = -1, time.monotonic()
        while time.monotonic() < end:
            n = self.relays()
            if n == count:
                return n
            if n != last:
                last, since = n, time.monotonic()
            elif n > 0 and time.monotonic() - since > 5:
                return n
            time.sleep(0.2)
        raise Fail("timed out waiting for %d relays (%d open)" % (count, last))

    def refusals(self):
        """The proxy's error log lines, counted by message."""
        counts = {}
        for line in (self.work / "proxy.log").read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("level") in ("error", "warning"):
                counts[entry.get("message")] = counts.get(entry.get("message"), 0) + 1
        return counts or "nothing logged"


def add_arguments(p):
    p.add_argument("--connections", type=int, default=2000, help="idle relayed connections (default 2000)")
    add_binary_arguments(p)
    add_output_arguments(p, "transparent")
    p.set_defaults(max_seconds=900)


def main(args):
    require_tools(["ip", "ss", "setpriv", "curl", "openssl"])
    if os.geteuid() != 0:
        raise Fail("needs root (network namespaces, netfilter rules)")
    binary, revision = proxy_binary(args)
    record = Run(args, "transparent", [])
    record.doc["revision"] = revision
    record.doc["parameters"] = {"connections": args.connections, "warm_up": WARM}
    complete, error, bench = False, None, None
    with session(args.max_seconds, "httpdns-transparent-") as workdir:
        try:
            bench = Transparent(binary, workdir)
            record.results.update(bench.measure(args.connections))
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
        finally:
            if bench:
                bench.close()
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1


def render(doc):
    r = doc["results"]
    runs = r["runs"] if "runs" in r else [r]
    lines = ["| run | connections opened | relayed and held | RSS per relay | CPU per connection set up | of which "
             "kernel |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for i, x in enumerate(runs, 1):
        lines.append("| %d | %s | %s | %.1f KiB | %.0f µs | %s |" % (
            i, "{:,}".format(x["connections"]), "{:,}".format(x.get("relays", x["connections"])),
            x["kib_per_connection"], x["cpu_us_per_connection"],
            "—" if x.get("sys_us_per_connection") is None else "%.0f µs" % x["sys_us_per_connection"]))
    return "\n".join(lines)
