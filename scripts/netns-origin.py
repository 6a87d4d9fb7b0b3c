#!/usr/bin/env python3
"""A tiny HTTP origin for scripts/netns-test.sh and scripts/container-smoke.sh, run inside the
origin network namespace those scripts create.

GET /hello  -> 200 "hello from origin\n" and the request's Via header echoed in X-Seen-Via.
GET /slow   -> 200 with Content-Length 2*CHUNK: the first half at once, the second half only
               after the file given by --release exists (polled, at most 30 s), so a test can
               hold a response in flight across a SIGTERM without sleeping for time to pass.
"""
import argparse
import http.server
import os
import socketserver
import time

CHUNK = 64 * 1024


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    release = None

    def do_GET(self):
        if self.path == "/hello":
            body = b"hello from origin\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Seen-Via", self.headers.get("Via", "-"))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(2 * CHUNK))
            self.end_headers()
            self.wfile.write(b"a" * CHUNK)
            self.wfile.flush()
            deadline = time.monotonic() + 30
            while not os.path.exists(self.release) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.wfile.write(b"b" * CHUNK)
        else:
            self.send_error(404)

    def log_message(self, fmt, *args):
        print("origin: " + fmt % args, flush=True)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self):
        # HTTPServer's own server_bind asks DNS for the bound address's name (getfqdn): nothing
        # in these namespaces answers, and no query should leave them.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bind", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--release", required=True)
    args = parser.parse_args()
    Handler.release = args.release
    server = Server((args.bind, args.port), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
