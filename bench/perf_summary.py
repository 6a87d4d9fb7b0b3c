"""Summarise a `perf record -g` profile of httpdns-proxy by where the time goes.

    bench/bench perf-summary PERF_DATA     (runs perf script, demangles with `swift demangle`)

`bench/bench run --profile` writes one for each profile it records (`--profile-stacks dwarf` for
user-space stacks that survive frame-pointer-less libraries).

Each sample is put in one bucket: kernel samples by the system call that led there (the access
log's write apart), user samples by the innermost frame of their call stack that belongs to a
bucket, so work is charged to the part of the forward path doing it rather than to the decoder or
event loop that called it (the request intake runs inside the client decoder's read event, for
instance). Prints percentages of all samples, then the hottest leaf functions in user space.
"""
import collections
import re
import shutil
import subprocess

# Parts of the forward path, by the symbols of their code. A frame matching several buckets goes to
# the first listed.
USER_BUCKETS = [
    ("access log: formatting and buffering", ["AccessLogWriter", "LineBuffer", "JSONLine", "AccessLogRecord.append"]),
    ("metrics, traffic tally, histograms", ["ProxyMetrics", "TrafficRecorder", "Histogram",
                                            "ProxyEnvironment.finished"]),
    ("timers: schedule/cancel", ["scheduleTask", "Scheduled.cancel", "ScheduledTask", "_prepareToSchedule"]),
    ("resolver (cache hit path)", ["Resolver.resolve", "CachingResolver", "DNSCache"]),
    ("HTTP/1 codec: head parsing", ["HeadParser", "MessageDecoder", "ClientRequestReader", "UpstreamResponseReader"]),
    ("heads written (HeadWriter, relayed/outgoing heads)", ["HeadWriter", "RelayedHead", "ClientResponseWriter",
                                                            "RequestHead.forOrigin", "sendHead", "writeHead"]),
    ("request intake: target, route, request id, checks", ["RequestIntake", "RequestTarget", "UpstreamRoute",
                                                            "RequestHead"]),
    ("upstream pool take/put", ["UpstreamPool"]),
    ("state machines (connection, exchange) and their values", ["ExchangeStateMachine", "ClientConnectionStateMachine",
                                                                "ClientConnectionState", "ResponseHead"]),
    ("channel handlers running actions", ["ClientConnectionHandler", "UpstreamHTTPConnection"]),
    ("NIO ByteToMessageHandler (decoder plumbing)", ["ByteToMessageHandler"]),
    ("NIO socket write path", ["PendingWritesManager", "PendingStreamWrites", "flush0", "flushNow", "writeToSocket"]),
    ("NIO socket read path and pipeline", ["readFromSocket", "ChannelPipeline", "ChannelHandlerContext",
                                           "BaseSocketChannel"]),
    ("NIO event loop", ["SelectableEventLoop", "Selector"]),
]


def bucket_of(symbols):
    """The bucket of a user-space sample: its innermost frame that matches one."""
    for sym in symbols:
        for name, patterns in USER_BUCKETS:
            if any(p in sym for p in patterns):
                return name
    return "other"


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
    return summarize_script(script)


def summarize_script(script):
    """The summary of `perf script` output (demangled), as text."""
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
            users = [symbol(f) for f in frames if "kernel.kallsyms" not in f]
            user = users[0] if users else ""
            if any("AccessLogWriter" in u for u in users):
                what = "write (the access log)"
            elif "writev" in user or "write" in user or "send" in user:
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
        buckets["user: " + bucket_of(syms)] += 1
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
