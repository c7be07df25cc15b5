"""A partition whose log cannot be opened: KAFKA_STORAGE_ERROR (retriable) while it
cannot, served as soon as it can, with no restart."""

from __future__ import annotations

import time

import kafka.errors
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic


def send(bootstrap: str, topic: str, partition: int):
    p = KafkaProducer(bootstrap_servers=bootstrap, retries=0, acks=1)
    try:
        return p.send(topic, value=b"v", partition=partition).get(timeout=10)
    finally:
        p.close()


def test_a_partition_that_cannot_open_answers_storage_error_then_recovers(broker_factory):
    b = broker_factory()
    # A file where partition 2's directory must go: its log cannot be opened.
    blocker = b.data_dir / "blocked-2"
    blocker.write_bytes(b"not a directory")
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic("blocked", 4, 1)])
    assert send(b.bootstrap, "blocked", 1).offset == 0
    try:
        send(b.bootstrap, "blocked", 2)
        raise AssertionError("a partition without a log accepted a record")
    except kafka.errors.KafkaStorageError:
        pass
    # The cause goes away: the partition serves again (each failing request starts a
    # new try at opening, at most one a second).
    blocker.unlink()
    deadline = time.monotonic() + 15
    while True:
        try:
            assert send(b.bootstrap, "blocked", 2).offset == 0
            break
        except kafka.errors.KafkaStorageError:
            assert time.monotonic() < deadline, "the partition never opened"
            time.sleep(0.3)
    log = b.stderr_path.read_text()
    assert "opening partition log failed; KAFKA_STORAGE_ERROR until it opens" in log
    assert "partition log opened on a new try" in log
