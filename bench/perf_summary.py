"""Summarise a `perf record -g` profile of httpdns-proxy by where the time goes.

    bench/bench perf-summary PERF_DATA     (runs perf script, demangles with `swift demangle`)

`bench/bench run --profile` writes one for each profile it records.

Each sample is put in one bucket: kernel samples by the system call that led there, user samples
by the first matching frame of their call stack (buckets are tried in order, so an inner concern
such as timers wins over the HTTP decoder that called it). Prints percentages of all samples,
then the hottest leaf functions in user space.
"""
import collections
import re
import shutil
import subprocess

USER_BUCKETS = [
    ("timers: schedule/cancel per request", ["scheduleTask", "Scheduled.cancel", "ScheduledTask",
                                             "_prepareToSchedule", "armResponseTimer", "becameIdle",
                                             "requestStarted", "cancelTimer", "IdleStateHandler"]),
    ("URI parsing (RequestTarget)", ["RequestTarget.parse"]),
    ("header rewriting (MessageRewriter)", ["MessageRewriter"]),
    ("upstream pool take/put", ["UpstreamPool"]),
    ("resolver (cache hit path)", ["Resolver.resolve", "CachingResolver", "DNSCache"]),
    ("HTTP encoders", ["HTTPRequestEncoder", "HTTPResponseEncoder", "writeHead"]),
    ("tunnel glue", ["GlueHandler"]),
    ("HTTP decoding + handler logic called from it", ["llhttp", "BetterHTTPParser", "HTTPDecoder"]),
    ("receive buffer allocation", ["RecvBufferAllocator", "RecvByteBufferAllocator"]),
    ("socket write path", ["PendingWritesManager", "flush0", "flushNow", "writeToSocket"]),
    ("socket read path", ["readFromSocket"]),
    ("event loop", ["SelectableEventLoop", "Selector"]),
]


def frames_of(sample):
    lines = [line.strip() for line in sample.strip().split("\n")]
    return lines[0] if lines else "", lines[1:]


def symbol(frame):
    frame = re.sub(r"^[0-9a-f]+ ", "", frame)
    return re.sub(r"\+0x[0-9a-f]+", "", frame.rsplit(" (", 1)[0])


def summarize(perf_data):
    """The summary of one perf.data file, as text."""
    script = subprocess.run(["perf", "script", "-i", str(perf_data)], capture_output=True, text=True,
                            timeout=600).stdout
    if shutil.which("swift"):
        dm = subprocess.run(["swift", "demangle", "--simplified"], input=script,
                            capture_output=True, text=True, timeout=600)
        if dm.returncode == 0:
            script = dm.stdout
    buckets = collections.Counter()
    leaves = collections.Counter()
    total = kernel = 0
    for sample in script.split("\n\n"):
        _, frames = frames_of(sample)
        if not frames:
            continue
        total += 1
        if "[kernel.kallsyms]" in frames[0]:
            kernel += 1
            user = next((symbol(f) for f in frames if "kernel.kallsyms" not in f), "")
            if "writev" in user or "write" in user or "send" in user:
                what = "write/writev"
            elif "read" in user or "recv" in user:
                what = "read"
            elif "epoll" in user:
                what = "epoll_wait (sleep/wake-up)"
            elif user:
                what = "other system calls"
            else:
                what = "interrupts, no user frame"
            buckets["kernel: " + what] += 1
            continue
        syms = [symbol(f) for f in frames]
        leaves[syms[0][:100]] += 1
        for name, patterns in USER_BUCKETS:
            if any(any(p in s for p in patterns) for s in syms):
                buckets["user: " + name] += 1
                break
        else:
            buckets["user: other"] += 1
    if not total:
        return "no samples\n"
    out = ["%d samples, %.1f %% in the kernel" % (total, 100 * kernel / total), ""]
    for name, n in buckets.most_common():
        out.append("%5.1f %%  %s" % (100 * n / total, name))
    out += ["", "hottest user-space leaf functions:"]
    for name, n in leaves.most_common(25):
        out.append("%5.1f %%  %s" % (100 * n / total, name))
    return "\n".join(out) + "\n"


def add_arguments(p):
    p.add_argument("perf_data", metavar="PERF_DATA", help="a perf.data file of `perf record -g -p PID`")


def main(args):
    print(summarize(args.perf_data), end="")
    return 0
