#!/usr/bin/env python3
"""Servers and clients for scripts/transparent-netns-test.sh, run inside the namespaces it makes.

  servers --origin IP --decoy IP --doh IP --banner IP --cert C --key K --log DIR
      origin: HTTP :80 and HTTPS :443 answering "origin <path>" (the right address of origin.test)
      decoy:  the same on the address the app's hijacked /etc/hosts gives, answering "decoy <path>"
      doh:    a DoH JSON resolver (:80, /resolve) answering origin.test with the origin's address;
              each query is appended to DIR/doh.log
      banner: a server-speaks-first service (:2525): sends "220 banner" at once, then echoes
              (also on --banner6 IPV6 when given)
  Each accepted connection is appended to DIR/accepts.log as "<server> <peer>".

  split-hello HOST PORT NAME CAFILE   a TLS client whose ClientHello goes out in three TCP segments,
                                      300 ms apart
  raw HOST PORT MODE RELEASE          bad inputs: big-extension | truncated | garbage | silent;
                                      holds the connection until the peer closes or RELEASE exists
  banner HOST PORT                    reads the banner without sending first

  For bench/bench transparent:
  sink IP PORT                        accepts and holds connections, discarding what they send
  hold HOST PORT NAME COUNT RELEASE   opens COUNT connections, each sending a ClientHello for NAME,
                                      prints "held COUNT", keeps them open until RELEASE exists
"""
import http.server
import json
import os
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time

LOG_DIR = "."


def note(server, peer):
    with open(os.path.join(LOG_DIR, "accepts.log"), "a") as f:
        f.write(f"{server} {peer[0]}\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def page_handler(label):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            note(label, self.client_address)
            super().setup()

        def do_GET(self):
            if self.path.startswith("/resolve"):
                from urllib.parse import parse_qs, urlparse
                query = parse_qs(urlparse(self.path).query)
                name = query.get("name", [""])[0].rstrip(".")
                qtype = int(query.get("type", ["1"])[0])
                with open(os.path.join(LOG_DIR, "doh.log"), "a") as f:
                    f.write(f"{name} {qtype}\n")
                answers = []
                if name == "origin.test" and qtype == 1:
                    answers = [{"name": "origin.test.", "type": 1, "TTL": 300, "data": Handler.origin_ip}]
                body = json.dumps({"Status": 0 if answers or name == "origin.test" else 3, "Answer": answers}).encode()
                ctype = "application/dns-json"
            else:
                body = f"{label} {self.path}\n".encode()
                ctype = "text/plain"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def serve_pages(label, ip, port, origin_ip, context=None):
    handler = page_handler(label)
    handler.origin_ip = origin_ip
    server = Server((ip, port), handler)
    if context:
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def serve_banner(ip, port):
    listener = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((ip, port))
    listener.listen(16)

    def one(conn, peer):
        note("banner", peer)
        with conn:
            conn.sendall(b"220 banner\r\n")
            while data := conn.recv(4096):
                conn.sendall(data)

    def loop():
        while True:
            conn, peer = listener.accept()
            threading.Thread(target=one, args=(conn, peer), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def servers(args):
    global LOG_DIR
    opts = dict(zip(args[0::2], args[1::2], strict=True))
    LOG_DIR = opts["--log"]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(opts["--cert"], opts["--key"])
    origin = opts["--origin"]
    for label, ip in (("origin", origin), ("decoy", opts["--decoy"])):
        serve_pages(label, ip, 80, origin)
        serve_pages(label, ip, 443, origin, context)
    serve_pages("doh", opts["--doh"], 80, origin)
    serve_banner(opts["--banner"], 2525)
    if "--banner6" in opts:
        serve_banner(opts["--banner6"], 2525)
    print("ready", flush=True)
    threading.Event().wait()


def split_hello(host, port, name, cafile):
    context = ssl.create_default_context(cafile=cafile)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    third = len(hello) // 3
    # Three segments 300 ms apart (a slow client or a lossy link): the pacing is the behaviour
    # under test, since the whole hello takes longer than the proxy's peek timeout for a silent client.
    for piece in (hello[:third], hello[third:2 * third], hello[2 * third:]):
        sock.sendall(piece)
        time.sleep(0.3)
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            if data := outgoing.read():
                sock.sendall(data)
            chunk = sock.recv(65536)
            if not chunk:
                raise SystemExit("connection closed during the handshake") from None
            incoming.write(chunk)
    if data := outgoing.read():
        sock.sendall(data)
    tls.write(f"GET /split HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
    sock.sendall(outgoing.read())
    response = b""
    while True:
        try:
            response += tls.read(65536)
        except ssl.SSLWantReadError:
            if data := outgoing.read():
                sock.sendall(data)
            chunk = sock.recv(65536)
            if not chunk:
                break
            incoming.write(chunk)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            break
    print(response.decode(errors="replace").split("\r\n\r\n", 1)[-1].strip())


def raw(host, port, mode, release):
    sock = socket.create_connection((host, int(port)), timeout=20)
    if mode == "big-extension":
        # A ClientHello whose handshake length announces a 70 KB extension block; 16 KiB of it sent.
        body_length = 70_000 + 100
        head = bytes([1]) + struct.pack(">I", body_length)[1:]
        fragment = head + bytes([3, 3]) + bytes(16384 - len(head) - 2)
        sock.sendall(bytes([0x16, 3, 1]) + struct.pack(">H", len(fragment)) + fragment)
    elif mode == "truncated":
        sock.sendall(bytes([0x16, 3, 1, 0x02, 0x00, 1, 0, 1, 0xFC, 3, 3]) + bytes(20))
    elif mode == "garbage":
        sock.sendall(os.urandom(300).replace(b"\x16", b"\x00").lstrip(b"GHPDOT") or b"\x00")
    # silent: sends nothing. Every mode then holds the connection until the far end answers or
    # closes, or the test releases it (polled: the test waits for events, not for time).
    sock.settimeout(0.1)
    outcome = "released"
    deadline = time.monotonic() + 60
    while not os.path.exists(release) and time.monotonic() < deadline:
        try:
            data = sock.recv(4096)
            outcome = "closed" if not data else f"{len(data)} bytes"
            break
        except socket.timeout:
            continue
        except ConnectionResetError:
            outcome = "reset"
            break
    print(f"{mode}: {outcome}", flush=True)
    sock.close()


def banner(host, port):
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
    greeting = sock.recv(4096).decode().strip()
    sock.sendall(b"ping\r\n")
    echoed = sock.recv(4096).decode().strip()
    print(f"{greeting}|{echoed}")
    sock.close()


def sink(ip, port):
    import asyncio

    async def one(reader, writer):
        while await reader.read(65536):
            pass
        writer.close()

    async def main():
        server = await asyncio.start_server(one, ip, int(port), backlog=4096)
        print("ready", flush=True)
        await server.serve_forever()

    asyncio.run(main())


def hold(host, port, name, count, release):
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    held = []
    for _ in range(int(count)):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(hello)
        held.append(sock)
    print(f"held {len(held)}", flush=True)
    while not os.path.exists(release):
        time.sleep(0.1)
    for sock in held:
        sock.close()


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    {"servers": lambda: servers(rest), "split-hello": lambda: split_hello(*rest), "raw": lambda: raw(*rest),
     "banner": lambda: banner(*rest), "sink": lambda: sink(*rest), "hold": lambda: hold(*rest)}[command]()
