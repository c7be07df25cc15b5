"""Retention (`retention.ms`, `retention.bytes`) against the real binary with librdkafka:
whole segments past retention are deleted, the log start offset moves to the first
segment kept, consumers and ListOffsets(earliest) see it, and a restart keeps it.

Each record is sent as its own batch (a flush per record) with a 99,928-byte value, no
key, no headers and no compression, so every batch is 100,000 bytes and a segment of
`segment.bytes=1048576` (Kafka's minimum) holds exactly ten (eleven would not fit even
if the framing were off by a few bytes): the segment layout, hence the new log start
offset, is exact."""

from __future__ import annotations

import time

from helpers import confluent_watermarks, wait_until

VALUE = 99_928  # + 72 bytes of batch and record framing = 100,000 bytes per batch
SEGMENT = {"segment.bytes": "1048576"}


def create(bootstrap: str, topic: str, config: dict) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config)],
                             operation_timeout=10, request_timeout=30)
    fs[topic].result(timeout=30)


def produce_one_batch_each(bootstrap: str, topic: str, timestamps_ms: list[int]) -> list[int]:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": False,
                  "compression.type": "none"})
    offsets = []

    def on_delivery(err, msg):
        assert err is None, err
        offsets.append(msg.offset())

    for i, ts in enumerate(timestamps_ms):
        p.produce(topic, value=b"%06d" % i + b"x" * (VALUE - 6), partition=0, timestamp=ts,
                  on_delivery=on_delivery)
        assert p.flush(10) == 0
    return offsets


def consume(bootstrap: str, topic: str, start: int, n: int, reset: str = "error") -> list:
    """Offsets of the first `n` records read from `start` (an offset, or -2 for the
    beginning); a consume error (with `auto.offset.reset=error`: OFFSET_OUT_OF_RANGE)
    is returned as its `KafkaError` in place of an offset."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "retention-tests-unused",
                  "enable.auto.commit": False, "auto.offset.reset": reset})
    out: list = []
    try:
        c.assign([TopicPartition(topic, 0, start)])
        deadline = time.monotonic() + 30
        while len(out) < n and time.monotonic() < deadline:
            for m in c.consume(num_messages=100, timeout=0.5):
                out.append(m.error() if m.error() is not None else m.offset())
                if m.error() is not None:
                    return out
    finally:
        c.close()
    return out


def test_retention_ms_deletes_old_segments_and_the_start_survives_a_restart(broker_factory):
    broker = broker_factory("--log-retention-check-interval-ms", "200")
    topic = "retained"
    create(broker.bootstrap, topic, {"retention.ms": "60000", **SEGMENT})
    now = int(time.time() * 1000)
    # 35 records an hour old, then 5 new: segments 0, 10, 20 hold only old records;
    # the active segment 30 holds 30-34 (old) and 35-39 (new).
    offsets = produce_one_batch_each(broker.bootstrap, topic, [now - 3_600_000] * 35 + [now] * 5)
    assert offsets == list(range(40))

    # Normally the log starts at 30. Between the flushes of records 34 and 35 the active
    # segment holds only old records; a pass that runs then rolls it and deletes it too,
    # as Kafka does, and the log starts at 35. Either way exactly one segment is left: a
    # pass that decided while record 35 was on its way must not roll the segment that
    # record lands in (it did once: segments 30 and 36 were left).
    wait_until(lambda: confluent_watermarks(broker.bootstrap, topic, [0])[0] in ((30, 40), (35, 40)), 15,
               what="log start offset 30 (or 35) after retention")
    start = confluent_watermarks(broker.bootstrap, topic, [0])[0][0]
    assert consume(broker.bootstrap, topic, -2, 40 - start) == list(range(start, 40))
    # An offset below the log start is out of range, as in Kafka.
    from confluent_kafka import KafkaError
    [err] = consume(broker.bootstrap, topic, start - 1, 1)
    assert err.code() == KafkaError._AUTO_OFFSET_RESET, err
    assert "Offset out of range" in err.str() or "OFFSET_OUT_OF_RANGE" in err.str(), err.str()

    broker.restart()
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (start, 40)
    files = sorted(f.name for f in (broker.data_dir / f"{topic}-0").iterdir() if f.suffix == ".log")
    assert files == [f"{start:020d}.log"]


def test_retention_bytes_keeps_the_newest_segments_that_fit(broker_factory):
    broker = broker_factory("--log-retention-check-interval-ms", "200")
    topic = "sized"
    # Keep at least 2,500,000 bytes: of 45 batches (segments 0, 10, 20, 30 and the active
    # 40 with 5), deleting 0 and 10 leaves 2,500,000; deleting 20 too would leave 1,500,000.
    create(broker.bootstrap, topic, {"retention.bytes": "2500000", **SEGMENT})
    now = int(time.time() * 1000)
    produce_one_batch_each(broker.bootstrap, topic, [now] * 45)
    wait_until(lambda: confluent_watermarks(broker.bootstrap, topic, [0])[0] == (20, 45), 15,
               what="log start offset 20 after retention.bytes")
    # Nothing more goes on later passes.
    time.sleep(0.6)
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (20, 45)


def test_retention_set_later_with_incremental_alter_configs_applies_live_and_persists(broker_factory):
    """`kafka-configs --alter --add-config retention.ms=...` on a topic that already holds
    old data: the next pass deletes its old segments, and the config survives a restart."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)

    broker = broker_factory("--log-retention-check-interval-ms", "200")
    topic = "altered"
    create(broker.bootstrap, topic, SEGMENT)
    now = int(time.time() * 1000)
    produce_one_batch_each(broker.bootstrap, topic, [now - 3_600_000] * 35 + [now] * 5)
    time.sleep(0.6)  # passes run with the default retention (7 days): nothing goes
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (0, 40)

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    [f] = admin.incremental_alter_configs([res]).values()
    f.result(timeout=20)
    wait_until(lambda: confluent_watermarks(broker.bootstrap, topic, [0])[0] == (30, 40), 15,
               what="log start offset 30 after retention.ms was set")

    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    [f] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    entry = f.result(timeout=20)["retention.ms"]
    assert (entry.value, entry.source) == ("60000", 1), entry  # DYNAMIC_TOPIC_CONFIG
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (30, 40)


