"""Bad input never takes the broker down: random request bodies for every advertised
API and version, and the 8-byte array-count bomb, each end with a response or a closed
connection; afterwards the broker still serves and logged no panic."""

from __future__ import annotations

import random
import socket
import struct

from helpers import frame, raw_api_versions, raw_connect, request_header_v1


def _send_and_drain(bootstrap: str, payload: bytes) -> None:
    """Sends one frame, then reads until the broker answers or closes (bounded)."""
    with raw_connect(bootstrap, timeout=3.0) as s:
        try:
            s.sendall(frame(payload))
            s.recv(65536)
        except (socket.timeout, ConnectionError, OSError):
            pass


def test_random_bodies_for_every_api_and_version(broker):
    rng = random.Random(20261129)
    table = raw_api_versions(broker.bootstrap)
    assert table, "ApiVersions returned no APIs"
    sent = 0
    for api_key, (lo, hi) in sorted(table.items()):
        for version in range(lo, hi + 1):
            for _ in range(3):
                body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 120)))
                _send_and_drain(broker.bootstrap, request_header_v1(api_key, version, sent) + body)
                sent += 1
    # Unknown API keys and versions far out of range close the connection.
    for api_key, version in [(999, 0), (-5, 0), (0, 99), (1, -1)]:
        _send_and_drain(broker.bootstrap, request_header_v1(api_key, version, sent) + b"\x00" * 16)
        sent += 1
    assert sent > 100
    # Still serving, and nothing panicked.
    assert raw_api_versions(broker.bootstrap)[18] == (0, 4)
    log = broker.describe_logs(max_bytes=1 << 20)
    assert "panicked" not in log


def test_array_count_bomb_is_refused_without_allocating(broker):
    # Metadata v0 whose topic array claims 54,265,856 entries in a 5-byte body
    # (the reproducer of kafka-protocol-rs PR #152): decoding must fail fast.
    payload = struct.pack(">hhi", 3, 0, 1) + struct.pack(">h", -1) + bytes.fromhex("033c0c00b6")
    with raw_connect(broker.bootstrap, timeout=10.0) as s:
        s.sendall(frame(payload))
        try:
            data = s.recv(65536)
        except ConnectionError:
            data = b""
        assert data == b"", "a malformed Metadata request must close the connection"
    assert raw_api_versions(broker.bootstrap)[3][1] >= 1
