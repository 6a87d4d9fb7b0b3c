"""Results files: one JSON document per table in bench/results/NAME.json.

    {"kind": the subcommand that measured it (it renders the table),
     "name", "source": "measured" or "transcribed" (figures copied from an earlier write-up,
     with "note" saying where from), "command", "started", "seconds", "complete",
     "revision": the httpdns-proxy revision measured, "machine": CPU, cores, kernel, memory,
     load average at the start, "versions": of the tools involved, "parameters", "results"}
"""
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .proc import BENCH_DIR, REPO, log

RESULTS = BENCH_DIR / "results"
OUT = BENCH_DIR / "out"

# How each tool tells its version (first line matching a dotted number).
VERSION_COMMANDS = {
    "swift": ["swift", "--version"], "nginx": ["nginx", "-v"], "squid": ["squid", "-v"],
    "tinyproxy": ["tinyproxy", "-v"], "wrk": ["wrk", "-v"], "curl": ["curl", "--version"],
    "openssl": ["openssl", "version"], "dnsperf": ["dnsperf", "-h"], "unbound": ["unbound", "-V"],
    "dnsmasq": ["dnsmasq", "-v"], "strace": ["strace", "-V"], "perf": ["perf", "--version"],
    # microsocks has no version flag (its usage text names 0.0.0.0): the package's version.
    "microsocks": ["dpkg-query", "-W", "-f=${Version}", "microsocks"], "danted": ["danted", "-v"],
}


def add_output_arguments(parser, default_name):
    g = parser.add_argument_group("output")
    g.add_argument("--name", default=default_name,
                   help="results file name: RESULTS/NAME.json (default %s)" % default_name)
    g.add_argument("--results", default=str(RESULTS), metavar="DIR",
                   help="where the results JSON goes (default bench/results, the figures the docs show)")
    g.add_argument("--out", default=str(OUT), metavar="DIR",
                   help="logs and raw files of the run (default bench/out, git-ignored)")
    g.add_argument("--max-seconds", type=int, default=1800, metavar="N", help="hard limit for the whole run")


def tool_version(tool):
    argv = VERSION_COMMANDS.get(tool, [tool, "--version"])
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (res.stdout + res.stderr).splitlines():
        m = re.search(r"(\d+\.\d+(?:\.\d+)?(?:[-~+][\w.~+-]*)?)", line)
        if m:
            return m.group(1)
    return None


def machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine(),
            "memory_mib": mem, "load_average": [round(x, 2) for x in os.getloadavg()]}


class Run:
    """The document of one run: created at the start (machine state, load average), filled in by
    the subcommand, written at the end whatever happened (`complete` says how it ended)."""

    def __init__(self, args, kind, tools=()):
        self.args = args
        self.t0 = time.monotonic()
        self.doc = {
            "kind": kind, "name": args.name, "source": "measured",
            "command": shown_command(sys.argv[1:]),
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seconds": None, "complete": False, "revision": None,
            "machine": machine(),
            "versions": {t: tool_version(t) for t in ("python",) + tuple(tools) if t != "python"},
            "parameters": {}, "results": {},
        }
        self.doc["versions"]["python"] = platform.python_version()
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)

    @property
    def results(self):
        return self.doc["results"]

    def finish(self, complete, error=None):
        self.doc["seconds"] = round(time.monotonic() - self.t0, 1)
        self.doc["complete"] = complete
        if error:
            self.doc["error"] = error
        path = Path(self.args.results) / ("%s.json" % self.args.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        write(self.doc, path)
        log("%s in %.0f s; results: %s" % ("done" if complete else "INCOMPLETE run", self.doc["seconds"],
                                          relpath(path)))
        return path


def relpath(path):
    """A path inside the repository relative to it; any other by its file name alone (results are
    committed: they name no directory of the machine they were measured on)."""
    p = Path(path).resolve()
    if p.is_relative_to(REPO):
        return str(p.relative_to(REPO))
    return p.name if Path(path).is_absolute() else str(path)


def shown_command(argv):
    """The command line as the results record it: absolute paths (also in `--flag=PATH`) shown
    as `relpath` shows them."""
    def shown(arg):
        flag, eq, value = arg.partition("=")
        if eq and value.startswith("/"):
            return flag + "=" + relpath(value)
        return relpath(arg) if arg.startswith("/") else arg
    return "bench/bench " + " ".join(shlex.quote(shown(a)) for a in argv)


def write(doc, path):
    """Writes a results document; paths inside the repository are written relative to it."""
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    Path(path).write_text(text.replace(str(REPO) + "/", ""))


def load(path):
    return json.loads(Path(path).read_text())


# ---------------------------------------------------------------- numbers in tables
def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_num(v, digits=0):
    if v is None:
        return "—"
    return "{:,.{d}f}".format(v, d=digits)


def ratio(a, b, digits=2, suffix="×"):
    if a is None or b in (None, 0):
        return "—"
    return "%.*f%s" % (digits, a / b, suffix)
