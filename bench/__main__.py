"""bench/bench: the benchmark tool (python3 -m bench from the repository root).

Every subcommand that measures writes bench/results/NAME.json (machine, versions, revision,
parameters, figures) and logs in bench/out; `report` renders the tables the docs show from the
JSON. Loopback only (transparent: network namespaces of its own); every load is bounded in time
and count; everything a run starts is stopped when it ends. Not run by CI.
"""
import argparse
import sys

from . import (
    ab,
    allocs,
    compare,
    connect_by_ip,
    dns_listener,
    perf_summary,
    pinned,
    report,
    soak,
    socks,
    tls,
    transparent,
)
from .lib.proc import Fail

COMMANDS = [
    ("run", compare, "HTTP through httpdns-proxy beside direct, tinyproxy, squid and nginx as a keep-alive proxy",
     {}),
    ("tunnels", compare, "CONNECT: 1 GiB through a tunnel and memory per idle tunnel, beside tinyproxy and squid",
     {"tunnels": True}),
    ("ab", ab, "before/after: CPU per request of two binaries (or two flag sets) in one run", {}),
    ("pinned", pinned, "one connection, one core: CPU, system calls and allocations per request", {}),
    ("allocs", allocs, "heap allocations per request of a release build against committed thresholds (--check)",
     {}),
    ("soak", soak, "1,000,000 mixed and hostile requests: no leaked memory or descriptors", {}),
    ("dns", dns_listener, "the DNS listener under dnsperf beside unbound and dnsmasq", {}),
    ("tls", tls, "TLS origination: pooled, resumed and full handshakes", {}),
    ("socks", socks, "SOCKS5: connection setup CPU and 1 GiB through a tunnel, beside microsocks and dante", {}),
    ("connect-by-ip", connect_by_ip, "time to first byte when a name's first address is dead or dropping", {}),
    ("transparent", transparent, "transparent interception: CPU per connection, RSS per idle relay (root)", {}),
    ("report", report, "the docs' tables from bench/results (--check, --update)", {}),
    ("perf-summary", perf_summary, "where the time of a perf profile of the proxy goes", {}),
]


def parser():
    ap = argparse.ArgumentParser(prog="bench/bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module, help_text, options in COMMANDS:
        p = sub.add_parser(name, help=help_text, description=module.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p, **options)
        p.set_defaults(handler=module.main)
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.handler(args)
    except Fail as e:
        sys.stderr.write("bench %s: %s\n" % (args.command, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
