#!/usr/bin/env python3
"""Peers for the soak test (bench/bench soak); loopback only.

    python3 -m bench.peers.soak_peers servers --reset-port R --echo-port E
        R: an HTTP origin that misbehaves. It reads a request head, then by path:
             /before  resets the connection (SO_LINGER 0) without answering
             /mid     sends "200, Content-Length: 65536", 16 KiB of the body, waits 50 ms,
                      then resets the connection
        E: a TCP echo service for CONNECT tunnels. Echoes everything; data ending in
           b"BYE!" makes it echo and then close its side (the origin ends the tunnel).

    python3 -m bench.peers.soak_peers clients --proxy-port P --origin HOST:PORT --reset HOST:PORT
                          --echo HOST:PORT --tunnels N --status FILE --stop FILE
        The soak's hand-written clients, all at once, each kind in its own asyncio tasks:
          slow      keep-alive GETs of 1 MiB with a 4 KiB receive buffer, read 4 KiB at a
                    time with pauses (~1 MiB/s): the whole body must arrive
          vanish    GET of 1 MiB, read 64-256 KiB of it, then close (every other one with
                    a reset); and POSTs announcing 256 KiB that send 8 KiB and close
          resetmid  GET /mid from the resetting origin: the client must see the 200 and a
                    body cut short (or a 502 if the reset won the race): both expected
          postreset POST with a body to /before: the proxy must answer 502 (no retry)
          tunnels   N CONNECT tunnels to the echo service, 64 at a time: CONNECT, echo 1-32
                    KiB, then close by turns: client FIN, client reset, origin closes,
                    client half-close (then the origin closes)
        Everything runs until FILE --stop exists and the N tunnels are done (or --deadline).
        Counts by kind, expected and unexpected, are written to --status as JSON every
        second and at the end.
"""
import argparse
import asyncio
import json
import os
import random
import socket
import struct
import time

MiB = 1 << 20
LINGER0 = struct.pack("ii", 1, 0)


def hostport(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


def reset(writer):
    """Close with a TCP reset (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)
    except OSError:
        pass
    writer.transport.abort() if sock is None else writer.close()


# ---------------------------------------------------------------- servers
async def read_head(reader):
    try:
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
            ConnectionError):
        return None


async def reset_origin(reader, writer):
    try:
        while True:
            head = await read_head(reader)
            if head is None:
                writer.close()
                return
            path = head.split(b" ", 2)[1] if head.count(b" ") >= 2 else b"/"
            if path.endswith(b"/mid"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n"
                             b"Content-Type: application/octet-stream\r\n\r\n" + b"m" * 16384)
                await writer.drain()
                await asyncio.sleep(0.05)
            reset(writer)
            return
    except (ConnectionError, OSError):
        writer.close()


async def echo(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
            if data.endswith(b"BYE!"):
                break
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def servers(args):
    a = await asyncio.start_server(reset_origin, "127.0.0.1", args.reset_port, backlog=1024,
                                   reuse_address=True)
    b = await asyncio.start_server(echo, "127.0.0.1", args.echo_port, backlog=4096,
                                   reuse_address=True)
    async with a, b:
        await asyncio.gather(a.serve_forever(), b.serve_forever())


# ---------------------------------------------------------------- clients
class Counts:
    def __init__(self):
        self.data = {}

    def add(self, client, outcome, expected, n=1):
        key = (client, outcome, expected)
        self.data[key] = self.data.get(key, 0) + n

    def as_list(self):
        return [{"client": c, "outcome": o, "expected": e, "count": n}
                for (c, o, e), n in sorted(self.data.items())]


COUNTS = Counts()
TUNNELS = {"done": 0}
AUTH = b""  # a Proxy-Authorization field line for every request and CONNECT (--proxy-user)


async def open_proxy(args, rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", args.proxy_port))
    return await asyncio.open_connection(sock=sock, limit=1 << 17)


async def response_head(reader):
    """(status, content-length or None, keep-alive) of the next response."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, close = None, False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "connection" and "close" in value.lower():
            close = True
    return status, length, not close


def kind_of(exc):
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, asyncio.IncompleteReadError):
        return "closed early"
    if isinstance(exc, ConnectionResetError):
        return "reset"
    return type(exc).__name__


def get(target, extra=b""):
    host = target.split("/", 3)[2].encode()
    return (b"GET " + target.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\n" + AUTH + extra +
            b"\r\n")


