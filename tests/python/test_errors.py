"""Bad input gets a clear answer and loses nothing (issue 2)."""

from __future__ import annotations

import struct

import pytest

from helpers import (
    INVALID_TOPIC_EXCEPTION,
    UNKNOWN_TOPIC_OR_PARTITION,
    connection_closed_by_peer,
    enc_str,
    frame,
    raw_api_versions,
    raw_connect,
    raw_metadata_v1,
    recv_frame,
    request_header_v1,
    Reader,
)

UNSUPPORTED_VERSION = 35


def assert_broker_serves(broker) -> None:
    """The process is alive and a brand-new client gets proper answers."""
    from confluent_kafka.admin import AdminClient

    broker.assert_alive()
    apis = raw_api_versions(broker.bootstrap)
    for key in (0, 1, 2, 3, 18):  # Produce, Fetch, ListOffsets, Metadata, ApiVersions
        assert key in apis, f"ApiVersions does not advertise api key {key}: {sorted(apis)}"
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert len(md.brokers) == 1


# --------------------------------------------------------------------------------------
# unknown topic with auto-create off
# --------------------------------------------------------------------------------------


def test_unknown_topic_auto_create_off(broker_factory):
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka.admin import AdminClient

    broker = broker_factory("--auto-create-topics", "false")

    # The broker's own answer, no client logic in between (twice: the first must not create it)
    for _ in range(2):
        md = raw_metadata_v1(broker.bootstrap, ["no-such-topic"])
        assert md == {"no-such-topic": {"error": UNKNOWN_TOPIC_OR_PARTITION, "partitions": {}}}

    # librdkafka's metadata view
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    t = admin.list_topics(topic="no-such-topic", timeout=10).topics["no-such-topic"]
    assert t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART, t.error

    # A producer: librdkafka fails the message with the broker's UNKNOWN_TOPIC_OR_PART once
    # the topic is known not to exist (after topic.metadata.propagation.max.ms).
    errs = []
    p = Producer({
        "bootstrap.servers": broker.bootstrap,
        "topic.metadata.propagation.max.ms": 1000,
        "message.timeout.ms": 15000,
    })
    p.produce("no-such-topic", value=b"v", on_delivery=lambda err, msg: errs.append(err))
    assert p.flush(30) == 0
    assert len(errs) == 1 and errs[0] is not None, errs
    assert errs[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, errs[0]

    # still not created
    assert raw_metadata_v1(broker.bootstrap, ["no-such-topic"])["no-such-topic"]["error"] == \
        UNKNOWN_TOPIC_OR_PARTITION
    assert_broker_serves(broker)


# --------------------------------------------------------------------------------------
# topic names
# --------------------------------------------------------------------------------------


def create_topic_error(admin, name: str, partitions: int = 1):
    from confluent_kafka.admin import NewTopic

    fs = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)],
                             operation_timeout=10, request_timeout=30)
    try:
        fs[name].result(timeout=30)
        return None
    except Exception as e:  # KafkaException carrying a KafkaError
        return e.args[0].code() if e.args and hasattr(e.args[0], "code") else e


@pytest.mark.parametrize("name", ["bad topic!", "x" * 250, ".", "..", "a/b", "tab\tname", "ünïcode"])
def test_invalid_topic_name(broker, name):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert create_topic_error(admin, name) == KafkaError.TOPIC_EXCEPTION  # INVALID_TOPIC_EXCEPTION (17)
    # Metadata with auto-create on must not create it either
    md = raw_metadata_v1(broker.bootstrap, [name])
    assert md[name]["error"] == INVALID_TOPIC_EXCEPTION, md
    assert name not in admin.list_topics(timeout=10).topics
    assert_broker_serves(broker)


def test_topic_name_rules_and_collisions(broker):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    longest = "y" * 249
    assert create_topic_error(admin, longest) is None  # 249 characters is the limit, inclusive
    assert create_topic_error(admin, "Valid-name_1.2", partitions=3) is None
    assert create_topic_error(admin, "a.b") is None
    assert create_topic_error(admin, "a_b") == KafkaError.TOPIC_EXCEPTION  # collides with a.b
    assert create_topic_error(admin, "a.b") == KafkaError.TOPIC_ALREADY_EXISTS
    assert create_topic_error(admin, "Valid-name_1.2") == KafkaError.TOPIC_ALREADY_EXISTS

    md = raw_metadata_v1(broker.bootstrap, None)
    # (and the internal topic __consumer_offsets, created at the first start)
    assert {n for n in md} == {longest, "Valid-name_1.2", "a.b", "__consumer_offsets"}, sorted(md)
    assert md["Valid-name_1.2"] == {"error": 0, "partitions": {0: 0, 1: 0, 2: 0}}

    # and the catalog survives a restart with the same rules
    broker.restart()
    md = raw_metadata_v1(broker.bootstrap, None)
    # (and the internal topic __consumer_offsets, created at the first start)
    assert {n for n in md} == {longest, "Valid-name_1.2", "a.b", "__consumer_offsets"}, sorted(md)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert create_topic_error(admin, "a_b") == KafkaError.TOPIC_EXCEPTION
    assert create_topic_error(admin, "a.b") == KafkaError.TOPIC_ALREADY_EXISTS


