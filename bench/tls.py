"""What TLS origination costs, and what the upstream pool and session resumption save.
Loopback only, bounded in time.

Starts nginx as an HTTPS origin on 127.0.0.1 (certificate with an IP SAN, issued by a CA made
here with the openssl CLI) and the release httpdns-proxy, then drives absolute-form
`GET https://127.0.0.1:PORT/1k` through the proxy with wrk:

  pooled      keep-alive upstream TLS connections (default pool)
  new+resume  --pool-max-idle 0: a new upstream TLS connection per request, session resumed
  new+full    --pool-max-idle 0 against a server with resumption off: a full handshake each time
  plain       absolute-form http:// through the pool, for reference

(each `--repeat` times, the median run reported),
and, for the handshake time, a sequential run (wrk -c1) per server with the access log in a
file: the median and p90 of `tls_ms` of resumed and of full handshakes.
"""
import json
import os
import statistics

from .lib.proc import Fail, Processes, free_port, log, run, session
from .lib.results import Run, add_output_arguments
from .lib.tools import add_binary_arguments, proxy_binary, require_tools
from .lib.wrk import script, wrk


def make_certificates(d):
    ext = d / "leaf.ext"
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"),
         "-days", "2", "-subj", "/CN=tls-bench CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"], 30)
    run(["openssl", "req", *ec, "-keyout", str(d / "leaf.key"), "-out", str(d / "leaf.csr"),
         "-subj", "/CN=127.0.0.1"], 30)
    run(["openssl", "x509", "-req", "-in", str(d / "leaf.csr"), "-CA", str(d / "ca.pem"),
         "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", str(ext),
         "-out", str(d / "leaf.pem")], 30)


def start_nginx(procs, d, ports):
    """nginx as the HTTPS origin: resumable TLS, TLS without resumption, and plain HTTP."""
    body = "x" * 1024
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    servers = ""
    for name, tls, resume in (("resume", True, True), ("full", True, False), ("plain", False, False)):
        if tls:
            resumption = ("ssl_session_tickets on; ssl_session_cache shared:%s:1m;" % name) if resume \
                else "ssl_session_tickets off; ssl_session_cache off;"
            listen = "listen 127.0.0.1:%d ssl; ssl_certificate %s; ssl_certificate_key %s; " \
                     "ssl_protocols TLSv1.2 TLSv1.3; %s" % (ports[name], d / "leaf.pem", d / "leaf.key", resumption)
        else:
            listen = "listen 127.0.0.1:%d;" % ports[name]
        servers += "server { %s keepalive_requests 1000000; location = /1k { return 200 \"%s\"; } }\n" % (listen, body)
    (d / "nginx.conf").write_text(
        "%sworker_processes 1;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/error.log warn;\n"
        "events { worker_connections 4096; }\nhttp { access_log off; %s}\n" % (user, d, d, servers))
    os.chmod(d, 0o755)
    procs.start("nginx", ["nginx", "-p", d, "-e", d / "error.log", "-c", d / "nginx.conf"], d / "nginx.log")
    for name in ports:
        procs.wait_port("nginx", ports[name])


def start_proxy(procs, binary, d, tag, extra):
    port, admin = free_port(), free_port()
    access = d / ("access-%s.log" % tag)
    argv = [binary, "--listen", "127.0.0.1:%d" % port, "--admin-listen", "127.0.0.1:%d" % admin,
            "--provider", "system", "--allow-destination", "127.0.0.0/8", "--ca-file", str(d / "ca.pem"),
            "--log-level", "warning", "--threads", "1"] + extra
    argv += ["--access-log", str(access)] if "--access-log" not in extra else []
    name = "proxy-" + tag
    procs.start(name, argv, d / ("%s.log" % name))
    procs.wait_port(name, port)
    return name, port, access


def load(port, target, host, duration, connections):
    data = wrk(["wrk", "-t1", "-c%d" % connections, "-d%ds" % duration, "--timeout", "5s",
                "-s", script("tls_request.lua"), "http://127.0.0.1:%d" % port],
               {"BENCH_TARGET": target, "BENCH_HOST": host}, duration + 30)
    data["rps"] = round(data["requests"] / (data["duration_us"] / 1e6), 1)
    if data["errors"] or data["status_errors"]:
        raise Fail("wrk saw errors: %s" % data)
    return data


def tls_times(access, resumed):
    values = []
    for line in access.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("status") == 200 and entry.get("tls_resumed") is resumed and entry.get("tls_ms") is not None:
            values.append(entry["tls_ms"])
    if not values:
        raise Fail("no %s handshakes in %s" % ("resumed" if resumed else "full", access))
    values.sort()
    return {"count": len(values), "p50_ms": statistics.median(values),
            "p90_ms": values[int(0.9 * (len(values) - 1))]}