async def slow_reader(args, stop):
    target = "http://%s/1m" % args.origin
    while not stop.is_set():
        try:
            reader, writer = await open_proxy(args, rcvbuf=4096)
        except OSError as e:
            COUNTS.add("slow", "connect: " + kind_of(e), False)
            await asyncio.sleep(0.5)
            continue
        try:
            for _ in range(2):  # two requests per connection (keep-alive)
                writer.write(get(target))
                status, length, keep = await asyncio.wait_for(response_head(reader), 30)
                if status != 200 or length != MiB:
                    COUNTS.add("slow", "status %d length %s" % (status, length), False)
                    break
                got = 0
                while got < length:
                    chunk = await asyncio.wait_for(reader.read(min(4096, length - got)), 30)
                    if not chunk:
                        raise asyncio.IncompleteReadError(b"", length - got)
                    got += len(chunk)
                    await asyncio.sleep(0.004)  # ~1 MiB/s at most
                COUNTS.add("slow", "200, full 1 MiB body read slowly", True)
                if not keep or stop.is_set():
                    break
        except Exception as e:  # noqa: BLE001 - every failure is counted by kind
            COUNTS.add("slow", kind_of(e), False)
        finally:
            writer.close()


async def vanisher(args, stop, n):
    target = "http://%s/1m" % args.origin
    i = n
    while not stop.is_set():
        i += 1
        try:
            reader, writer = await open_proxy(args)
        except OSError as e:
            COUNTS.add("vanish", "connect: " + kind_of(e), False)
            await asyncio.sleep(0.5)
            continue
        try:
            if i % 4 == 0:
                # vanish mid-request: announce 256 KiB of body, send 8 KiB, leave
                host = args.origin.encode()
                writer.write(b"POST http://" + host + b"/echo HTTP/1.1\r\nHost: " + host +
                             b"\r\n" + AUTH + b"Content-Length: 262144\r\n\r\n" + b"v" * 8192)
                await writer.drain()
                await asyncio.sleep(random.uniform(0, 0.05))
                COUNTS.add("vanish", "left mid-request body", True)
            else:
                writer.write(get(target))
                status, length, _ = await asyncio.wait_for(response_head(reader), 30)
                if status != 200:
                    COUNTS.add("vanish", "status %d" % status, False)
                    continue
                want = random.randint(64, 256) * 1024
                got = 0
                while got < want:
                    chunk = await asyncio.wait_for(reader.read(65536), 30)
                    if not chunk:
                        raise asyncio.IncompleteReadError(b"", want - got)
                    got += len(chunk)
                COUNTS.add("vanish", "left mid-response (%s)" % ("reset" if i % 2 else "close"),
                           True)
        except Exception as e:  # noqa: BLE001
            COUNTS.add("vanish", kind_of(e), False)
        finally:
            if i % 2:
                reset(writer)
            else:
                writer.close()


async def reset_mid(args, stop):
    target = "http://%s/mid" % args.reset
    while not stop.is_set():
        try:
            reader, writer = await open_proxy(args)
        except OSError as e:
            COUNTS.add("resetmid", "connect: " + kind_of(e), False)
            await asyncio.sleep(0.5)
            continue
        try:
            writer.write(get(target))
            status, length, _ = await asyncio.wait_for(response_head(reader), 30)
            if status == 502:
                await asyncio.wait_for(reader.read(), 30)
                COUNTS.add("resetmid", "502 (origin reset before the proxy relayed the head)",
                           True)
                continue
            if status != 200:
                COUNTS.add("resetmid", "status %d" % status, False)
                continue
            got = 0
            while True:
                try:
                    chunk = await asyncio.wait_for(reader.read(65536), 30)
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    break
                got += len(chunk)
            if got < length:
                COUNTS.add("resetmid", "200, body cut short (origin reset mid-body)", True)
            else:
                COUNTS.add("resetmid", "200 with a complete body (impossible)", False)
        except Exception as e:  # noqa: BLE001
            COUNTS.add("resetmid", kind_of(e), False)
        finally:
            writer.close()


async def post_reset(args, stop):
    host = args.reset.encode()
    body = b"p" * 4096
    req = (b"POST http://" + host + b"/before HTTP/1.1\r\nHost: " + host +
           b"\r\n" + AUTH + b"Content-Length: 4096\r\n\r\n" + body)
    while not stop.is_set():
        try:
            reader, writer = await open_proxy(args)
        except OSError as e:
            COUNTS.add("postreset", "connect: " + kind_of(e), False)
            await asyncio.sleep(0.5)
            continue
        try:
            writer.write(req)
            status, _, _ = await asyncio.wait_for(response_head(reader), 30)
            if status == 502:
                COUNTS.add("postreset", "502 (origin reset, POST not retried)", True)
            else:
                COUNTS.add("postreset", "status %d" % status, False)
        except Exception as e:  # noqa: BLE001
            COUNTS.add("postreset", kind_of(e), False)
        finally:
            writer.close()


