"""bench/bench allocs: heap allocations per 1 KiB keep-alive request through the forward path of a
release build, counted, not timed, and held to committed thresholds.

The proxy (release build, one thread, --provider system) runs in a process of its own with
bench/peers/malloc_count.c preloaded (counters in a shared file mapping, read before and after the
load: start-up and warm-up are outside the difference). wrk sends 1 KiB GETs on one kept-alive
connection to an nginx origin through it, once with the access log off and once on (to a file).
Allocations per request = calls of malloc, calloc, realloc and the aligned allocators / requests;
exact up to the one request in flight at either reading.

With --check (scripts/test.sh runs it so), each figure is compared with bench/alloc-thresholds.json
and one above its threshold fails the run: an allocation added to every request cannot land
unseen. A figure well below its threshold is reported, so the threshold follows improvements down.
Loopback only; not a timing: CPU speed and load do not change the count.
"""
import json
from pathlib import Path

from .lib import mallocs as malloc_count
from .lib.proc import BENCH_DIR, Fail, log, session
from .lib.results import Run, add_output_arguments
from .lib.tools import add_binary_arguments, proxy_binary, require_tools
from .pinned import Pinned

THRESHOLDS = BENCH_DIR / "alloc-thresholds.json"
VARIANTS = {"access-log-off": "off", "access-log-on": "on"}


def count(binary, workdir, seconds):
    """{variant: {"calls", "requests", "per_request", "split"}} for one binary."""
    figures = {}
    for variant, access_log in VARIANTS.items():
        run = Pinned(Path(workdir) / variant, core=0, access_log=access_log)
        try:
            origin = run.origin()
            lib = run.malloc_counter()
            counters = run.workdir / "proxy.mallocs"
            env = malloc_count.preload_env(lib, counters)
            port = run.httpdns_proxy("proxy", binary, env=env)
            run.wrk(port, origin, 1)  # warm-up: the upstream connection, the pools, the caches
            calls, requests, split = run.mallocs(counters, port, origin, seconds)
        finally:
            run.procs.stop_all()
        if requests < 1000:
            raise Fail("%s: only %d requests in %d s" % (variant, requests, seconds))
        figures[variant] = {"calls": calls, "requests": requests, "per_request": round(calls / requests, 3),
                            "split": {k: round(v / requests, 3) for k, v in split.items()}}
        log("%-15s %.3f allocations per request (%d requests)" % (variant, calls / requests, requests))
    return figures


def judge(figures, thresholds):
    """(failures, notes): a figure above its threshold fails; one below by a whole allocation is noted."""
    failures, notes = [], []
    for variant, figure in figures.items():
        limit = thresholds.get(variant)
        if limit is None:
            failures.append("%s: no threshold in %s" % (variant, THRESHOLDS.name))
            continue
        have = figure["per_request"]
        if have > limit:
            failures.append("%s: %.3f allocations per request, threshold %.2f" % (variant, have, limit))
        elif have <= limit - 1:
            notes.append("%s: %.3f allocations per request, a whole one under the threshold %.2f: lower it "
                         "in bench/alloc-thresholds.json" % (variant, have, limit))
    return failures, notes


def add_arguments(p):
    p.add_argument("--seconds", type=int, default=2, help="seconds of load per variant (default 2)")
    p.add_argument("--check", action="store_true",
                   help="fail (exit 1) when a figure is above its threshold in bench/alloc-thresholds.json")
    add_binary_arguments(p)
    add_output_arguments(p, "allocs")


def main(args):
    require_tools(["nginx", "wrk", "taskset", "gcc"], services=["nginx"])
    binary, revision = proxy_binary(args)
    thresholds = json.loads(THRESHOLDS.read_text())["per_request"]
    record = Run(args, "allocs", ["nginx", "wrk", "gcc", "swift"])
    record.doc["revision"] = revision
    record.doc["parameters"] = {"seconds": args.seconds, "thresholds": thresholds}
    failures, error = [], None
    with session(args.max_seconds, "httpdns-allocs-") as workdir:
        try:
            record.results["allocations"] = count(binary, workdir, args.seconds)
            failures, notes = judge(record.results["allocations"], thresholds)
            for note in notes:
                log("note: " + note)
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
    record.finish(error is None, error)
    print(render(record.doc))
    if error:
        return 1
    if args.check and failures:
        for failure in failures:
            log("OVER THE THRESHOLD: " + failure)
        return 1
    return 0


def render(doc):
    figures = doc["results"].get("allocations") or {}
    thresholds = doc["parameters"].get("thresholds", {})
    lines = ["| 1 KiB keep-alive GET | allocations per request | threshold | requests |", "| --- | --- | --- | --- |"]
    for variant, figure in figures.items():
        lines.append("| %s | %.2f | %s | %d |" % (variant, figure["per_request"], thresholds.get(variant, "—"),
                                                figure["requests"]))
    return "\n".join(lines)