# --------------------------------------------------------------------------------------
# raw frames
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [2_000_000_000, (100 << 20) + 1, -1, -2_000_000_000])
def test_bad_frame_length_closes_connection(broker, length):
    with raw_connect(broker.bootstrap) as bad:
        bad.sendall(struct.pack(">i", length) + b"\x00\x12\x00\x00")
        # another connection is unaffected while that one is being dealt with
        assert 18 in raw_api_versions(broker.bootstrap)
        closed, got = connection_closed_by_peer(bad, timeout=10)
        assert closed, f"frame length {length}: connection still open after 10s"
        assert got == b"", f"frame length {length}: unexpected response bytes {got[:64]!r}"
    assert_broker_serves(broker)


GARBAGE_REQUESTS = {
    # Metadata v1 claiming 1000 topics, then 2 bytes
    "metadata-truncated-array": request_header_v1(3, 1, 1) + struct.pack(">i", 1000) + b"\x00\x05",
    # Produce v3: transactional_id length 32767 with 3 bytes left
    "produce-string-past-end": request_header_v1(0, 3, 2) + b"\x7f\xff" + b"abc",
    # Fetch v4: fixed fields then a topics count of 0x41414141
    "fetch-huge-count": request_header_v1(1, 4, 3) + b"\x00" * 17 + b"AAAA" + b"garbage",
    # ApiVersions v3 (flexible): header v2 then an unterminated varint
    "apiversions-bad-varint": struct.pack(">hhi", 18, 3, 4) + enc_str("raw") + b"\x00" + b"\xff" * 6,
    # CreateTopics v2: one topic, name length -5
    "createtopics-negative-string": request_header_v1(19, 2, 5) + struct.pack(">i", 1) + b"\xff\xfb",
    # unknown API key
    "unknown-api-key": request_header_v1(9999, 0, 6),
    # header cut short: api key and half a version
    "truncated-header": b"\x00\x03\x00",
}


@pytest.mark.parametrize("case", sorted(GARBAGE_REQUESTS))
def test_garbage_request_closes_connection(broker, case):
    with raw_connect(broker.bootstrap) as bad:
        bad.sendall(frame(GARBAGE_REQUESTS[case]))
        closed, got = connection_closed_by_peer(bad, timeout=10)
        assert closed, f"{case}: connection still open after 10s (received {got[:64]!r})"
        assert got == b"", f"{case}: unexpected response bytes before close: {got[:64]!r}"
    assert_broker_serves(broker)


def test_unsupported_api_versions_version_gets_v0_answer(broker):
    """KIP-511: ApiVersions at a version the broker does not know -> UNSUPPORTED_VERSION with
    the broker's table, encoded as v0."""
    with raw_connect(broker.bootstrap) as s:
        s.sendall(frame(struct.pack(">hhi", 18, 999, 42) + enc_str("raw") + b"\x00"))
        r = Reader(recv_frame(s))
        assert r.i32() == 42
        assert r.i16() == UNSUPPORTED_VERSION
        apis = {k: (lo, hi) for k, lo, hi in r.array(lambda r: (r.i16(), r.i16(), r.i16()))}
    assert apis == raw_api_versions(broker.bootstrap)
    assert 18 in apis and apis[18][0] == 0
    assert_broker_serves(broker)


def test_a_transaction_timeout_above_the_brokers_maximum_fails_at_once(broker_factory):
    """InitProducerId with a transaction timeout above `--transaction-max-timeout-ms` gets
    INVALID_TRANSACTION_TIMEOUT, as Kafka answers: the producer fails at once, it does not
    retry until its own timeout."""
    import time

    import confluent_kafka as ck

    broker = broker_factory("--transaction-max-timeout-ms", "5000")
    p = ck.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-1",
                     "transaction.timeout.ms": 60000})
    start = time.monotonic()
    with pytest.raises(ck.KafkaException) as e:
        p.init_transactions(30)
    err = e.value.args[0]
    assert err.code() == ck.KafkaError.INVALID_TRANSACTION_TIMEOUT
    assert not err.retriable()
    assert time.monotonic() - start < 10
    assert_broker_serves(broker)
    # Within the maximum it works.
    ok = ck.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-2",
                      "transaction.timeout.ms": 5000})
    ok.init_transactions(30)
