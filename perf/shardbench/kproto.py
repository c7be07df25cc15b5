"""Just enough of the Kafka wire protocol, in the standard library, for the limits workloads
to ask a broker things no perf tool reports: ApiVersions v0 (what the idle connections send),
Metadata v4 (are all partitions of a topic listed with a leader?) and Produce v3 with one
record per partition (does every partition of a topic accept a write?). Non-flexible versions
only (no tagged fields), so every broker of the last years and Kafka 4.x answer them.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Optional

API_PRODUCE, API_METADATA, API_VERSIONS = 0, 3, 18
CLIENT_ID = b"shardbench"


# ---------------------------------------------------------------- encoding

def kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def frame(api_key: int, version: int, corr: int, body: bytes = b"") -> bytes:
    """A request with header v1 (api key, version, correlation id, client id), size-prefixed."""
    head = struct.pack(">hhih", api_key, version, corr, len(CLIENT_ID)) + CLIENT_ID
    return struct.pack(">i", len(head) + len(body)) + head + body


def api_versions_request(corr: int) -> bytes:
    return frame(API_VERSIONS, 0, corr)


def metadata_request(corr: int, topic: str) -> bytes:
    return frame(API_METADATA, 4, corr, struct.pack(">i", 1) + kstr(topic) + b"\0")


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _crc32c_table() -> list[int]:
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def record_batch(value: bytes, ts_ms: int) -> bytes:
    """A v2 record batch holding one record (no key, no headers, no producer id)."""
    rec = b"\0" + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    rec = varint(len(rec)) + rec
    after_crc = struct.pack(">hiqqqhii", 0, 0, ts_ms, ts_ms, -1, -1, -1, 1) + rec
    body = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def produce_request(corr: int, topic: str, partitions: int, value: bytes = b"startup") -> bytes:
    """Produce v3, acks=all, 30 s timeout: one record to each of `partitions` partitions."""
    batch = record_batch(value, int(time.time() * 1000))
    parts = b"".join(struct.pack(">ii", p, len(batch)) + batch for p in range(partitions))
    body = struct.pack(">hhi", -1, -1, 30_000) + struct.pack(">i", 1) + kstr(topic) + struct.pack(">i", partitions) + parts
    return frame(API_PRODUCE, 3, corr, body)


# ---------------------------------------------------------------- decoding

class Reader:
    def __init__(self, data: bytes):
        self.d, self.o = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.d, self.o)
        self.o += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self) -> Optional[str]:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.d[self.o:self.o + n].decode(errors="replace")
        self.o += n
        return s

    def array(self, item) -> list:
        n = self.take(">i")
        return [item() for _ in range(max(n, 0))]


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def roundtrip(sock: socket.socket, req: bytes, corr: int) -> Reader:
    """Sends one request and returns a Reader on the response body (after the correlation id)."""
    sock.sendall(req)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    r = Reader(recv_exact(sock, size))
    got = r.take(">i")
    if got != corr:
        raise ConnectionError(f"correlation id {got}, expected {corr}")
    return r


def parse_metadata_v4(r: Reader, topic: str) -> tuple[int, int]:
    """(partitions listed with error 0 and a leader, partitions listed) for `topic`."""
    r.take(">i")  # throttle
    r.array(lambda: (r.take(">i"), r.string(), r.take(">i"), r.string()))
    r.string()  # cluster id
    r.take(">i")  # controller
    ready = listed = 0
    for _ in range(r.take(">i")):
        r.take(">h")
        name = r.string()
        r.take(">b")
        for _ in range(r.take(">i")):
            err, _idx, leader = r.take(">hii")
            r.array(lambda: r.take(">i"))
            r.array(lambda: r.take(">i"))
            if name == topic:
                listed += 1
                ready += err == 0 and leader >= 0
    return ready, listed


def parse_produce_v3(r: Reader) -> dict[int, int]:
    """Error code per partition: {error_code: count}."""
    errs: dict[int, int] = {}
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            _idx, err, _base, _ts = r.take(">ihqq")
            errs[err] = errs.get(err, 0) + 1
    return errs


# ---------------------------------------------------------------- one-shot questions

def ask(port: int, req_fn, parse, timeout: float = 10.0):
    """Connects to 127.0.0.1:port, sends req_fn(corr) and returns parse(reader); None on any
    network error (the broker is not up yet)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            return parse(roundtrip(s, req_fn(1), 1))
    except (OSError, ConnectionError, struct.error):
        return None


def metadata_ready(port: int, topic: str) -> Optional[tuple[int, int]]:
    return ask(port, lambda c: metadata_request(c, topic), lambda r: parse_metadata_v4(r, topic))


def produce_all(port: int, topic: str, partitions: int) -> Optional[dict[int, int]]:
    return ask(port, lambda c: produce_request(c, topic, partitions), parse_produce_v3, timeout=40.0)
