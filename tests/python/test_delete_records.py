"""DeleteRecords (API 21) against the real binary with librdkafka's AdminClient: the log
start offset moves inside a batch, -1 means the high watermark, an offset past it is
OFFSET_OUT_OF_RANGE, a compacted topic refuses with POLICY_VIOLATION, and the start
survives both a clean restart and kill -9.

Batches are exact: each `flush` sends the records produced before it as one batch
(`linger.ms` is large, so nothing leaves earlier), so the new start falls inside a batch
where the test says it does."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from helpers import confluent_watermarks
from test_retention import consume, create


def produce_batches(bootstrap: str, topic: str, sizes: list[int], keyed: bool = False) -> list[int]:
    """Sends `sizes[i]` records as batch i to partition 0 (with keys `k<n>` when `keyed`:
    a compacted topic refuses records without one); returns every record's offset."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 60_000, "enable.idempotence": False})
    offsets: list[int] = []

    def on_delivery(err, msg):
        assert err is None, err
        offsets.append(msg.offset())

    n = 0
    for size in sizes:
        for _ in range(size):
            key = b"k%d" % n if keyed else None
            p.produce(topic, key=key, value=b"v%d" % n, partition=0, on_delivery=on_delivery)
            n += 1
        assert p.flush(10) == 0
    return offsets


def delete_records(bootstrap: str, topic: str, offset: int):
    """The low watermark DeleteRecords returns for partition 0, or its KafkaError."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    [f] = admin.delete_records([TopicPartition(topic, 0, offset)], request_timeout=15).values()
    try:
        return f.result(timeout=20).low_watermark
    except KafkaException as e:
        return e.args[0]


def test_delete_records_moves_the_start_inside_a_batch_and_it_survives_restarts(broker_factory):
    broker = broker_factory()
    topic = "trimmed"
    create(broker.bootstrap, topic, {})
    # Batches 0-4, 5-9, 10-14.
    assert produce_batches(broker.bootstrap, topic, [5, 5, 5]) == list(range(15))

    assert delete_records(broker.bootstrap, topic, 7) == 7
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (7, 15)
    # The batch 5-9 is served whole; the consumer skips 5 and 6, as with Kafka.
    assert consume(broker.bootstrap, topic, -2, 8) == list(range(7, 15))
    [err] = consume(broker.bootstrap, topic, 6, 1)
    assert err.code() == KafkaError._AUTO_OFFSET_RESET, err
    # Lower than the start: nothing moves, the answer is the current start.
    assert delete_records(broker.bootstrap, topic, 3) == 7
    err = delete_records(broker.bootstrap, topic, 16)
    assert err.code() == KafkaError.OFFSET_OUT_OF_RANGE, err

    broker.restart()
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (7, 15)
    assert delete_records(broker.bootstrap, topic, 12) == 12
    broker.kill9()
    broker.start()
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (12, 15)
    assert consume(broker.bootstrap, topic, -2, 3) == [12, 13, 14]

    # -1: up to the high watermark; the log goes on from there.
    assert delete_records(broker.bootstrap, topic, -1) == 15
    assert produce_batches(broker.bootstrap, topic, [2]) == [15, 16]
    assert confluent_watermarks(broker.bootstrap, topic, [0])[0] == (15, 17)


def test_delete_records_on_a_compacted_topic_is_a_policy_violation(broker_factory):
    broker = broker_factory()
    create(broker.bootstrap, "compacted", {"cleanup.policy": "compact"})
    produce_batches(broker.bootstrap, "compacted", [3], keyed=True)
    err = delete_records(broker.bootstrap, "compacted", 2)
    assert err.code() == KafkaError.POLICY_VIOLATION, err
    assert confluent_watermarks(broker.bootstrap, "compacted", [0])[0] == (0, 3)