def test_a_partition_whose_records_are_all_past_retention_empties(broker_factory):
    """Kafka rolls the active segment when every segment is past retention and deletes
    it too: the log start offset reaches the end, and new records continue from there."""
    broker = broker_factory("--log-retention-check-interval-ms", "200")
    topic = "emptied"
    create(broker.bootstrap, topic, {"retention.ms": "60000", **SEGMENT})
    now = int(time.time() * 1000)
    # Segment 0 holds 0-9, the active segment 10 holds 10-14: all an hour old.
    produce_one_batch_each(broker.bootstrap, topic, [now - 3_600_000] * 15)
    wait_until(lambda: confluent_watermarks(broker.bootstrap, topic, [0])[0] == (15, 15), 15,
               what="log start offset 15 after retention")
    files = sorted(f.name for f in (broker.data_dir / f"{topic}-0").iterdir() if f.suffix == ".log")
    assert files == ["00000000000000000015.log"]
    broker.restart()
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (15, 15)
    assert produce_one_batch_each(broker.bootstrap, topic, [now]) == [15]
    assert consume(broker.bootstrap, topic, -2, 1) == [15]


def test_a_dynamic_broker_retention_applies_to_topics_without_their_own(broker_factory):
    """`kafka-configs --entity-type brokers --alter --add-config log.retention.ms=...`
    (KIP-226): topics that set no retention.ms follow it at once, topics that set one
    keep theirs, and it survives a restart."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)

    broker = broker_factory("--log-retention-check-interval-ms", "200")
    create(broker.bootstrap, "follows", SEGMENT)
    create(broker.bootstrap, "own", {"retention.ms": "-1", **SEGMENT})
    now = int(time.time() * 1000)
    for topic in ("follows", "own"):
        produce_one_batch_each(broker.bootstrap, topic, [now - 3_600_000] * 35 + [now] * 5)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    [f] = admin.incremental_alter_configs([res]).values()
    f.result(timeout=20)
    wait_until(lambda: confluent_watermarks(broker.bootstrap, "follows", [0])[0] == (30, 40), 15,
               what="log start offset 30 after the broker's log.retention.ms changed")
    time.sleep(0.6)
    assert confluent_watermarks(broker.bootstrap, "own", [0])[0] == (0, 40)

    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    [f] = admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")]).values()
    entry = f.result(timeout=20)["log.retention.ms"]
    assert (entry.value, entry.source) == ("60000", 2), entry  # DYNAMIC_BROKER_CONFIG
    [f] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "follows")]).values()
    entry = f.result(timeout=20)["retention.ms"]
    assert (entry.value, entry.source) == ("60000", 2), entry
