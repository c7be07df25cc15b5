"""The acceptance scenario (issue 2), once with librdkafka (confluent-kafka) and once with
kafka-python:

create a topic with 8 partitions; two producers on separate connections send 100,000
records together (keys, null keys, headers, empty and null values, every compression
codec); consume everything back from offset 0 with assign() (no consumer group) and
assert byte-identical records, per-partition order, contiguous offsets and high
watermarks; restart the broker (SIGTERM, same port and data dir) and read it all again.

Per-partition order is known exactly: producer 0 writes only the even partitions and
producer 1 only the odd ones, so every partition has a single writer (both producers are
still in flight at the same time, on their own connections). The codecs run as five
phases of 20,000 records (10,000 per producer), each phase with two new producers.
"""

from __future__ import annotations

import dataclasses
import random
import time

from helpers import (
    Expected,
    assert_matches,
    confluent_consume_all,
    confluent_watermarks,
    kafka_python_consume_all,
    kafka_python_offsets,
    make_record,
)

PARTITIONS = 8
TOTAL = 100_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_PHASE = TOTAL // len(CODECS)
# producer 0 -> even partitions, producer 1 -> odd partitions; uneven weights so every
# partition ends with a different count
PRODUCER_PARTITIONS = {0: [0, 2, 4, 6], 1: [1, 3, 5, 7]}
WEIGHTS = [1, 2, 3, 4]
TS_BASE = 1_700_000_000_000


def plan(seed: int, allow_null_header_values: bool):
    """[(codec, [(producer, partition, Rec), ...]), ...] and the Expected log.
    allow_null_header_values=False also avoids records with both key and value null
    (kafka-python can send neither)."""
    rng = random.Random(seed)
    expected = Expected()
    phases = []
    i = 0
    for codec in CODECS:
        sends = []
        for _ in range(PER_PHASE):
            prod = i % 2
            p = rng.choices(PRODUCER_PARTITIONS[prod], WEIGHTS)[0]
            rec = make_record(rng, i, TS_BASE, allow_null_header_values)
            if not allow_null_header_values and rec.key is None and rec.value is None:
                # kafka-python refuses a record with neither key nor value (client-side check)
                rec = dataclasses.replace(rec, value=b"")
            sends.append((prod, p, rec))
            expected.add(p, rec)
            i += 1
        phases.append((codec, sends))
    assert expected.total() == TOTAL and len(expected.partitions) == PARTITIONS
    return phases, expected


# --------------------------------------------------------------------------------------
# librdkafka
# --------------------------------------------------------------------------------------


def confluent_create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                             operation_timeout=10, request_timeout=30)
    fs[topic].result(timeout=30)
    md = admin.list_topics(topic=topic, timeout=10)
    t = md.topics[topic]
    assert t.error is None, f"metadata error for {topic}: {t.error}"
    assert sorted(t.partitions) == list(range(partitions))


def confluent_produce(bootstrap: str, topic: str, phases) -> None:
    from confluent_kafka import Producer

    errors = []
    delivered = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors.append((msg.partition(), str(err)))
        else:
            delivered[0] += 1

    for codec, sends in phases:
        producers = [
            Producer({
                "bootstrap.servers": bootstrap,
                "client.id": f"scenario-{codec}-{n}",
                "compression.type": codec,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 60000,
            })
            for n in (0, 1)
        ]
        for prod, p, rec in sends:
            kwargs = dict(value=rec.value, key=rec.key, partition=p, timestamp=rec.timestamp,
                          on_delivery=on_delivery)
            if rec.headers:
                kwargs["headers"] = list(rec.headers)
            deadline = time.monotonic() + 60
            while True:
                try:
                    producers[prod].produce(topic, **kwargs)
                    break
                except BufferError:
                    assert time.monotonic() < deadline, "producer queue stayed full for 60s"
                    producers[prod].poll(0.05)
            producers[prod].poll(0)
        for n, pr in enumerate(producers):
            left = pr.flush(120)
            assert left == 0, f"codec {codec}: producer {n} still has {left} undelivered messages after 120s"
        assert not errors, f"codec {codec}: {len(errors)} delivery errors, first: {errors[:5]}"
    assert delivered[0] == TOTAL


