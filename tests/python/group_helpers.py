"""Helpers for the consumer-group tests (test_groups.py, test_groups_raw.py).

- `RawConn`: one TCP connection speaking hand-built, non-flexible group requests
  (JoinGroup v1-v5, SyncGroup v1-v3, Heartbeat v1-v3, LeaveGroup v1-v2,
  OffsetCommit v2-v7, OffsetFetch v2-v5, DescribeGroups v1-v4, FindCoordinator v1,
  ListGroups v2, DeleteGroups v1, OffsetDelete v0, CreateTopics v2), with a "was anything answered yet?" probe for parked requests.
- known-value records per (partition, index) and producers for confluent-kafka.

Every wait is bounded.
"""

from __future__ import annotations

import select
import struct
import time
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from helpers import Reader, enc_str, frame, raw_connect, recv_frame, request_header_v1

# Kafka error codes
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82

JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP = 11, 14, 12, 13
OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE_GROUPS, FIND_COORDINATOR, CREATE_TOPICS = 8, 9, 15, 10, 19
LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 16, 42, 47
INCONSISTENT_GROUP_PROTOCOL = 23
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
GROUP_SUBSCRIBED_TO_TOPIC = 86


# --------------------------------------------------------------------------------------
# encoding
# --------------------------------------------------------------------------------------


def enc_bytes(b: Optional[bytes]) -> bytes:
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + b


def enc_array(items: Optional[Iterable], enc) -> bytes:
    if items is None:
        return struct.pack(">i", -1)
    items = list(items)
    return struct.pack(">i", len(items)) + b"".join(enc(x) for x in items)


def r_bytes(r: Reader) -> Optional[bytes]:
    n = r.i32()
    return None if n < 0 else r.take(n)


def r_i64(r: Reader) -> int:
    return struct.unpack(">q", r.take(8))[0]


