"""The metrics endpoint (`--metrics-listen`, issue 13): a scrape during a real
produce / consume / group run counts exactly what the clients did, and the whole
output is accepted by the Prometheus project's own text-format parser
(`prometheus_client.parser`).

Counts are asserted exactly where the clients make them exact: records appended and
fetched (one consumer reading each record once), bytes appended (equal to the bytes
stored, which the broker reports separately), raw requests sent on a socket, the
error codes of hand-made requests, the group's state and members.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from typing import Dict, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from helpers import (Reader, enc_str, frame, raw_connect, recv_frame, request_header_v1,
                     wait_until)

TOPIC = "metrics-topic"
GROUP = "metrics-group"
RECORDS = 2000


Samples = Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]


def scrape(broker) -> Samples:
    """Every sample of /metrics by (name, sorted labels); the parser must accept all."""
    status, content_type, body = broker.http_get("/metrics")
    assert status == 200, body
    assert content_type.startswith("text/plain; version=0.0.4"), content_type
    samples: Samples = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of `name` over the samples whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items()
               if n == name and all((k, want) in ls for k, want in labels.items()))


def create_topic(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(TOPIC, num_partitions=partitions, replication_factor=1)],
                             operation_timeout=30)
    fs[TOPIC].result(30)


def test_health_and_readiness(broker):
    assert broker.http_get("/healthz")[0] == 200
    status, _, body = broker.http_get("/readyz")
    assert (status, body) == (200, "ready\n")
    assert broker.http_get("/nope")[0] == 404


def test_a_scrape_counts_what_the_clients_did(broker):
    from confluent_kafka import Consumer, Producer
    create_topic(broker.bootstrap, partitions=4)
    before = scrape(broker)
    assert total(before, "shardlog_shards") == 2
    assert total(before, "shardlog_topic_records_in_total", topic=TOPIC) == 0

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                         "compression.type": "lz4"})
    for i in range(RECORDS):
        producer.produce(TOPIC, key=str(i % 97).encode(), value=(b"v%05d" % i) * 20,
                         partition=i % 4)
    assert producer.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    got = 0
    deadline = time.monotonic() + 60
    while got < RECORDS and time.monotonic() < deadline:
        m = consumer.poll(1.0)
        if m is not None and m.error() is None:
            got += 1
    assert got == RECORDS
    consumer.commit(asynchronous=False)

    s = scrape(broker)
    assert total(s, "shardlog_topic_records_in_total", topic=TOPIC) == RECORDS
    # Every byte appended is stored (no retention, no compaction on this topic).
    bytes_in = total(s, "shardlog_topic_bytes_in_total", topic=TOPIC)
    assert bytes_in == total(s, "shardlog_log_size_bytes") > RECORDS * 5
    # One consumer from offset 0 fetches every batch once.
    assert total(s, "shardlog_topic_records_out_total", topic=TOPIC) == RECORDS
    assert total(s, "shardlog_topic_bytes_out_total", topic=TOPIC) == bytes_in
    assert total(s, "shardlog_partitions") == 4
    # Per partition: records went to partition i % 4, so each moved bytes both ways.
    for p in range(4):
        p_in = total(s, "shardlog_partition_bytes_in_total", topic=TOPIC, partition=str(p))
        assert p_in > 0 and p_in == total(s, "shardlog_partition_bytes_out_total", topic=TOPIC,
                                          partition=str(p)), p
    assert total(s, "shardlog_partition_bytes_in_total", topic=TOPIC) == bytes_in
    # One segment per partition (far below --segment-bytes).
    assert total(s, "shardlog_log_segments") == 4
    # Idle moments in the run: every core slept in the kernel at least once.
    for shard in ("0", "1"):
        assert total(s, "shardlog_executor_parks_total", shard=shard) >= 1, shard
        assert total(s, "shardlog_executor_parked_seconds_total", shard=shard) > 0, shard

    # Every answered request is in its API's histograms, once per phase.
    for api in ("Produce", "Fetch", "Metadata", "OffsetCommit", "JoinGroup", "SyncGroup"):
        n = total(s, "shardlog_requests_total", api=api)
        assert n >= 1, api
        for phase in ("queue", "handle", "send"):
            count = total(s, "shardlog_request_duration_seconds_count", api=api, phase=phase)
            assert count == n, (api, phase)
            assert total(s, "shardlog_request_duration_seconds_bucket", api=api, phase=phase,
                         le="+Inf") == n

    # The group is Stable with its one member while the consumer is in it.
    assert total(s, "shardlog_consumer_groups", type="classic", state="Stable") == 1
    assert total(s, "shardlog_consumer_group_members", group=GROUP) == 1
    assert total(s, "shardlog_connections_open") >= 2
    assert total(s, "shardlog_data_dir_free_bytes") > 0
    assert total(s, "shardlog_executor_busy_seconds_total") > 0
    assert total(s, "shardlog_log_duration_seconds_count", op="append") >= 4
    assert total(s, "shardlog_log_duration_seconds_count", op="write") >= 1
    assert total(s, "shardlog_cache_hits_total") + total(s, "shardlog_cache_misses_total") >= 4

    # Consumer lag: committed offsets are the end of each partition, then 10 records more.
    assert total(s, "shardlog_consumer_group_committed_offset", group=GROUP, topic=TOPIC) == RECORDS
    assert total(s, "shardlog_consumer_group_lag", group=GROUP, topic=TOPIC) == 0
    for i in range(10):
        producer.produce(TOPIC, value=b"late", partition=i % 4)
    assert producer.flush(30) == 0
    s = scrape(broker)
    assert total(s, "shardlog_consumer_group_lag", group=GROUP, topic=TOPIC) == 10
    assert total(s, "shardlog_consumer_group_lag", group=GROUP, topic=TOPIC, partition="0") == 3

    consumer.close()
    wait_until(lambda: total(scrape(broker), "shardlog_consumer_groups", type="classic",
                             state="Empty") == 1, 30, what="the group to be Empty")
    s = scrape(broker)
    assert total(s, "shardlog_consumer_group_members", group=GROUP) == 0


def api_versions_v0(sock: socket.socket, correlation_id: int) -> None:
    sock.sendall(frame(request_header_v1(18, 0, correlation_id)))
    r = Reader(recv_frame(sock))
    assert r.i32() == correlation_id
    assert r.i16() == 0


def test_raw_requests_and_their_errors_are_counted_exactly(broker):
    before = scrape(broker)
    with raw_connect(broker.bootstrap) as sock:
        for i in range(5):
            api_versions_v0(sock, i)
        # Metadata v1 for two invalid topic names: two INVALID_TOPIC_EXCEPTION codes.
        body = struct.pack(">i", 2) + enc_str("bad name!") + enc_str("also bad?")
        sock.sendall(frame(request_header_v1(3, 1, 99) + body))
        r = Reader(recv_frame(sock))
        assert r.i32() == 99
    after = scrape(broker)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert delta("shardlog_requests_total", api="ApiVersions", version="0") == 5
    assert delta("shardlog_requests_total", api="Metadata", version="1") == 1
    assert delta("shardlog_request_errors_total", api="Metadata",
                 error="INVALID_TOPIC_EXCEPTION") == 2
    assert delta("shardlog_request_errors_total", api="ApiVersions") == 0
    wait_until(lambda: total(scrape(broker), "shardlog_connections_closed_total")
               == total(scrape(broker), "shardlog_connections_accepted_total"), 10,
               what="the raw connection to be counted closed")


def test_connections_the_broker_closes_are_counted_by_reason(broker):
    from helpers import connection_closed_by_peer
    for length in (-5, 1 << 30):  # negative, and over --max-request-bytes
        with raw_connect(broker.bootstrap) as sock:
            sock.sendall(struct.pack(">i", length))
            assert connection_closed_by_peer(sock)[0]
    with raw_connect(broker.bootstrap) as sock:
        sock.sendall(frame(request_header_v1(18, 0, 1)[:5]))  # a header cut short
        assert connection_closed_by_peer(sock)[0]
    s = scrape(broker)
    assert total(s, "shardlog_connections_closed_by_broker_total", reason="bad_frame_length") == 2
    assert total(s, "shardlog_connections_closed_by_broker_total", reason="bad_request_header") == 1
    assert total(s, "shardlog_connections_closed_by_broker_total", reason="request_refused") == 0


def produce_acks0(sock: socket.socket, topic: str, partition: int, correlation_id: int) -> None:
    """Sends a Produce v3 request with acks=0 (no response comes) of one one-record batch."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=None, key=None, value=b"fire and forget", headers=[])
    batch = bytes(builder.build())
    body = (enc_str(None) + struct.pack(">hi", 0, 30_000) + struct.pack(">i", 1) + enc_str(topic)
            + struct.pack(">ii", 1, partition) + struct.pack(">i", len(batch)) + batch)
    sock.sendall(frame(request_header_v1(0, 3, correlation_id) + body))