def test_scenario_confluent(broker):
    topic = "scenario"
    phases, expected = plan(seed=1, allow_null_header_values=True)
    confluent_create_topic(broker.bootstrap, topic, PARTITIONS)
    confluent_produce(broker.bootstrap, topic, phases)

    counts = expected.counts()
    want_marks = {p: (0, counts[p]) for p in range(PARTITIONS)}

    assert confluent_watermarks(broker.bootstrap, topic, range(PARTITIONS)) == want_marks
    assert_matches(expected, confluent_consume_all(broker.bootstrap, topic, counts), "confluent read")

    broker.restart()

    assert confluent_watermarks(broker.bootstrap, topic, range(PARTITIONS)) == want_marks, "after restart"
    assert_matches(expected, confluent_consume_all(broker.bootstrap, topic, counts),
                   "confluent read after restart")
    # the other client reads the same bytes
    assert_matches(expected, kafka_python_consume_all(broker.bootstrap, topic, counts),
                   "kafka-python read (of confluent-produced data) after restart")


# --------------------------------------------------------------------------------------
# kafka-python
# --------------------------------------------------------------------------------------


def kafka_python_create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name=topic, num_partitions=partitions, replication_factor=1)],
                            timeout_ms=10000)
    finally:
        admin.close()


def kafka_python_produce(bootstrap: str, topic: str, phases) -> None:
    from kafka import KafkaProducer

    errors = []
    delivered = [0]

    def ok(_md):
        delivered[0] += 1

    def err(e):
        errors.append(repr(e))

    for codec, sends in phases:
        producers = [
            KafkaProducer(
                bootstrap_servers=bootstrap,
                client_id=f"scenario-kp-{codec}-{n}",
                compression_type=None if codec == "none" else codec,
                acks="all",
                linger_ms=5,
                max_in_flight_requests_per_connection=5,
                request_timeout_ms=30000,
                max_block_ms=60000,
            )
            for n in (0, 1)
        ]
        try:
            for prod, p, rec in sends:
                fut = producers[prod].send(topic, value=rec.value, key=rec.key, partition=p,
                                           headers=list(rec.headers), timestamp_ms=rec.timestamp)
                fut.add_callback(ok)
                fut.add_errback(err)
            for pr in producers:
                pr.flush(timeout=120)
        finally:
            for pr in producers:
                pr.close(timeout=30)
        assert not errors, f"codec {codec}: {len(errors)} send errors, first: {errors[:5]}"
    assert delivered[0] == TOTAL


def test_scenario_kafka_python(broker):
    topic = "scenario-kp"
    phases, expected = plan(seed=2, allow_null_header_values=False)  # kafka-python: header values are bytes
    kafka_python_create_topic(broker.bootstrap, topic, PARTITIONS)
    kafka_python_produce(broker.bootstrap, topic, phases)

    counts = expected.counts()
    want_marks = {p: (0, counts[p]) for p in range(PARTITIONS)}

    assert kafka_python_offsets(broker.bootstrap, topic, range(PARTITIONS)) == want_marks
    assert_matches(expected, kafka_python_consume_all(broker.bootstrap, topic, counts), "kafka-python read")

    broker.restart()

    assert kafka_python_offsets(broker.bootstrap, topic, range(PARTITIONS)) == want_marks, "after restart"
    assert_matches(expected, kafka_python_consume_all(broker.bootstrap, topic, counts),
                   "kafka-python read after restart")
    assert_matches(expected, confluent_consume_all(broker.bootstrap, topic, counts),
                   "confluent read (of kafka-python-produced data) after restart")
