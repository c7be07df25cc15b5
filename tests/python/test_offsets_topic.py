"""The internal topic `__consumer_offsets`: the group coordinator's records, listed in
Metadata as internal with 50 partitions and readable by any consumer in Kafka's own
key/value schemas (OffsetCommitKey v1 / OffsetCommitValue v3, GroupMetadataKey v2 /
GroupMetadataValue v3), as lag monitors (Burrow and the like) read it. Clients cannot
write to it, delete it or grow it.
"""

from __future__ import annotations

import struct
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

OFFSETS = "__consumer_offsets"


def java_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f">{len(s.encode('utf-16-be')) // 2}H", s.encode("utf-16-be")):
        h = (h * 31 + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition(group: str) -> int:
    """Kafka's GroupMetadataManager.partitionFor: Utils.abs(hashCode) % 50."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % 50


class Buf:
    """Kafka's non-flexible primitive types, big-endian."""

    def __init__(self, b: bytes):
        self.b, self.i = b, 0

    def take(self, fmt: str):
        (v,) = struct.unpack_from(fmt, self.b, self.i)
        self.i += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.b[self.i:self.i + n].decode()
        self.i += n
        return s

    def bytes(self):
        n = self.take(">i")
        v = self.b[self.i:self.i + n]
        self.i += n
        return v

    def done(self):
        assert self.i == len(self.b), f"{len(self.b) - self.i} trailing bytes"


def decode(key: bytes, value: bytes | None):
    k = Buf(key)
    version = k.take(">h")
    if version in (0, 1):
        group, topic, partition = k.string(), k.string(), k.take(">i")
        k.done()
        if value is None:
            return ("offset-tombstone", group, topic, partition)
        v = Buf(value)
        assert v.take(">h") == 3, "OffsetCommitValue v3"
        out = ("offset", group, topic, partition, v.take(">q"), v.take(">i"), v.string(), v.take(">q"))
        v.done()
        return out
    if version == 2:
        group = k.string()
        k.done()
        if value is None:
            return ("group-tombstone", group)
        v = Buf(value)
        assert v.take(">h") == 3, "GroupMetadataValue v3"
        protocol_type, generation, protocol, leader, ts = v.string(), v.take(">i"), v.string(), v.string(), v.take(">q")
        members = []
        for _ in range(v.take(">i")):
            members.append((v.string(), v.string(), v.string(), v.string(), v.take(">i"), v.take(">i"), v.bytes(), v.bytes()))
        v.done()
        return ("group", group, protocol_type, generation, protocol, leader, ts, members)
    return ("other", version)


def read_partition(bootstrap: str, partition: int, timeout_s: float = 30.0) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-unused", "enable.auto.commit": False,
                  "enable.partition.eof": True, "check.crcs": True})
    try:
        c.assign([TopicPartition(OFFSETS, partition, 0)])
        out, deadline = [], time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(m.error())
            out.append((m.offset(), decode(m.key(), m.value())))
        raise AssertionError(f"no end of partition {partition} within {timeout_s} s: {out}")
    finally:
        c.close()


def test_offsets_topic_is_listed_as_internal_with_50_partitions(broker):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (t,) = admin.describe_topics([OFFSETS])
        assert (t["error_code"], t["is_internal"], len(t["partitions"])) == (0, True, 50)
        assert sorted(p["partition_index"] for p in t["partitions"]) == list(range(50))
    finally:
        admin.close()
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert len(md.topics[OFFSETS].partitions) == 50


def test_committed_offsets_and_group_metadata_are_readable_in_kafkas_schemas(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("data", 2, 1)])["data"].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(6):
        p.produce("data", value=b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0

    # A commit from an assign() user (no group metadata), with commit metadata.
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata

    # "g-commit" has a negative Java hash code: Kafka's partition (Utils.abs: 23) differs
    # from masking the sign bit (25).
    assert (java_hash("g-commit"), offsets_partition("g-commit")) == (-951017123, 23)
    kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="g-commit", enable_auto_commit=False)
    kc.commit({KTopicPartition("data", 1): OffsetAndMetadata(3, "meta-1", -1)})
    kc.close()

    rows = [r for _, r in read_partition(broker.bootstrap, offsets_partition("g-commit")) if r[1] == "g-commit"]
    offsets = [r for r in rows if r[0] == "offset"]
    assert len(offsets) == 1, rows
    kind, group, topic, partition, offset, _leader_epoch, metadata, commit_ts = offsets[0]
    assert (group, topic, partition, offset, metadata) == ("g-commit", "data", 1, 3, "meta-1")
    assert abs(commit_ts - time.time() * 1000) < 60_000

    # A classic group that joins, consumes, commits and leaves: its GroupMetadata records.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-classic", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "client.id": "the-client"})
    c.subscribe(["data"])
    got, deadline = 0, time.monotonic() + 60
    while got < 6 and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got += 1
    assert got == 6
    c.commit(asynchronous=False)
    c.close()

    rows = [r for _, r in read_partition(broker.bootstrap, offsets_partition("g-classic")) if r[1] == "g-classic"]
    commits = sorted((r[3], r[4]) for r in rows if r[0] == "offset")
    assert commits == [(0, 3), (1, 3)], rows
    groups = [r for r in rows if r[0] == "group"]
    stable = [g for g in groups if g[7]]
    assert stable, rows
    _, _, protocol_type, generation, protocol, leader, ts, members = stable[-1]
    assert (protocol_type, generation, protocol) == ("consumer", 1, "range")
    assert [m[0] for m in members] == [leader]
    assert members[0][2] == "the-client"
    assert ts > 0
    # After the member left: an empty group, no protocol, no members.
    assert groups[-1][3:8] == (2, None, None, groups[-1][6], []), groups[-1]


def test_clients_cannot_write_delete_or_grow_the_offsets_topic(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 0})
    errors = []
    p.produce(OFFSETS, value=b"x", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(30)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_EXCEPTION, errors[0]

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    e = admin.delete_topics([OFFSETS])[OFFSETS].exception(30)
    assert e is not None and e.args[0].code() == KafkaError.INVALID_REQUEST, e
    e = admin.create_partitions([NewPartitions(OFFSETS, 60)])[OFFSETS].exception(30)
    assert e is not None and e.args[0].code() == KafkaError.INVALID_REQUEST, e
    e = admin.create_topics([NewTopic(OFFSETS, 1, 1)])[OFFSETS].exception(30)
    assert e is not None
    md = admin.list_topics(timeout=10)
    assert len(md.topics[OFFSETS].partitions) == 50
