"""wrk with one of the peers' Lua scripts, which print one JSON line with the run's figures."""
import json
import re

from .proc import PEERS, Fail, run


def wrk(argv, env, timeout, marker="BENCH_JSON"):
    """Runs wrk (argv: the full command line, e.g. with taskset in front) and returns the JSON
    object its script printed after `marker`."""
    res = run(argv, timeout, env=env, check=False)
    return parse(res.stdout, marker, res.stderr)


def parse(text, marker="BENCH_JSON", stderr=""):
    m = re.search(r"^%s (\{.*\})\s*$" % re.escape(marker), text, re.M)
    if not m:
        raise Fail("wrk printed no result: %s %s" % (text[-500:], stderr[-500:]))
    return json.loads(m.group(1))


def script(name):
    return str(PEERS / name)
