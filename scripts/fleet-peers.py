#!/usr/bin/env python3
"""The fake vendor and the client of scripts/fleet-netns-test.sh, run inside the namespaces it makes.

  vendor --bind IP [--port 8000]
      A fake HTTPDNS vendor speaking the DoH JSON form the proxy's `json` provider asks
      (GET /resolve?name=NAME&type=1). It knows n00.fleet.test ... n49.fleet.test, whose A record
      is 198.18.0.(N+1) with a TTL of 300 s; every other name is NXDOMAIN.
      GET /count: the /resolve queries answered so far; GET /auth: how many of them carried an
      Authorization header (the pods' fallback provider must never send the node tier's token).

  ask IP:PORT...
      Asks each pod proxy's DNS listener for the A record of the 50 names over UDP (dnspython)
      and prints how many answers were right (198.18.0.(N+1) and nothing else) and how many were
      not, e.g. "1000 0"; wrong ones are described on stderr. The caller judges the counts.

  ask-one IP:PORT NAME
      One A query for NAME (one of the 50) to one pod; prints the milliseconds it took and "good"
      or "bad", e.g. "12 good".

  dns-stub --bind IP
      Stands in for the pods' system resolver (their resolv.conf names it): answers every query
      over UDP with REFUSED and prints its name on stdout, so the test can say that no pod ever
      asked system DNS.
"""
import argparse
import http.server
import json
import re
import socket
import sys
import threading
import urllib.parse

NAMES = 50
NAME = re.compile(r"^n([0-9]{2})\.fleet\.test\.?$")
lock = threading.Lock()
counts = {"queries": 0, "authorized": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Head and body are two writes: without this, Nagle holds the body until the client's
        # delayed ACK (~40 ms a query).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def reply(self, status, body, content_type="application/dns-json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path in ("/count", "/auth"):
            with lock:
                value = counts["queries" if url.path == "/count" else "authorized"]
            self.reply(200, f"{value}\n", "text/plain")
            return
        if url.path != "/resolve":
            self.reply(404, "not found\n", "text/plain")
            return
        query = urllib.parse.parse_qs(url.query)
        name = query.get("name", [""])[0].lower()
        qtype = int(query.get("type", ["1"])[0])
        with lock:
            counts["queries"] += 1
            if self.headers.get("Authorization"):
                counts["authorized"] += 1
        question = {"name": name.rstrip(".") + ".", "type": qtype}
        match = NAME.match(name)
        if not match:
            self.reply(200, json.dumps({"Status": 3, "Question": question}))
            return
        answers = []
        if qtype == 1:
            answers.append({"name": question["name"], "type": 1, "TTL": 300, "data": f"198.18.0.{int(match[1]) + 1}"})
        self.reply(200, json.dumps({"Status": 0, "Question": question, "Answer": answers}))

    def log_message(self, *args):
        pass


def ask(targets):
    import dns.message  # only the client needs dnspython
    import dns.query

    good = bad = 0
    for target in targets:
        host, port = target.rsplit(":", 1)
        for i in range(NAMES):
            name = f"n{i:02d}.fleet.test"
            try:
                reply = dns.query.udp(dns.message.make_query(name, "A"), host, port=int(port), timeout=5)
                addresses = [str(item) for rrset in reply.answer for item in rrset]
            except Exception as error:  # a timeout or a malformed reply counts as a wrong answer
                print(f"{target} {name}: {error!r}", file=sys.stderr)
                addresses = None
            if addresses == [f"198.18.0.{i + 1}"]:
                good += 1
            else:
                bad += 1
                if addresses is not None:
                    print(f"{target} {name}: {addresses}", file=sys.stderr)
    print(good, bad)


def ask_one(target, name):
    import time

    import dns.message
    import dns.query

    host, port = target.rsplit(":", 1)
    index = int(NAME.match(name)[1])
    started = time.monotonic()
    try:
        reply = dns.query.udp(dns.message.make_query(name, "A"), host, port=int(port), timeout=10)
        addresses = [str(item) for rrset in reply.answer for item in rrset]
    except Exception as error:
        print(f"{target} {name}: {error!r}", file=sys.stderr)
        addresses = None
    elapsed = int((time.monotonic() - started) * 1000)
    print(elapsed, "good" if addresses == [f"198.18.0.{index + 1}"] else "bad")


def dns_stub(bind):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((bind, 53))
    print("listening", flush=True)
    while True:
        data, peer = sock.recvfrom(4096)
        if len(data) < 12:
            continue
        # The question name, label by label, for the log.
        labels, offset = [], 12
        while offset < len(data) and data[offset] != 0 and len(labels) < 64:
            length = data[offset]
            labels.append(data[offset + 1:offset + 1 + length].decode("ascii", "replace"))
            offset += 1 + length
        print("query", ".".join(labels), "from", peer[0], flush=True)
        # Same id and question, QR set, RCODE 5 (REFUSED), no records.
        flags = bytes([0x80 | (data[2] & 0x79), 0x05])
        sock.sendto(data[:2] + flags + data[4:6] + b"\0\0\0\0\0\0" + data[12:offset + 5], peer)


def vendor(bind, port):
    server = http.server.ThreadingHTTPServer((bind, port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("vendor")
    serve.add_argument("--bind", required=True)
    serve.add_argument("--port", type=int, default=8000)
    client = commands.add_parser("ask")
    client.add_argument("targets", nargs="+")
    one = commands.add_parser("ask-one")
    one.add_argument("target")
    one.add_argument("name")
    stub = commands.add_parser("dns-stub")
    stub.add_argument("--bind", required=True)
    args = parser.parse_args()
    if args.command == "vendor":
        vendor(args.bind, args.port)
    elif args.command == "ask-one":
        ask_one(args.target, args.name)
    elif args.command == "dns-stub":
        dns_stub(args.bind)
    else:
        ask(args.targets)


if __name__ == "__main__":
    main()