RUNS = [
    ("pooled", [], "resume", "https"),
    ("new+resume", ["--pool-max-idle", "0"], "resume", "https"),
    ("new+full", ["--pool-max-idle", "0"], "full", "https"),
    ("plain", [], "plain", "http"),
]
LABELS = {
    "pooled": "`https://`, pooled upstream TLS (keep-alive)",
    "new+resume": "`https://`, pool off: new TLS connection per request, resumed",
    "new+full": "`https://`, pool off: new TLS connection per request, full handshake",
    "plain": "`http://`, pooled (reference)",
}


def add_arguments(parser):
    parser.add_argument("--duration", type=int, default=5, help="seconds per throughput run (default 5)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    parser.add_argument("--repeat", type=int, default=1, help="throughput runs per case; the median is reported "
                        "(default 1)")
    parser.add_argument("--handshake-seconds", type=int, default=3, help="length of each sequential run (default 3)")
    add_binary_arguments(parser)
    add_output_arguments(parser, "tls")


def main(args):
    require_tools(["nginx", "wrk", "openssl"], services=["nginx"])
    binary, revision = proxy_binary(args)
    record = Run(args, "tls", ["nginx", "wrk", "openssl"])
    record.doc["revision"] = revision
    record.doc["parameters"] = {"duration": args.duration, "connections": args.connections, "repeat": args.repeat,
                                "handshake_seconds": args.handshake_seconds}
    complete, error = False, None
    with session(args.max_seconds, "httpdns-tls-") as d:
        procs = Processes(d)
        try:
            record.results.update(measure(args, binary, d, procs))
            complete = True
        except Fail as e:
            log("FAILED: %s" % e)
            error = str(e)
        finally:
            procs.stop_all()
    record.finish(complete, error)
    from . import report
    print(report.render(record.doc))
    return 0 if complete else 1


def measure(args, binary, d, procs):
    make_certificates(d)
    ports = {"resume": free_port(), "full": free_port(), "plain": free_port()}
    start_nginx(procs, d, ports)
    log("nginx: resumable TLS on %(resume)d, TLS without resumption on %(full)d, plain on %(plain)d" % ports)
    results = {}
    for tag, extra, server, scheme in RUNS:
        proxy, port, _ = start_proxy(procs, binary, d, tag, extra + ["--access-log", "off"])
        host = "127.0.0.1:%d" % ports[server]
        target = "%s://%s/1k" % (scheme, host)
        load(port, target, host, 1, args.connections)  # warm-up
        samples = sorted((load(port, target, host, args.duration, args.connections) for _ in range(args.repeat)),
                         key=lambda r: r["rps"])
        results[tag] = samples[len(samples) // 2]  # the median run
        log("%-10s %8.0f req/s  p50 %d us  p99 %d us" % (tag, results[tag]["rps"], results[tag]["p50_us"],
                                                          results[tag]["p99_us"]))
        procs.stop(proxy)
    handshakes = {}
    for name, resumed in (("resume", True), ("full", False)):
        proxy, port, access = start_proxy(procs, binary, d, "hs-" + name, ["--pool-max-idle", "0"])
        host = "127.0.0.1:%d" % ports[name]
        load(port, "https://%s/1k" % host, host, args.handshake_seconds, 1)
        procs.stop(proxy)
        handshakes[name] = tls_times(access, resumed)
        log("handshake %-6s %s" % (name, handshakes[name]))
    return {"throughput": results, "handshakes": handshakes}


def render(doc):
    r = doc["results"]
    pooled = r["throughput"]["pooled"]["rps"]
    lines = ["| run (%d connections, 1 KiB body) | requests/s | vs pooled | p50 latency |"
             % doc["parameters"]["connections"], "| --- | ---: | ---: | ---: |"]
    for tag, _, _, _ in RUNS:
        t = r["throughput"][tag]
        lines.append("| %s | %s | %.2f | %.2f ms |" % (LABELS[tag], "{:,.0f}".format(t["rps"]), t["rps"] / pooled,
                                                     t["p50_us"] / 1000))
    full, resumed = r["handshakes"]["full"], r["handshakes"]["resume"]
    lines += ["", "| handshake (sequential, pool off) | count | p50 `tls_ms` | p90 `tls_ms` |",
              "| --- | ---: | ---: | ---: |",
              "| full | %s | %.3f ms | %.3f ms |" % ("{:,}".format(full["count"]), full["p50_ms"], full["p90_ms"]),
              "| resumed | %s | %.3f ms | %.3f ms |" % ("{:,}".format(resumed["count"]), resumed["p50_ms"],
                                                      resumed["p90_ms"])]
    return "\n".join(lines)