def test_a_failed_acks0_produce_closes_the_connection_and_is_counted(broker):
    """Kafka answers no acks=0 produce, so it tells a client about a failure by closing
    the connection (the client then refreshes its metadata); the error is counted."""
    from helpers import connection_closed_by_peer
    create_topic(broker.bootstrap, partitions=1)
    before = scrape(broker)
    with raw_connect(broker.bootstrap) as sock:
        produce_acks0(sock, TOPIC, 0, 1)
        # Appended, and the connection serves on: the next request is answered.
        api_versions_v0(sock, 2)
        produce_acks0(sock, TOPIC, 7, 3)  # no partition 7
        closed, _ = connection_closed_by_peer(sock)
        assert closed
    after = scrape(broker)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert delta("shardlog_topic_records_in_total", topic=TOPIC) == 1
    assert delta("shardlog_requests_total", api="Produce", version="3") == 2
    assert delta("shardlog_request_errors_total", api="Produce",
                 error="UNKNOWN_TOPIC_OR_PARTITION") == 1
    assert delta("shardlog_connections_closed_by_broker_total",
                 reason="produce_failed_without_acks") == 1
    assert "closing connection: an acks=0 produce request failed" in broker.stderr_path.read_text()


def test_deleted_topics_leave_the_metrics(broker):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient
    create_topic(broker.bootstrap, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce(TOPIC, value=b"x", partition=i % 2)
    assert producer.flush(30) == 0
    assert total(scrape(broker), "shardlog_topic_records_in_total", topic=TOPIC) == 10
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([TOPIC], operation_timeout=30)[TOPIC].result(30)
    wait_until(lambda: ("shardlog_topic_records_in_total", (("topic", TOPIC),))
               not in scrape(broker), 10, what="the deleted topic's series to go")


def test_a_taken_metrics_port_does_not_stop_the_broker(broker_factory):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        b = broker_factory(f"--metrics-listen=127.0.0.1:{port}")
        from helpers import raw_api_versions
        assert 18 in raw_api_versions(b.bootstrap)
        log = b.stderr_path.read_text()
        assert "cannot listen for metrics; running without the metrics endpoint" in log


def test_an_empty_metrics_listen_turns_the_endpoint_off(broker_factory):
    b = broker_factory("--metrics-listen=")
    log = b.stderr_path.read_text()
    assert "metrics endpoint" not in log
    assert "cannot listen for metrics" not in log


def read_pty(fd: int, timeout_s: float) -> bytes:
    """Everything written to the pseudo-terminal `fd` until its child side closes."""
    import os
    import select
    out = bytearray()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every child side is closed
            break
        if not chunk:
            break
        out += chunk
    return bytes(out)


def test_top_shows_a_live_view_in_a_terminal(broker):
    import os
    import pty
    import subprocess
    import threading
    from confluent_kafka import Producer
    from helpers import shardlog_bin
    create_topic(broker.bootstrap, partitions=2)
    stop = threading.Event()

    def produce():
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        while not stop.is_set():
            for i in range(200):
                p.produce(TOPIC, value=b"x" * 100, partition=i % 2)
            p.flush(10)
            time.sleep(0.05)

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    master, slave = pty.openpty()
    try:
        top = subprocess.Popen([str(shardlog_bin()), "top", "--metrics", f"127.0.0.1:{broker.metrics_port}",
                                "--interval", "0.5", "--iterations", "3"],
                               stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        out = read_pty(master, 30).decode("utf-8", "replace")
        assert top.wait(30) == 0, out
    finally:
        stop.set()
        t.join(15)
        os.close(master)
    # A terminal gets the screen cleared before each of the 3 refreshes.
    assert out.count("\x1b[2J") == 3, out
    last = out.rsplit("\x1b[2J", 1)[1]
    for heading in ("shard", "busy %", "requests/s", "MB/s in", "api", "p99 handle ms", "topic"):
        assert heading in last, (heading, last)
    assert "Produce" in last and TOPIC in last, last
    # The busiest partitions (both written), then the busiest topics.
    rows = [l.split() for l in last.splitlines() if TOPIC in l]
    assert len(rows) == 3, last
    assert sorted(r[2] for r in rows[:2]) == ["0", "1"], last
    # The producer was writing during the interval: MB/s in is not 0.
    assert all(float(r[3]) > 0 for r in rows[:2]), last
    assert float(rows[2][2]) > 0, last


def test_top_fails_with_a_clear_message_without_an_endpoint():
    import subprocess
    from helpers import shardlog_bin, free_port
    r = subprocess.run([str(shardlog_bin()), "top", "--metrics", f"127.0.0.1:{free_port()}", "--iterations", "1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert r.stderr.startswith("shardlog top: cannot read http://127.0.0.1:"), r.stderr


def run_top(*args: str):
    import subprocess
    from helpers import shardlog_bin
    return subprocess.run([str(shardlog_bin()), "top", *args], capture_output=True, text=True,
                          timeout=60)


@contextlib.contextmanager
def http_server_of(body: bytes):
    """An HTTP server on a free port of 127.0.0.1 answering every GET with `body`;
    yields its port."""
    import http.server
    import threading

    class Fixed(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


def test_top_refuses_what_is_not_a_broker_endpoint():
    r = run_top("--metrics", "localhost", "--iterations", "1")
    assert r.returncode == 1
    assert r.stderr == 'shardlog top: --metrics "localhost" is not host:port (e.g. 127.0.0.1:9644)\n'
    r = run_top("--iterations", "0")
    assert r.returncode == 2 and "--iterations" in r.stderr, r.stderr

    with http_server_of(b"# TYPE up gauge\nup 1\n") as port:
        r = run_top("--metrics", f"127.0.0.1:{port}", "--iterations", "1")
    assert r.returncode == 1
    assert r.stderr == (f"shardlog top: http://127.0.0.1:{port}/metrics has no shardlog metrics: "
                        "is it a broker's --metrics-listen?\n"), r.stderr


def test_top_reads_a_scrape_larger_than_ten_mib():
    """A broker with tens of thousands of lag series serves more than ureq's default
    body limit (10 MiB); top reads it."""
    lines = ["# TYPE shardlog_shards gauge", "shardlog_shards 2",
             "# TYPE shardlog_consumer_group_lag gauge"]
    lines += [f'shardlog_consumer_group_lag{{group="g{i}",topic="t",partition="0"}} {i}'
              for i in range(200_000)]
    body = ("\n".join(lines) + "\n").encode()
    assert len(body) > 11 << 20
    with http_server_of(body) as port:
        r = run_top("--metrics", f"127.0.0.1:{port}", "--interval", "0.1", "--iterations", "1")
    assert r.returncode == 0, r.stderr
    assert "shardlog top: 127.0.0.1:" in r.stdout, r.stdout


def test_json_logs_are_one_object_per_line(broker_factory):
    import json
    b = broker_factory("--log-format", "json")
    from helpers import raw_api_versions
    assert 18 in raw_api_versions(b.bootstrap)
    b.stop()
    lines = [l for l in b.stderr_path.read_text().splitlines() if l.strip()]
    events = [json.loads(l) for l in lines]  # every line is one JSON object
    messages = [e["fields"]["message"] for e in events]
    assert "starting shardlog" in messages and "stopped cleanly" in messages, messages
    start = next(e for e in events if e["fields"]["message"] == "starting shardlog")
    assert start["level"] == "INFO" and start["fields"]["nr_shards"] == 2, start
