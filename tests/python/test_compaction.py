"""Compaction (`cleanup.policy=compact`) against the real binary with librdkafka: the
latest value per key survives with its offset, survives a restart and a kill -9, keyless
records are refused, and the group offsets log is compacted too.

The active segment is never cleaned (as in Kafka), so each test seals the last segment
of updates by `segment.ms`: after the updates it waits past `segment.ms` and produces one
sentinel record, whose append rolls a new segment. Everything before the sentinel is
then cleanable and the read-back is exact."""

from __future__ import annotations

import time

from helpers import wait_until

KEYS = 100
UPDATES = 100_000


def create(bootstrap: str, topic: str, config: dict) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config)],
                             operation_timeout=10, request_timeout=30)
    fs[topic].result(timeout=30)


def read_all(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from the beginning up to `end` (exclusive)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-tests-unused",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    out = []
    try:
        c.assign([TopicPartition(topic, 0, -2)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for m in c.consume(num_messages=1000, timeout=0.5):
                assert m.error() is None, m.error()
                out.append((m.offset(), m.key(), m.value()))
            if out and out[-1][0] >= end - 1:
                return out
    finally:
        c.close()
    raise AssertionError(f"read {len(out)} records, last {out[-1] if out else None}, want up to {end}")


def checkpoint_lines(broker, topic: str) -> list[int] | None:
    """The cleaner checkpoint: the cleaned offset, then the pending delete horizon (ms) if any."""
    try:
        return [int(l) for l in (broker.data_dir / f"{topic}-0" / "cleaner-offset-checkpoint").read_text().split()]
    except (FileNotFoundError, ValueError):
        return None


def checkpoint(broker, topic: str) -> int | None:
    lines = checkpoint_lines(broker, topic)
    return lines[0] if lines else None


def test_100000_updates_to_100_keys_read_back_as_the_100_latest_values(broker_factory):
    from confluent_kafka import Producer

    broker = broker_factory("--log-cleaner-backoff-ms", "200")
    topic = "changelog"
    create(broker.bootstrap, topic, {"cleanup.policy": "compact", "segment.bytes": "1048576",
                                     "segment.ms": "2000", "min.cleanable.dirty.ratio": "0.01"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "compression.type": "lz4"})
    for i in range(UPDATES):
        p.produce(topic, key=b"k%03d" % (i % KEYS), value=b"value-%06d" % i, partition=0)
        if i % 10_000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    time.sleep(2.2)  # past segment.ms: the sentinel's append rolls the last segment
    p.produce(topic, key=b"sentinel", value=b"end", partition=0)
    assert p.flush(30) == 0

    wait_until(lambda: checkpoint(broker, topic) == UPDATES, 60,
               what=f"the cleaner checkpoint at {UPDATES}")
    expected = [(o, b"k%03d" % (o % KEYS), b"value-%06d" % o) for o in range(UPDATES - KEYS, UPDATES)]
    expected.append((UPDATES, b"sentinel", b"end"))
    assert read_all(broker.bootstrap, topic, UPDATES + 1) == expected

    broker.restart()
    assert read_all(broker.bootstrap, topic, UPDATES + 1) == expected
    broker.kill9()
    broker.start()
    assert read_all(broker.bootstrap, topic, UPDATES + 1) == expected


def test_tombstones_go_after_delete_retention_ms_and_a_key_can_come_back(broker_factory):
    from confluent_kafka import Producer

    broker = broker_factory("--log-cleaner-backoff-ms", "200")
    topic = "tombstones"
    create(broker.bootstrap, topic, {"cleanup.policy": "compact", "segment.ms": "1000",
                                     "delete.retention.ms": "0", "min.cleanable.dirty.ratio": "0.01"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})

    def send(key: bytes, value: bytes | None) -> None:
        p.produce(topic, key=key, value=value, partition=0)
        assert p.flush(10) == 0

    send(b"a", b"1")       # 0
    send(b"b", b"2")       # 1
    send(b"a", None)       # 2: tombstone for a
    time.sleep(1.1)
    send(b"c", b"3")       # 3: rolls; 0-2 become cleanable
    # First pass: a's value goes, its tombstone stays with a delete horizon of now + 0 ms
    # (KIP-534). That horizon has passed at the next weighing, so a second pass drops the
    # tombstone without any new data, and the checkpoint no longer names a horizon.
    wait_until(lambda: checkpoint_lines(broker, topic) == [3], 20, what="first pass and horizon pass")
    assert read_all(broker.bootstrap, topic, 4) == [(1, b"b", b"2"), (3, b"c", b"3")]
    send(b"a", b"5")       # 4: a comes back
    time.sleep(1.1)
    send(b"d", b"4")       # 5: rolls; 3-4 become cleanable
    wait_until(lambda: checkpoint(broker, topic) == 5, 20, what="third pass")
    assert read_all(broker.bootstrap, topic, 6) == [(1, b"b", b"2"), (3, b"c", b"3"), (4, b"a", b"5"),
                                                   (5, b"d", b"4")]


def test_a_compacted_topic_refuses_records_without_a_key(broker_factory):
    from confluent_kafka import KafkaError, Producer

    broker = broker_factory()
    topic = "keyed-only"
    create(broker.bootstrap, topic, {"cleanup.policy": "compact"})
    errors = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "enable.idempotence": False,
                  "retries": 0})
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert [e.code() for e in errors] == [KafkaError.INVALID_RECORD], errors
    errors.clear()
    p.produce(topic, key=b"k", value=b"keyed", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert errors == [None]


def test_the_offsets_log_is_compacted_and_replays_to_the_latest_commit(broker_factory):
    """2,000 commits of one partition's offset into a 4 KiB-segment offsets log: after
    cleaning, the offsets partition holds the live keys plus at most the active segment,
    and a restart (replaying the compacted log) serves the last commit."""
    from confluent_kafka import Consumer, TopicPartition

    broker = broker_factory("--log-cleaner-backoff-ms", "200", "--offsets-topic-segment-bytes", "4096")
    topic = "committed"
    create(broker.bootstrap, topic, {})
    group = "compacted-commits"
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    for i in range(2000):
        c.commit(offsets=[TopicPartition(topic, 0, i)], asynchronous=False)
    c.close()

    def offsets_records() -> int:
        r = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "reader-unused",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        parts = r.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions
        total = 0
        for pid in parts:
            lo, hi = r.get_watermark_offsets(TopicPartition("__consumer_offsets", pid), timeout=10)
            if hi == 0:
                continue
            r.assign([TopicPartition("__consumer_offsets", pid, lo)])
            seen = 0
            deadline = time.monotonic() + 20
            last = -1
            while last < hi - 1 and time.monotonic() < deadline:
                for m in r.consume(num_messages=1000, timeout=0.5):
                    if m.error() is None:
                        seen += 1
                        last = m.offset()
            total += seen
        r.close()
        return total

    # Each commit record is about 100 bytes: a 4 KiB segment holds about 40.
    wait_until(lambda: offsets_records() < 60, 60, interval_s=0.5, what="the offsets log compacted")
    broker.restart()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    [tp] = c.committed([TopicPartition(topic, 0)], timeout=20)
    c.close()
    assert tp.offset == 1999


def test_max_compaction_lag_ms_rolls_the_active_segment_so_it_gets_cleaned(broker_factory):
    """Kafka rolls a compacted topic by min(segment.ms, max.compaction.lag.ms): with the
    default segment.ms (7 days) the updates still become cleanable."""
    from confluent_kafka import Producer

    broker = broker_factory("--log-cleaner-backoff-ms", "200")
    topic = "lagged"
    create(broker.bootstrap, topic, {"cleanup.policy": "compact", "max.compaction.lag.ms": "1000"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(100):
        p.produce(topic, key=b"k%d" % (i % 5), value=b"%d" % i, partition=0)
    assert p.flush(10) == 0
    time.sleep(1.2)
    p.produce(topic, key=b"sentinel", value=b"end", partition=0)
    assert p.flush(10) == 0
    wait_until(lambda: checkpoint(broker, topic) == 100, 20, what="the cleaner checkpoint at 100")
    expected = [(o, b"k%d" % (o % 5), b"%d" % o) for o in range(95, 100)] + [(100, b"sentinel", b"end")]
    assert read_all(broker.bootstrap, topic, 101) == expected


def test_the_offsets_topic_reports_its_real_configs_and_refuses_changes(broker_factory):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)

    broker = broker_factory("--offsets-topic-segment-bytes", "4096")
    create(broker.bootstrap, "t", {})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, "__consumer_offsets")
    [f] = admin.describe_configs([res]).values()
    configs = f.result(timeout=20)
    assert (configs["cleanup.policy"].value, configs["segment.bytes"].value) == ("compact", "4096")
    res = ConfigResource(ResourceType.TOPIC, "__consumer_offsets", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    [f] = admin.incremental_alter_configs([res]).values()
    try:
        f.result(timeout=20)
        raise AssertionError("altering __consumer_offsets was accepted")
    except Exception as e:  # KafkaException carrying the KafkaError
        err = e.args[0]
        assert err.code() == KafkaError.INVALID_REQUEST, err