class RawConn:
    """One connection; requests use header v1, responses header v0 (non-flexible)."""

    def __init__(self, bootstrap: str, client_id: str = "raw-test", timeout: float = 15.0):
        self.sock = raw_connect(bootstrap, timeout=timeout)
        self.client_id = client_id
        self.corr = 100
        self.pending: List[int] = []

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, api_key: int, version: int, body: bytes) -> int:
        self.corr += 1
        self.sock.sendall(frame(request_header_v1(api_key, version, self.corr, self.client_id) + body))
        self.pending.append(self.corr)
        return self.corr

    def recv(self) -> Reader:
        """The next response (in request order); checks its correlation id."""
        data = recv_frame(self.sock)
        r = Reader(data)
        corr = r.i32()
        want = self.pending.pop(0)
        assert corr == want, f"correlation id {corr}, expected {want}"
        return r

    def answered_within(self, seconds: float) -> bool:
        """True if response bytes become readable within `seconds` (nothing is consumed)."""
        ready, _, _ = select.select([self.sock], [], [], seconds)
        return bool(ready)

    # -- JoinGroup ------------------------------------------------------------------------

    def send_join(self, version: int, group: str, member_id: str, protocols: Sequence[Tuple[str, bytes]],
                  session_ms: int = 10000, rebalance_ms: int = 5000, instance: Optional[str] = None,
                  protocol_type: str = "consumer") -> int:
        assert 1 <= version <= 5
        body = enc_str(group) + struct.pack(">ii", session_ms, rebalance_ms) + enc_str(member_id)
        if version >= 5:
            body += enc_str(instance)
        body += enc_str(protocol_type)
        body += enc_array(protocols, lambda p: enc_str(p[0]) + enc_bytes(p[1]))
        self.send(JOIN_GROUP, version, body)
        return version

    def recv_join(self, version: int) -> dict:
        r = self.recv()
        throttle = r.i32() if version >= 2 else 0
        out = {"throttle": throttle, "error": r.i16(), "generation": r.i32(), "protocol": r.string(),
               "leader": r.string(), "member_id": r.string()}

        def member(r):
            mid = r.string()
            inst = r.string() if version >= 5 else None
            return (mid, inst, r_bytes(r))

        out["members"] = r.array(member)
        assert r.pos == len(r.data), f"JoinGroup v{version}: {len(r.data) - r.pos} trailing bytes"
        return out

    def join(self, version: int, *args, **kw) -> dict:
        self.send_join(version, *args, **kw)
        return self.recv_join(version)

    # -- SyncGroup ------------------------------------------------------------------------

    def send_sync(self, version: int, group: str, generation: int, member_id: str,
                  assignments: Sequence[Tuple[str, bytes]] = (), instance: Optional[str] = None) -> int:
        assert 1 <= version <= 3
        body = enc_str(group) + struct.pack(">i", generation) + enc_str(member_id)
        if version >= 3:
            body += enc_str(instance)
        body += enc_array(assignments, lambda a: enc_str(a[0]) + enc_bytes(a[1]))
        self.send(SYNC_GROUP, version, body)
        return version

    def recv_sync(self) -> dict:
        r = self.recv()
        out = {"throttle": r.i32(), "error": r.i16(), "assignment": r_bytes(r)}
        assert r.pos == len(r.data)
        return out

    def sync(self, version: int, *args, **kw) -> dict:
        self.send_sync(version, *args, **kw)
        return self.recv_sync()

    # -- Heartbeat / LeaveGroup -------------------------------------------------------------

    def heartbeat(self, version: int, group: str, generation: int, member_id: str,
                  instance: Optional[str] = None) -> int:
        assert 1 <= version <= 3
        body = enc_str(group) + struct.pack(">i", generation) + enc_str(member_id)
        if version >= 3:
            body += enc_str(instance)
        self.send(HEARTBEAT, version, body)
        r = self.recv()
        r.i32()
        err = r.i16()
        assert r.pos == len(r.data)
        return err

    def leave(self, group: str, member_id: str, version: int = 1) -> int:
        assert 1 <= version <= 2
        self.send(LEAVE_GROUP, version, enc_str(group) + enc_str(member_id))
        r = self.recv()
        r.i32()
        return r.i16()

    # -- OffsetCommit / OffsetFetch ------------------------------------------------------

    def offset_commit(self, version: int, group: str, generation: int, member_id: str,
                      topics: Dict[str, List[Tuple[int, int, Optional[str]]]],
                      instance: Optional[str] = None, retention_ms: int = -1) -> Dict[Tuple[str, int], int]:
        """topics: {name: [(partition, offset, metadata)]} -> {(topic, partition): error}."""
        assert 2 <= version <= 7
        body = enc_str(group) + struct.pack(">i", generation) + enc_str(member_id)
        if version >= 7:
            body += enc_str(instance)
        if version <= 4:
            body += struct.pack(">q", retention_ms)

        def part(p):
            idx, off, meta = p
            b = struct.pack(">iq", idx, off)
            if version >= 6:
                b += struct.pack(">i", -1)
            return b + enc_str(meta)

        body += enc_array(topics.items(), lambda t: enc_str(t[0]) + enc_array(t[1], part))
        self.send(OFFSET_COMMIT, version, body)
        r = self.recv()
        if version >= 3:
            r.i32()
        out = {}
        for name, parts in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16())))):
            for idx, err in parts:
                out[(name, idx)] = err
        assert r.pos == len(r.data)
        return out

    def offset_fetch(self, group: str, topics: Optional[Dict[str, List[int]]], version: int = 5):
        """-> (top-level error, {(topic, partition): (offset, leader_epoch, metadata, error)})."""
        assert 2 <= version <= 5
        body = enc_str(group) + enc_array(
            None if topics is None else topics.items(),
            lambda t: enc_str(t[0]) + enc_array(t[1], lambda p: struct.pack(">i", p)))
        self.send(OFFSET_FETCH, version, body)
        r = self.recv()
        if version >= 3:
            r.i32()

        def part(r):
            idx, off = r.i32(), r_i64(r)
            epoch = r.i32() if version >= 5 else -1
            return idx, (off, epoch, r.string(), r.i16())

        out = {}
        for name, parts in r.array(lambda r: (r.string(), r.array(part))):
            for idx, v in parts:
                out[(name, idx)] = v
        err = r.i16()
        assert r.pos == len(r.data)
        return err, out

    # -- ListGroups / DeleteGroups / OffsetDelete ---------------------------------------

    def list_groups(self) -> Dict[str, str]:
        """ListGroups v2 -> {group_id: protocol_type}."""
        self.send(LIST_GROUPS, 2, b"")
        r = self.recv()
        r.i32()
        err = r.i16()
        assert err == NONE, f"ListGroups error {err}"
        groups = dict(r.array(lambda r: (r.string(), r.string())))
        assert r.pos == len(r.data)
        return groups

    def delete_groups(self, groups: Sequence[str]) -> Dict[str, int]:
        """DeleteGroups v1 -> {group_id: error}."""
        self.send(DELETE_GROUPS, 1, enc_array(groups, enc_str))
        r = self.recv()
        r.i32()
        out = dict(r.array(lambda r: (r.string(), r.i16())))
        assert r.pos == len(r.data)
        return out

    def offset_delete(self, group: str, topics: Dict[str, List[int]]):
        """OffsetDelete v0 -> (top-level error, {(topic, partition): error})."""
        body = enc_str(group) + enc_array(
            topics.items(), lambda t: enc_str(t[0]) + enc_array(t[1], lambda p: struct.pack(">i", p)))
        self.send(OFFSET_DELETE, 0, body)
        r = self.recv()
        err = r.i16()
        r.i32()
        out = {}
        for name, parts in r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16())))):
            for idx, e in parts:
                out[(name, idx)] = e
        assert r.pos == len(r.data)
        return err, out

    # -- DescribeGroups / FindCoordinator / CreateTopics --------------------------------

    def describe_group(self, group: str, version: int = 4) -> dict:
        assert 1 <= version <= 4
        body = enc_array([group], enc_str)
        if version >= 3:
            body += b"\x00"
        self.send(DESCRIBE_GROUPS, version, body)
        r = self.recv()
        r.i32()

        def member(r):
            m = {"member_id": r.string()}
            m["instance"] = r.string() if version >= 4 else None
            m["client_id"], m["client_host"] = r.string(), r.string()
            m["metadata"], m["assignment"] = r_bytes(r), r_bytes(r)
            return m

        def group_(r):
            g = {"error": r.i16(), "group_id": r.string(), "state": r.string(), "protocol_type": r.string(),
                 "protocol": r.string(), "members": r.array(member)}
            if version >= 3:
                r.i32()
            return g

        groups = r.array(group_)
        assert r.pos == len(r.data) and len(groups) == 1
        return groups[0]

    def find_coordinator(self, key: str, key_type: int = 0) -> dict:
        self.send(FIND_COORDINATOR, 1, enc_str(key) + struct.pack(">b", key_type))
        r = self.recv()
        r.i32()
        return {"error": r.i16(), "message": r.string(), "node_id": r.i32(), "host": r.string(), "port": r.i32()}

    def create_topic(self, name: str, partitions: int) -> int:
        body = enc_array([name], lambda n: enc_str(n) + struct.pack(">ih", partitions, 1)
                         + enc_array([], None) + enc_array([], None))
        body += struct.pack(">ib", 30000, 0)
        self.send(CREATE_TOPICS, 2, body)
        r = self.recv()
        r.i32()
        topics = r.array(lambda r: (r.string(), r.i16(), r.string()))
        assert len(topics) == 1 and topics[0][0] == name
        return topics[0][1]


