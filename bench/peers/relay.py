#!/usr/bin/env python3
"""A minimal CONNECT relay, to see what the tunnel path can reach on this machine (loopback only).

    python3 -m bench.peers.relay --port P --mode copy --chunk 65536
        read/write with a buffer of CHUNK bytes
    python3 -m bench.peers.relay --port P --mode splice --chunk 1048576
        splice(2) socket -> pipe -> socket, no copy through user space

One thread per direction, blocking sockets: no event loop, no framework. `bench/bench tunnels
--scenarios ceiling` runs 1 GiB downloads through it next to direct and httpdns-proxy, so the
effect of the read size and of splice(2) can be compared with the proxy in the same run.
"""
import argparse
import fcntl
import ipaddress
import os
import socket
import threading

F_SETPIPE_SZ = 1031


def pump(src, dst, mode, chunk):
    try:
        if mode == "splice":
            r, w = os.pipe()
            try:
                fcntl.fcntl(w, F_SETPIPE_SZ, chunk)
            except OSError:
                pass
            try:
                while True:
                    n = os.splice(src.fileno(), w, chunk, flags=os.SPLICE_F_MOVE)
                    if n == 0:
                        break
                    while n:
                        n -= os.splice(r, dst.fileno(), n, flags=os.SPLICE_F_MOVE)
            finally:
                os.close(r)
                os.close(w)
        else:
            buf = bytearray(chunk)
            view = memoryview(buf)
            while True:
                n = src.recv_into(buf)
                if n == 0:
                    break
                dst.sendall(view[:n])
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def handle(client, mode, chunk):
    with client:
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(4096)
            if not data or len(head) > 8192:
                return
            head += data
        target = head.split(b" ", 2)[1].decode("latin-1")
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        if not ipaddress.ip_address(host).is_loopback:  # loopback only
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        with socket.create_connection((host, int(port))) as upstream:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            down = threading.Thread(target=pump, args=(upstream, client, mode, chunk), daemon=True)
            down.start()
            pump(client, upstream, mode, chunk)
            down.join()


def main():
    ap = argparse.ArgumentParser(description="minimal CONNECT relay (loopback only)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=["copy", "splice"], default="copy")
    ap.add_argument("--chunk", type=int, default=65536)
    args = ap.parse_args()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", args.port))
    server.listen(64)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn, args.mode, args.chunk), daemon=True).start()


if __name__ == "__main__":
    main()
