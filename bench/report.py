"""The tables the docs show, rendered from the results JSON (bench/results/NAME.json).

    bench/bench report NAME...     print the table block of each results file
    bench/bench report --check     every block between <!-- bench:table NAME --> and
                                   <!-- /bench:table --> in README.md and docs/*.md equals what
                                   bench/results/NAME.json renders (exit status 1 otherwise)
    bench/bench report --update    rewrite those blocks from the JSON

A block is one line saying where the figures come from (measured or transcribed, the revision,
the command, the machine and the tools' versions), then the table(s) of the subcommand that
measured them.
"""
import re
import sys
from pathlib import Path

from . import ab, compare, connect_by_ip, dns_listener, pinned, soak, socks, tls, transparent
from .lib.proc import REPO
from .lib.results import RESULTS, load, relpath

RENDERERS = {"run": compare.render, "ab": ab.render, "pinned": pinned.render, "soak": soak.render,
             "dns": dns_listener.render, "tls": tls.render, "socks": socks.render,
             "connect-by-ip": connect_by_ip.render,
             "transparent": transparent.render}
BLOCK = re.compile(r"(<!-- bench:table ([A-Za-z0-9_.-]+) -->\n)(.*?)(<!-- /bench:table -->)", re.S)
VERSIONS = ("swift", "nginx", "squid", "tinyproxy", "wrk", "curl", "openssl", "dnsperf", "unbound", "dnsmasq")


def provenance(doc):
    m = doc.get("machine") or {}
    machine = "%s, %s cores, Linux %s" % (m.get("cpu", "?"), m.get("cores", "?"), m.get("kernel", "?"))
    if m.get("load_average"):
        machine += ", load average %.2f at the start" % m["load_average"][0]
    versions = ", ".join("%s %s" % (t, doc["versions"][t]) for t in VERSIONS if (doc.get("versions") or {}).get(t))
    rev = " at `%s`" % doc["revision"] if doc.get("revision") else ""
    if doc.get("source") == "transcribed":
        head = "Transcribed from an earlier write-up (measured%s; %s)" % (rev, doc.get("note", "same method"))
    else:
        head = "Measured%s" % rev
    line = "*%s with `%s`: %s%s.*" % (head, doc["command"], machine, "; " + versions if versions else "")
    if not doc.get("complete", True):
        line += " **Incomplete run: %s.**" % doc.get("error", "see its log")
    return line


def render(doc):
    kind = doc["kind"]
    if kind not in RENDERERS:
        raise SystemExit("no renderer for results of kind %r" % kind)
    try:
        body = RENDERERS[kind](doc)
    except (KeyError, IndexError, TypeError, ZeroDivisionError):
        if doc.get("complete", True):
            raise
        body = "(no figures: the run ended before it had them)"
    return provenance(doc) + "\n\n" + body


def render_name(name, results=RESULTS):
    return render(load(Path(results) / ("%s.json" % name)))


def docs_files():
    return [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def blocks(text):
    """(name, current content) of every table block in a document."""
    return [(m.group(2), m.group(3)) for m in BLOCK.finditer(text)]


def rewrite(text, results=RESULTS, missing=None):
    """The document with every block rendered from its JSON; blocks without one stay as they are
    (their names are added to `missing`)."""
    def block(m):
        if not (Path(results) / ("%s.json" % m.group(2))).is_file():
            if missing is not None:
                missing.append(m.group(2))
            return m.group(0)
        return m.group(1) + render_name(m.group(2), results) + "\n" + m.group(4)
    return BLOCK.sub(block, text)


def check(results=RESULTS, files=None):
    """Problems: blocks whose content is not what their JSON renders, and JSON files no
    document shows."""
    problems, shown = [], set()
    for path in files or docs_files():
        text = path.read_text()
        for name, content in blocks(text):
            shown.add(name)
            json_path = Path(results) / ("%s.json" % name)
            if not json_path.is_file():
                problems.append("%s: table %s has no %s" % (relpath(path), name, relpath(json_path)))
            elif content != render_name(name, results) + "\n":
                problems.append("%s: table %s differs from what `bench/bench report %s` renders (run "
                                "`bench/bench report --update`)" % (relpath(path), name, name))
    if files is None:
        for json_path in sorted(Path(results).glob("*.json")):
            if json_path.stem not in shown:
                problems.append("%s is shown by no document" % relpath(json_path))
    return problems


def add_arguments(p):
    p.add_argument("names", nargs="*", metavar="NAME", help="results to render (bench/results/NAME.json)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="verify that the docs' table blocks match the results")
    g.add_argument("--update", action="store_true", help="rewrite the docs' table blocks from the results")
    p.add_argument("--results", default=str(RESULTS), metavar="DIR", help="the results folder (default bench/results)")


def main(args):
    if args.check:
        problems = check(args.results)
        for problem in problems:
            print(problem)
        if problems:
            return 1
        print("every table block in README.md and docs/*.md matches bench/results")
        return 0
    if args.update:
        missing = []
        for path in docs_files():
            text = path.read_text()
            new = rewrite(text, args.results, missing)
            if new != text:
                path.write_text(new)
                print("updated %s" % relpath(path))
        for name in missing:
            print("no results for table %s (%s/%s.json)" % (name, relpath(args.results), name))
        return 1 if missing else 0
    names = args.names or sorted(p.stem for p in Path(args.results).glob("*.json"))
    for i, name in enumerate(names):
        if i:
            print()
        if len(names) > 1:
            print("<!-- bench:table %s -->" % name)
        sys.stdout.write(render_name(name, args.results) + "\n")
        if len(names) > 1:
            print("<!-- /bench:table -->")
    return 0
