"""Client quotas (issue 14, KIP-546 / KIP-13 / KIP-219): kafka-configs.sh alters and
describes user and client-id quotas (defaults included), the values survive kill -9, and
a producer and a consumer over their byte-rate quotas are throttled (throttle_cb events,
achieved rate near the quota) while a client id without a quota is not.

The rates are measured over `--quota-window-num 2 --quota-window-size-seconds 1`, so a
client's first burst is at most one second's worth of its quota (with Kafka's default
11 windows the first 10 s worth go through at once); bounds are generous (1.5x).
"""
import os
import struct
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from helpers import REPO_ROOT, Reader, enc_str, frame, raw_connect, recv_frame, request_header_v1, wait_until

CLI_LIBS = REPO_ROOT / "tests/compat/kafka-cli/.cache/libs"
CLI_LOG4J = str(REPO_ROOT / "tests/compat/kafka-cli/log4j2.properties")

QUOTA = 512 * 1024  # bytes/s
TOTAL = 4 * 1024 * 1024  # bytes produced / consumed per client
VALUE = b"x" * 1024
WINDOWS = ("--quota-window-num", "2", "--quota-window-size-seconds", "1")


def configs(b, *args):
    cmd = ["java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           f"-Dlog4j2.configurationFile={CLI_LOG4J}", "-cp", f"{CLI_LIBS}/*",
           "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.bootstrap, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def alter_client_quota(b, client_id, key, value):
    """AlterClientQuotas v0 over a raw socket: sets `key` of client id `client_id`."""
    body = struct.pack(">i", 1)  # entries
    body += struct.pack(">i", 1) + enc_str("client-id") + enc_str(client_id)  # entity
    body += struct.pack(">i", 1) + enc_str(key) + struct.pack(">d?", float(value), False)  # ops
    body += struct.pack(">?", False)  # validate_only
    with raw_connect(b.bootstrap) as s:
        s.sendall(frame(request_header_v1(49, 0, 3) + body))
        r = Reader(recv_frame(s))
        assert r.i32() == 3
        r.i32()  # throttle_time_ms
        assert r.i32() == 1
        assert (r.i16(), r.string()) == (0, None)


def create_topic(b, name):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # kept alive until the result
    fs = admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])
    fs[name].result(15)


def produce(b, topic, client_id):
    """Produces TOTAL bytes of 1 KiB records; (seconds taken, throttle times seen in s)."""
    throttles = []
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": client_id, "linger.ms": 5,
                  "batch.size": 128 * 1024, "message.timeout.ms": 120000,
                  "throttle_cb": lambda e: throttles.append(e.throttle_time)})
    delivered = []
    start = time.monotonic()
    for _ in range(TOTAL // len(VALUE)):
        while True:
            try:
                p.produce(topic, VALUE, on_delivery=lambda err, m: delivered.append(err))
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(120) == 0
    elapsed = time.monotonic() - start
    p.poll(0.5)  # serve the last throttle events
    assert len(delivered) == TOTAL // len(VALUE) and set(delivered) == {None}
    return elapsed, throttles


def consume(b, topic, client_id):
    """Reads the TOTAL bytes back; (seconds taken, throttle times seen in s)."""
    throttles = []
    c = Consumer({"bootstrap.servers": b.bootstrap, "client.id": client_id,
                  "group.id": f"g-{client_id}", "enable.auto.commit": False,
                  "throttle_cb": lambda e: throttles.append(e.throttle_time)})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got = 0
        start = time.monotonic()
        deadline = start + 120
        while got < TOTAL and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got += len(m.value())
        elapsed = time.monotonic() - start
        assert got == TOTAL
        return elapsed, throttles
    finally:
        c.close()


def metric(b, name, quota_type):
    status, _, body = b.http_get("/metrics")
    assert status == 200
    total = 0
    for line in body.splitlines():
        if line.startswith(name + "{") and f'type="{quota_type}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.skipif(not CLI_LIBS.is_dir(), reason="Kafka CLI jars not set up (tests/compat/kafka-cli/setup)")
def test_kafka_configs_alters_and_describes_quotas_that_survive_kill9(broker_factory):
    b = broker_factory()
    out = configs(b, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152",
                  "--entity-type", "users", "--entity-name", "alice")
    assert "Completed updating config for user alice." in out, out
    configs(b, "--alter", "--add-config", "consumer_byte_rate=4096", "--entity-type", "clients",
            "--entity-default")
    configs(b, "--alter", "--add-config", "request_percentage=25", "--entity-type", "users",
            "--entity-default")
    configs(b, "--alter", "--add-config", "producer_byte_rate=2048", "--entity-type", "users",
            "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "c1")

    def check():
        out = configs(b, "--describe", "--entity-type", "users", "--entity-name", "alice")
        assert "Quota configs for user-principal 'alice' are" in out, out
        assert "producer_byte_rate=1048576.0" in out and "consumer_byte_rate=2097152.0" in out, out
        out = configs(b, "--describe", "--entity-type", "clients", "--entity-default")
        assert "Quota configs for the default client-id are consumer_byte_rate=4096.0" in out, out
        out = configs(b, "--describe", "--entity-type", "users", "--entity-default")
        assert "Quota configs for the default user-principal are request_percentage=25.0" in out, out
        out = configs(b, "--describe", "--entity-type", "users", "--entity-name", "alice",
                      "--entity-type", "clients", "--entity-name", "c1")
        assert "producer_byte_rate=2048.0" in out, out
        out = configs(b, "--describe", "--entity-type", "users")
        assert "Quota configs for user-principal 'alice' are" in out, out
        assert "Quota configs for the default user-principal are" in out, out

    check()
    b.kill9()
    b.start()
    check()

    # Removal.
    configs(b, "--alter", "--delete-config", "consumer_byte_rate", "--entity-type", "clients",
            "--entity-default")
    out = configs(b, "--describe", "--entity-type", "clients", "--entity-default")
    assert "consumer_byte_rate" not in out, out


def test_a_producer_over_its_quota_is_throttled_and_another_client_id_is_not(broker_factory):
    b = broker_factory(*WINDOWS)
    create_topic(b, "quota-p")
    alter_client_quota(b, "slow-producer", "producer_byte_rate", QUOTA)

    elapsed, throttles = produce(b, "quota-p", "slow-producer")
    assert throttles and max(throttles) > 0, "the throttled producer saw no throttle event"
    rate = TOTAL / elapsed
    assert rate < 1.5 * QUOTA, f"{rate:.0f} B/s over a {QUOTA} B/s quota ({elapsed:.1f} s)"
    assert metric(b, "shardlog_quota_throttled_total", "produce") > 0
    assert metric(b, "shardlog_quota_throttle_time_ms_total", "produce") > 0

    _, free_throttles = produce(b, "quota-p", "free-producer")
    assert free_throttles == [] or max(free_throttles) == 0


def test_a_consumer_over_its_quota_is_throttled_and_another_client_id_is_not(broker_factory):
    b = broker_factory(*WINDOWS)
    create_topic(b, "quota-c")
    produce(b, "quota-c", "loader")
    alter_client_quota(b, "slow-consumer", "consumer_byte_rate", QUOTA)

    elapsed, throttles = consume(b, "quota-c", "slow-consumer")
    assert throttles and max(throttles) > 0, "the throttled consumer saw no throttle event"
    rate = TOTAL / elapsed
    assert rate < 1.5 * QUOTA, f"{rate:.0f} B/s over a {QUOTA} B/s quota ({elapsed:.1f} s)"
    assert metric(b, "shardlog_quota_throttled_total", "fetch") > 0

    _, free_throttles = consume(b, "quota-c", "free-consumer")
    assert free_throttles == [] or max(free_throttles) == 0


def test_request_time_over_request_percentage_is_throttled_and_the_connection_muted(broker_factory):
    """ApiVersions v1 (which carries throttle_time_ms) in a loop from a client id whose
    `request_percentage` is tiny: a response soon carries a throttle (at most one window,
    1000 ms, as Kafka caps the request quota's), and the next request is answered only
    after it (the connection was muted); another client id is never throttled."""
    b = broker_factory(*WINDOWS)
    alter_client_quota(b, "busy", "request_percentage", 0.001)

    def api_versions(s, corr, client_id):
        s.sendall(frame(request_header_v1(18, 1, corr, client_id)))
        r = Reader(recv_frame(s))
        assert r.i32() == corr
        assert r.i16() == 0
        r.array(lambda r: (r.i16(), r.i16(), r.i16()))
        return r.i32()

    with raw_connect(b.bootstrap) as s:
        throttle = 0
        for corr in range(1, 2001):
            throttle = api_versions(s, corr, "busy")
            if throttle > 0:
                break
        assert 0 < throttle <= 1000, throttle
        start = time.monotonic()
        api_versions(s, 5000, "busy")
        waited_ms = (time.monotonic() - start) * 1000
        assert waited_ms >= 0.8 * throttle - 50, (waited_ms, throttle)

    with raw_connect(b.bootstrap) as s:
        assert all(api_versions(s, corr, "idle-client") == 0 for corr in range(1, 501))
    assert metric(b, "shardlog_quota_throttled_total", "request") > 0


def test_an_acks0_producer_over_its_quota_is_muted(broker_factory):
    """acks=0: no response carries the throttle; the broker still counts the requests
    and mutes the connection (the throttle counters move)."""
    b = broker_factory(*WINDOWS)
    create_topic(b, "quota-a0")
    alter_client_quota(b, "silent-producer", "producer_byte_rate", QUOTA)
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "silent-producer", "acks": 0,
                  "linger.ms": 5, "batch.size": 128 * 1024})
    for _ in range(TOTAL // len(VALUE)):
        while True:
            try:
                p.produce("quota-a0", VALUE)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0
    wait_until(lambda: metric(b, "shardlog_quota_throttled_total", "produce") > 0, 30,
               what="an acks=0 produce throttle")
    assert metric(b, "shardlog_quota_throttle_time_ms_total", "produce") > 0
