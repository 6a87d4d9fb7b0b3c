#!/usr/bin/env python3
"""Idle-tunnel memory helpers for bench/bench tunnels (loopback only).

    python3 -m bench.peers.idle_tunnels server --port P --status FILE
        Accepts TCP connections and holds them open; echoes whatever it receives.
        Writes the number of open connections to FILE (JSON) twice a second.

    python3 -m bench.peers.idle_tunnels client --proxy-port P --target 127.0.0.1:Q -n N [--concurrency C]
        Opens N CONNECT tunnels through the proxy at 127.0.0.1:P and keeps all
        client sockets open. Driven over stdin/stdout, one JSON line per phase:
          prints {"phase":"open", ok, failed, errors, seconds}  (all tunnels tried)
          then reads commands on stdin, one per line, and answers each with a line:
            check     one byte through every tunnel and back ({"phase":"check", ok, failed})
            burst N   N bytes through every tunnel and back ({"phase":"burst", ...})
            close     (or EOF) closes everything, prints {"phase":"closed"} and exits.
        A hard deadline (--deadline, seconds) ends the client whatever happens.
"""
import argparse
import asyncio
import ipaddress
import json
import os
import sys
import time


def loopback_only(host):
    if not ipaddress.ip_address(host).is_loopback:
        sys.exit("idle_tunnels: refusing a non-loopback address: " + host)


# ---------------------------------------------------------------- server
class Hold(asyncio.Protocol):
    live = 0
    total = 0

    def connection_made(self, transport):
        self.transport = transport
        Hold.live += 1
        Hold.total += 1

    def data_received(self, data):
        self.transport.write(data)

    def connection_lost(self, exc):
        Hold.live -= 1


async def serve(args):
    loop = asyncio.get_running_loop()
    await loop.create_server(Hold, args.host, args.port, backlog=4096, reuse_address=True)
    last = None
    while True:
        state = (Hold.live, Hold.total)
        if state != last:
            tmp = args.status + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"live": Hold.live, "total": Hold.total}, f)
            os.replace(tmp, args.status)
            last = state
        await asyncio.sleep(0.5)


# ---------------------------------------------------------------- client
class Tunnel(asyncio.Protocol):
    def __init__(self):
        self.buf = b""
        self.head = asyncio.get_running_loop().create_future()
        self.received = 0  # tunnel payload bytes after the CONNECT response head
        self.waiter = None  # (byte count, future)
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if not self.head.done():
            self.buf += data
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            self.head.set_result(self.buf[:end].decode("latin-1"))
            data = self.buf[end + 4:]
            self.buf = b""
        self.received += len(data)
        self._wake()

    def _wake(self):
        if self.waiter and self.received >= self.waiter[0] and not self.waiter[1].done():
            self.waiter[1].set_result(True)

    def wait_for_bytes(self, total):
        """A future done once `total` payload bytes in all have come back."""
        self.waiter = (total, asyncio.get_running_loop().create_future())
        self._wake()
        return self.waiter[1]

    def connection_lost(self, exc):
        err = ConnectionError("closed by peer" if exc is None else str(exc))
        if not self.head.done():
            self.head.set_exception(err)
        if self.waiter and not self.waiter[1].done():
            self.waiter[1].set_exception(err)


async def read_line():
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def client(args):
    loop = asyncio.get_running_loop()
    target = args.target
    request = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode()
    sem = asyncio.Semaphore(args.concurrency)
    tunnels = []
    errors = {}

    def fail(kind):
        errors[kind] = errors.get(kind, 0) + 1

    async def open_one():
        async with sem:
            try:
                _, proto = await asyncio.wait_for(
                    loop.create_connection(Tunnel, "127.0.0.1", args.proxy_port), args.timeout)
            except Exception as e:  # noqa: BLE001 - every failure is counted by kind
                fail("connect: " + type(e).__name__)
                return
            proto.transport.write(request)
            try:
                head = await asyncio.wait_for(asyncio.shield(proto.head), args.timeout)
            except Exception as e:  # noqa: BLE001
                fail("response: " + (type(e).__name__ if not str(e) else str(e)))
                proto.transport.abort()
                return
            status = head.split("\r\n", 1)[0].split(" ")
            if len(status) < 2 or status[1] != "200":
                fail("status " + " ".join(status[1:2]))
                proto.transport.abort()
                return
            tunnels.append(proto)

    start = time.monotonic()
    await asyncio.gather(*(open_one() for _ in range(args.n)))
    emit({"phase": "open", "ok": len(tunnels), "failed": args.n - len(tunnels),
          "errors": errors, "seconds": round(time.monotonic() - start, 3)})

    # Commands: "check" (1 byte each way through every tunnel), "burst N" (N bytes each way
    # through every tunnel, at most --concurrency tunnels busy at once), "close".
    sent = {id(p): 0 for p in tunnels}
    while True:
        words = (await read_line()).split()
        if not words or words[0] == "close":
            break
        size = 1 if words[0] == "check" else int(words[1])
        payload = b"p" * size
        busy = asyncio.Semaphore(args.concurrency if words[0] == "burst" else len(tunnels) or 1)

        async def exchange(proto, busy=busy, size=size, payload=payload):
            async with busy:
                sent[id(proto)] += size
                proto.transport.write(payload)
                try:
                    await asyncio.wait_for(proto.wait_for_bytes(sent[id(proto)]), args.timeout)
                    return True
                except Exception:  # noqa: BLE001
                    return False
        start = time.monotonic()
        results = await asyncio.gather(*(exchange(p) for p in tunnels))
        good = sum(1 for r in results if r)
        emit({"phase": words[0], "bytes": size, "ok": good, "failed": len(tunnels) - good,
              "seconds": round(time.monotonic() - start, 3)})
    for proto in tunnels:
        proto.transport.abort()
    emit({"phase": "closed"})


def main():
    ap = argparse.ArgumentParser(description="idle CONNECT tunnel helpers")
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("server")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--status", required=True)
    c = sub.add_parser("client")
    c.add_argument("--proxy-port", type=int, required=True)
    c.add_argument("--target", required=True, help="host:port to CONNECT to (loopback)")
    c.add_argument("-n", type=int, default=9000)
    c.add_argument("--concurrency", type=int, default=64)
    c.add_argument("--timeout", type=float, default=15.0)
    c.add_argument("--deadline", type=float, default=300.0)
    args = ap.parse_args()
    if args.mode == "server":
        loopback_only(args.host)
        asyncio.run(serve(args))
    else:
        loopback_only(args.target.rsplit(":", 1)[0].strip("[]"))
        async def bounded():
            try:
                await asyncio.wait_for(client(args), args.deadline)
            except asyncio.TimeoutError:
                emit({"phase": "deadline", "error": "client deadline reached"})
        asyncio.run(bounded())
        os._exit(0)  # the stdin reader thread may still block; exit now


if __name__ == "__main__":
    main()
