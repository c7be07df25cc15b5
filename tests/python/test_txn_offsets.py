"""Raw-protocol tests of transactional offset commits (issue 12): TxnOffsetCommit v2
(non-flexible) and OffsetFetch v7 (flexible, `require_stable`), asserting exact response
fields, across a restart.

The transaction stays open (no EndTxn), so its offsets stay pending: invisible to
OffsetFetch, and UNSTABLE_OFFSET_COMMIT (88) when the fetch requires stable offsets, as
Kafka answers while a transaction that committed offsets is open. Offsets of a producer
whose transaction does not hold the group's offsets partition are refused first.
"""

from __future__ import annotations

import struct
from typing import Dict, List, Tuple

from group_helpers import NONE, UNKNOWN_TOPIC_OR_PARTITION, RawConn, enc_array, r_i64
from helpers import Reader, enc_str, frame, recv_frame

TXN_OFFSET_COMMIT, OFFSET_FETCH, INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN = 28, 9, 22, 25
INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING = 48, 49
UNSTABLE_OFFSET_COMMIT = 88
INVALID_GROUP_ID = 24


def txn_offset_commit_v2(conn: RawConn, group: str, producer_id: int, producer_epoch: int,
                         topics: Dict[str, List[Tuple[int, int]]]) -> Dict[Tuple[str, int], int]:
    """{topic: [(partition, offset)]} -> {(topic, partition): error}."""
    body = enc_str("tx-1") + enc_str(group) + struct.pack(">qh", producer_id, producer_epoch)
    body += enc_array(topics.items(), lambda t: enc_str(t[0]) + enc_array(
        t[1], lambda p: struct.pack(">iqi", p[0], p[1], -1) + enc_str("txn-meta")))
    conn.send(TXN_OFFSET_COMMIT, 2, body)
    r = conn.recv()
    assert r.i32() == 0  # throttle
    out = {}
    for name, parts in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16())))):
        for idx, err in parts:
            out[(name, idx)] = err
    assert r.pos == len(r.data)
    return out


def init_transactions(conn: RawConn, txid: str) -> Tuple[int, int]:
    """InitProducerId v1 with a transactional id -> (producer id, epoch)."""
    conn.send(INIT_PRODUCER_ID, 1, enc_str(txid) + struct.pack(">i", 60_000))
    r = conn.recv()
    assert r.i32() == 0 and r.i16() == NONE
    return r_i64(r), r.i16()


def add_offsets_to_txn(conn: RawConn, txid: str, producer_id: int, epoch: int, group: str) -> int:
    """AddOffsetsToTxn v1 -> error code."""
    conn.send(ADD_OFFSETS_TO_TXN, 1, enc_str(txid) + struct.pack(">qh", producer_id, epoch) + enc_str(group))
    r = conn.recv()
    assert r.i32() == 0
    return r.i16()


def uvarint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def read_uvarint(r: Reader) -> int:
    n, shift = 0, 0
    while True:
        b = r.take(1)[0]
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7


def compact_str(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def read_compact_str(r: Reader):
    n = read_uvarint(r)
    return None if n == 0 else r.take(n - 1).decode()


def offset_fetch_v7(conn: RawConn, group: str, topics: Dict[str, List[int]], require_stable: bool):
    """-> (top-level error, {(topic, partition): (offset, leader_epoch, metadata, error)})."""
    body = compact_str(group)
    body += uvarint(len(topics) + 1)
    for name, parts in topics.items():
        body += compact_str(name) + uvarint(len(parts) + 1)
        body += b"".join(struct.pack(">i", p) for p in parts) + b"\x00"
    body += struct.pack(">b", 1 if require_stable else 0) + b"\x00"
    conn.corr += 1
    header = struct.pack(">hhi", OFFSET_FETCH, 7, conn.corr) + enc_str(conn.client_id) + b"\x00"
    conn.sock.sendall(frame(header + body))
    r = Reader(recv_frame(conn.sock))
    assert r.i32() == conn.corr
    assert read_uvarint(r) == 0  # response header tagged fields
    assert r.i32() == 0  # throttle
    out = {}
    for _ in range(read_uvarint(r) - 1):
        name = read_compact_str(r)
        for _ in range(read_uvarint(r) - 1):
            idx, off, epoch = r.i32(), r_i64(r), r.i32()
            meta, err = read_compact_str(r), r.i16()
            assert read_uvarint(r) == 0
            out[(name, idx)] = (off, epoch, meta, err)
        assert read_uvarint(r) == 0
    err = r.i16()
    assert read_uvarint(r) == 0
    assert r.pos == len(r.data)
    return err, out


def test_txn_offsets_are_pending_and_unstable_until_their_marker_also_after_a_restart(broker):
    with RawConn(broker.bootstrap) as c:
        assert c.create_topic("txt", 2) == NONE
        pid, epoch = init_transactions(c, "tx-1")
        # Not in the transaction yet: refused, nothing pending.
        assert txn_offset_commit_v2(c, "txg", pid, epoch, {"txt": [(0, 41)]}) == {("txt", 0): INVALID_TXN_STATE}
        assert add_offsets_to_txn(c, "tx-1", pid, epoch, "txg") == NONE
        # Another producer id than the transactional id's.
        assert txn_offset_commit_v2(c, "txg", pid + 1, epoch, {"txt": [(0, 41)]}) == {
            ("txt", 0): INVALID_PRODUCER_ID_MAPPING}
        errs = txn_offset_commit_v2(c, "txg", pid, epoch, {"txt": [(0, 42), (7, 1)], "nope": [(0, 1)]})
        # Unknown partitions first (Kafka's response builder), then the coordinator's.
        assert errs == {("txt", 7): UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION,
                        ("txt", 0): NONE}, errs
        # A plain commit on the other partition is visible at once.
        assert c.offset_commit(2, "txg", -1, "", {"txt": [(1, 5, "plain")]}) == {("txt", 1): NONE}
        assert txn_offset_commit_v2(c, "", 4242, 0, {"txt": [(0, 1)]}) == {("txt", 0): INVALID_GROUP_ID}

    def check(conn):
        err, got = offset_fetch_v7(conn, "txg", {"txt": [0, 1]}, require_stable=False)
        assert err == NONE and got == {("txt", 0): (-1, -1, "", NONE), ("txt", 1): (5, -1, "plain", NONE)}, got
        err, got = offset_fetch_v7(conn, "txg", {"txt": [0, 1]}, require_stable=True)
        assert err == NONE and got == {("txt", 0): (-1, -1, "", UNSTABLE_OFFSET_COMMIT),
                                       ("txt", 1): (5, -1, "plain", NONE)}, got

    with RawConn(broker.bootstrap) as c:
        check(c)
    broker.restart()
    with RawConn(broker.bootstrap) as c:
        check(c)