async def tunnel(args, i):
    modes = ("client FIN", "client reset", "origin closes", "client half-close")
    mode = modes[i % 4]
    target = args.echo if i % 2 else "127.0.0.1:%d" % hostport(args.echo)[1]
    try:
        reader, writer = await open_proxy(args)
    except OSError as e:
        COUNTS.add("tunnel", "connect: " + kind_of(e), False)
        return
    try:
        writer.write(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n" % (target, target)).encode() + AUTH +
                     b"\r\n")
        status, _, _ = await asyncio.wait_for(response_head(reader), 30)
        if status != 200:
            COUNTS.add("tunnel", "CONNECT status %d" % status, False)
            return
        size = random.randint(1, 32) * 1024
        payload = os.urandom(size - 4) + (b"BYE!" if mode == "origin closes" else b"data")
        writer.write(payload)
        if mode == "client half-close":
            writer.write_eof()
        echoed = await asyncio.wait_for(reader.readexactly(size), 30)
        if echoed != payload:
            COUNTS.add("tunnel", "echo mismatch", False)
            return
        await asyncio.sleep(random.uniform(0, 0.05))
        if mode in ("origin closes", "client half-close"):
            rest = await asyncio.wait_for(reader.read(), 30)  # the origin's close must reach us
            if rest:
                COUNTS.add("tunnel", "bytes after the origin closed", False)
                return
        COUNTS.add("tunnel", "opened, echoed, closed (%s)" % mode, True)
    except Exception as e:  # noqa: BLE001
        COUNTS.add("tunnel", mode + ": " + kind_of(e), False)
    finally:
        if mode == "client reset":
            reset(writer)
        else:
            writer.close()
        TUNNELS["done"] += 1


def budget(args):
    """How many tunnels may have been started by now (--tunnel-budget: the soak spreads the
    tunnels over the load that way); no file option means all of them."""
    if not args.tunnel_budget:
        return args.tunnels
    try:
        with open(args.tunnel_budget) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


async def tunnels(args):
    sem = asyncio.Semaphore(args.tunnel_concurrency)

    async def one(i):
        async with sem:
            await tunnel(args, i)
    # in slices, so 20,000 pending coroutines do not all exist at once
    allowed = 0
    for start in range(0, args.tunnels, 1000):
        batch = []
        for i in range(start, min(args.tunnels, start + 1000)):
            while i >= allowed:
                allowed = budget(args)
                if i >= allowed:
                    await asyncio.sleep(0.2)
            batch.append(asyncio.create_task(one(i)))
        await asyncio.gather(*batch)


def write_status(args, final=False):
    tmp = args.status + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"final": final, "tunnels_done": TUNNELS["done"], "tunnels": args.tunnels,
                   "counts": COUNTS.as_list()}, f)
    os.replace(tmp, args.status)


async def clients(args):
    stop = asyncio.Event()
    tasks = []
    tasks += [asyncio.create_task(slow_reader(args, stop)) for _ in range(args.slow)]
    tasks += [asyncio.create_task(vanisher(args, stop, k)) for k in range(args.vanish)]
    tasks += [asyncio.create_task(reset_mid(args, stop)) for _ in range(2)]
    tasks += [asyncio.create_task(post_reset(args, stop)) for _ in range(2)]
    tunnel_task = asyncio.create_task(tunnels(args))
    deadline = time.monotonic() + args.deadline
    while time.monotonic() < deadline:
        write_status(args)
        if os.path.exists(args.stop) and tunnel_task.done():
            break
        await asyncio.sleep(1.0)
    stop.set()
    # the in-flight exchanges finish (each is bounded by its own 30 s timeouts)
    done, pending = await asyncio.wait(tasks + [tunnel_task], timeout=60)
    for t in pending:
        t.cancel()
    for t in done:
        if t.exception() is not None:
            COUNTS.add("harness", "task failed: %r" % t.exception(), False)
    if pending:
        COUNTS.add("harness", "%d client tasks cancelled at the deadline" % len(pending), False)
    write_status(args, final=True)


def main():
    ap = argparse.ArgumentParser(description="soak test peers")
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("servers")
    s.add_argument("--reset-port", type=int, required=True)
    s.add_argument("--echo-port", type=int, required=True)
    c = sub.add_parser("clients")
    c.add_argument("--proxy-port", type=int, required=True)
    c.add_argument("--origin", required=True, help="name:port of the nginx origin")
    c.add_argument("--reset", required=True, help="name:port of the resetting origin")
    c.add_argument("--echo", required=True, help="name:port of the echo service")
    c.add_argument("--tunnels", type=int, default=20000)
    c.add_argument("--tunnel-concurrency", type=int, default=64)
    c.add_argument("--tunnel-budget", default="",
                   help="file holding how many tunnels may have been started so far")
    c.add_argument("--slow", type=int, default=8)
    c.add_argument("--vanish", type=int, default=8)
    c.add_argument("--status", required=True)
    c.add_argument("--stop", required=True)
    c.add_argument("--deadline", type=float, default=3600)
    c.add_argument("--proxy-user", default="", help="USER:PASS sent as Proxy-Authorization")
    args = ap.parse_args()
    global AUTH
    if args.mode == "clients":
        if args.proxy_user:
            import base64
            AUTH = b"Proxy-Authorization: Basic " + base64.b64encode(args.proxy_user.encode()) + b"\r\n"
    if args.mode == "servers":
        asyncio.run(servers(args))
    else:
        asyncio.run(clients(args))


if __name__ == "__main__":
    main()
