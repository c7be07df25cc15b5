"""The idle-connection client of the idle-connections-5k workload, run as its own process
(`python -m shardbench.idle --port P --count N`) so that its file descriptors are not the
harness's: raises its RLIMIT_NOFILE soft limit to the hard limit, opens N TCP connections to
the broker (at most --wave connects in flight at once, non-blocking, one selector), sends one
ApiVersions v0 request on each and reads the answer, then holds them all, sending nothing.

Talks to the harness on stdin/stdout, one JSON object per line:
  -> {"opened": n, "answered": n, "failed": n, "seconds": s, "errors": {...}}   once all are open
  <- "check"      -> {"still_open": n, "closed": n}   (a connection the broker closed reads EOF)
  <- EOF          closes every connection and exits
"""

from __future__ import annotations

import argparse
import json
import resource
import selectors
import socket
import struct
import sys
import time

from .kproto import api_versions_request


def raise_nofile(need: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, need)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


class Conn:
    """One connection's progress: connecting -> request sent -> answered (then idle)."""

    def __init__(self, sock: socket.socket, corr: int):
        self.sock, self.corr = sock, corr
        self.out = api_versions_request(corr)
        self.inbuf = b""
        self.state = "connecting"


def open_all(port: int, count: int, wave: int, timeout: float) -> tuple[list[socket.socket], dict]:
    """Opens `count` connections; returns the answered ones and a summary."""
    sel = selectors.DefaultSelector()
    done: list[socket.socket] = []
    errors: dict[str, int] = {}
    started = failed = 0
    t0 = time.monotonic()

    def fail(c: Conn, why: str):
        nonlocal failed
        failed += 1
        errors[why] = errors.get(why, 0) + 1
        sel.unregister(c.sock)
        c.sock.close()

    while (started < count or sel.get_map()) and time.monotonic() - t0 < timeout:
        while started < count and len(sel.get_map()) < wave:
            s = socket.socket()
            s.setblocking(False)
            err = s.connect_ex(("127.0.0.1", port))
            c = Conn(s, started + 1)
            started += 1
            if err not in (0, 115):  # EINPROGRESS
                errors[f"connect errno {err}"] = errors.get(f"connect errno {err}", 0) + 1
                failed += 1
                s.close()
                continue
            sel.register(s, selectors.EVENT_WRITE, c)
        for key, ev in sel.select(timeout=1.0):
            c: Conn = key.data
            try:
                if c.state == "connecting":
                    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        fail(c, f"connect errno {err}")
                        continue
                    c.sock.send(c.out)  # 30-odd bytes: fits any send buffer
                    c.state = "sent"
                    sel.modify(c.sock, selectors.EVENT_READ, c)
                else:
                    chunk = c.sock.recv(65536)
                    if not chunk:
                        fail(c, "closed before answering")
                        continue
                    c.inbuf += chunk
                    if len(c.inbuf) >= 8:
                        size, corr = struct.unpack_from(">ii", c.inbuf)
                        if len(c.inbuf) >= 4 + size:
                            sel.unregister(c.sock)
                            if corr != c.corr:
                                c.sock.close()
                                failed += 1
                                errors["wrong correlation id"] = errors.get("wrong correlation id", 0) + 1
                            else:
                                done.append(c.sock)
            except OSError as e:
                fail(c, type(e).__name__)
    for key in list(sel.get_map().values()):
        key.fileobj.close()
        errors["timed out"] = errors.get("timed out", 0) + 1
        failed += 1
    return done, dict(opened=started, answered=len(done), failed=failed, seconds=time.monotonic() - t0,
                      errors=errors)


def still_open(socks: list[socket.socket]) -> dict:
    """Counts the connections the broker has not closed (a closed one is readable and reads EOF)."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    for key, _ in sel.select(timeout=0.2):
        try:
            if not key.fileobj.recv(1, socket.MSG_PEEK):
                closed += 1
        except OSError:
            closed += 1
    sel.close()
    return dict(still_open=len(socks) - closed, closed=closed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m shardbench.idle")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--wave", type=int, default=200, help="connects in flight at once")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args(argv)
    limit = raise_nofile(a.count + 64)
    if limit < a.count + 16:
        print(json.dumps(dict(error=f"RLIMIT_NOFILE hard limit {limit} is below {a.count} connections")), flush=True)
        return 1
    socks, summary = open_all(a.port, a.count, a.wave, a.timeout)
    summary["nofile"] = limit
    print(json.dumps(summary), flush=True)
    for line in sys.stdin:
        if line.strip() == "check":
            print(json.dumps(still_open(socks)), flush=True)
    for s in socks:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