# --------------------------------------------------------------------------------------
# known-value records and confluent-kafka helpers
# --------------------------------------------------------------------------------------


def consumer_subscription(topics: Sequence[str]) -> bytes:
    """ConsumerProtocolSubscription v0 (the metadata of protocol type "consumer")."""
    return struct.pack(">h", 0) + enc_array(topics, enc_str) + enc_bytes(None)


def rec_value(topic: str, partition: int, index: int) -> bytes:
    return f"{topic}|p{partition}|#{index:06d}|".encode() + bytes([index % 251]) * (index % 37)


def rec_key(partition: int, index: int) -> bytes:
    return f"k{partition}-{index}".encode()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                             operation_timeout=10, request_timeout=30)
    fs[topic].result(timeout=30)
    md = admin.list_topics(topic=topic, timeout=10)
    assert md.topics[topic].error is None and sorted(md.topics[topic].partitions) == list(range(partitions))


def produce_known(bootstrap: str, topic: str, partitions: int, per_partition: int,
                  start: int = 0) -> None:
    """Produce indexes [start, start+per_partition) to every partition with known values."""
    from confluent_kafka import Producer

    errors: List[str] = []
    delivered = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors.append(f"p{msg.partition()}: {err}")
        else:
            delivered[0] += 1

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                  "enable.idempotence": True, "message.timeout.ms": 60000})
    for i in range(start, start + per_partition):
        for part in range(partitions):
            deadline = time.monotonic() + 60
            while True:
                try:
                    p.produce(topic, value=rec_value(topic, part, i), key=rec_key(part, i), partition=part,
                              on_delivery=on_delivery)
                    break
                except BufferError:
                    assert time.monotonic() < deadline, "producer queue full for 60s"
                    p.poll(0.05)
        p.poll(0)
    left = p.flush(120)
    assert left == 0, f"{left} messages undelivered after 120s"
    assert not errors, f"{len(errors)} delivery errors: {errors[:5]}"
    assert delivered[0] == partitions * per_partition


def confluent_committed(bootstrap: str, group: str, topic: str, partitions: int,
                        timeout: float = 30.0) -> Dict[int, Tuple[int, Optional[str]]]:
    """OffsetFetch through librdkafka (`Consumer.committed`), without joining the group."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=timeout)
        for tp in tps:
            assert tp.error is None, f"committed() error for {tp}: {tp.error}"
        return {tp.partition: (tp.offset, tp.metadata) for tp in tps}
    finally:
        c.close()


def confluent_high_watermarks(bootstrap: str, topic: str, partitions: int) -> Dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hwm-probe", "enable.auto.commit": False})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)}
    finally:
        c.close()


def describe_group_admin(bootstrap: str, group: str, timeout: float = 10.0):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.describe_consumer_groups([group], request_timeout=timeout)
    return fs[group].result(timeout=timeout)


def wait_until(pred, timeout_s: float, interval_s: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last value: {last!r})")
