#!/usr/bin/env python3
"""A tiny fake HTTPDNS service for the benchmark (loopback only).

Answers DoH-JSON queries the way `--provider json` asks them:

    GET /resolve?name=origin.test&type=1   -> origin.test A 127.0.0.1, TTL 3600
    GET /resolve?name=origin.test&type=28  -> NOERROR, no answer (no AAAA)
    any other name                         -> NXDOMAIN (Status 3)

More names can be added with --name NAME=IP (repeatable). GET /stats returns the
number of queries answered, so a harness can tell cached lookups from cold ones.
Only binds to loopback addresses.
"""
import argparse
import ipaddress
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

QUERIES = {"total": 0, "by_name": {}}
LOCK = threading.Lock()


def make_handler(records, ttl):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # keep quiet
            pass

        def _send(self, status, body, ctype="application/json"):
            data = json.dumps(body, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urlsplit(self.path)
            if url.path == "/stats":
                with LOCK:
                    self._send(200, QUERIES)
                return
            if url.path not in ("/resolve", "/dns-query"):
                self._send(404, {"error": "not found"})
                return
            query = parse_qs(url.query)
            name = (query.get("name") or query.get("dn") or [""])[0].rstrip(".").lower()
            qtype = (query.get("type") or ["1"])[0]
            qtype = {"A": "1", "AAAA": "28"}.get(qtype.upper(), qtype)
            with LOCK:
                QUERIES["total"] += 1
                QUERIES["by_name"][name] = QUERIES["by_name"].get(name, 0) + 1
            question = [{"name": name + ".", "type": int(qtype) if qtype.isdigit() else 1}]
            if name not in records:
                self._send(200, {"Status": 3, "TC": False, "RD": True, "RA": True,
                                 "AD": False, "CD": False, "Question": question})
                return
            answers = []
            for ip in records[name]:
                rtype = 1 if ip.version == 4 else 28
                if str(rtype) == qtype:
                    answers.append({"name": name + ".", "type": rtype, "TTL": ttl,
                                    "data": str(ip)})
            body = {"Status": 0, "TC": False, "RD": True, "RA": True, "AD": False,
                    "CD": False, "Question": question}
            if answers:
                body["Answer"] = answers
            self._send(200, body)

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ttl", type=int, default=3600)
    ap.add_argument("--name", action="append", default=[],
                    help="NAME=IP record to serve (default origin.test=127.0.0.1)")
    args = ap.parse_args()
    if not ipaddress.ip_address(args.listen).is_loopback:
        sys.exit("fake_httpdns: refusing to listen on a non-loopback address")
    records = {"origin.test": [ipaddress.ip_address("127.0.0.1")]}
    for item in args.name:
        name, _, ip = item.partition("=")
        records.setdefault(name.lower().rstrip("."), []).append(ipaddress.ip_address(ip))
    server = ThreadingHTTPServer((args.listen, args.port), make_handler(records, args.ttl))
    server.daemon_threads = True
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
