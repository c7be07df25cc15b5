"""`--cache-prefault` against the real binary: each shard faults in its share of
`--cache-bytes` at start-up (one log line per shard says how much), the broker's resident
memory holds it, records produced through the prefaulted (and, past the budget,
recycled) buffers read back exactly, and `--cache-prefault false` faults nothing in
ahead of use."""

from __future__ import annotations

import re
import time

from helpers import confluent_consume_all, wait_until

LINE = re.compile(r"batch cache memory faulted in shard=(\d+) buffers=(\d+) buffer_bytes=(\d+) "
                  r"budget=(\d+)")


def prefault_lines(broker) -> dict[int, tuple[int, int, int]]:
    text = broker.stderr_path.read_text(errors="replace")
    return {int(m[1]): (int(m[2]), int(m[3]), int(m[4])) for m in LINE.finditer(text)}


def wait_prefaulted(broker) -> dict[int, tuple[int, int, int]]:
    return wait_until(lambda: len(prefault_lines(broker)) == 2 and prefault_lines(broker), 30,
                      what="both shards' prefault lines")


def resident_bytes(broker) -> int:
    status = open(f"/proc/{broker.proc.pid}/status").read()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status)[1]) * 1024


def idle_bytes(broker) -> dict[int, int]:
    status, _, body = broker.http_get("/metrics")
    assert status == 200
    found = re.findall(r'^shardlog_cache_idle_bytes\{shard="(\d+)"\} (\d+)$', body, re.M)
    return {int(shard): int(v) for shard, v in found}


def produce_and_read_back(bootstrap: str, topic: str, n: int) -> None:
    """`n` records of about 1 KiB over 4 partitions, acks=all, read back from offset 0:
    every value, in order."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    expected: dict[int, list[bytes]] = {part: [] for part in range(4)}
    for i in range(n):
        value = b"%08d" % i + bytes([i % 251]) * 1000
        p.produce(topic, value=value, partition=i % 4)
        expected[i % 4].append(value)
    assert p.flush(30) == 0
    got = confluent_consume_all(bootstrap, topic, {part: len(v) for part, v in expected.items()})
    for part in range(4):
        assert [g.rec.value for g in got[part]] == expected[part], f"partition {part}"


def test_each_shard_faults_in_its_share_of_the_cache(broker_factory):
    cache_bytes = 256 << 20  # 128 MiB per shard on 2 shards
    b = broker_factory("--cache-bytes", str(cache_bytes))
    for shard, line in wait_prefaulted(b).items():
        # 4 MiB buffers: a read window (and, with no partition yet, the arena size too).
        assert line == (32, 4 << 20, cache_bytes // 2), f"shard {shard}"
    assert resident_bytes(b) >= cache_bytes
    assert idle_bytes(b) == {0: cache_bytes // 2, 1: cache_bytes // 2}
    # Offset commits open the groups' internal logs, whose own small caches share the
    # shard's buffer pool: the prefaulted memory must stay (it once shrank to 16 buffers).
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("c", num_partitions=2, replication_factor=1)])["c"].result(30)
    for group in "abcdef":
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("c", 0, 0)], asynchronous=False)
        c.close()
    # (The offsets log's first arena is a new allocation: the pool gives back at most one
    # buffer so that idle plus new memory stays within the budget.)
    assert all(v >= cache_bytes // 2 - (4 << 20) for v in idle_bytes(b).values()), idle_bytes(b)
    produce_and_read_back(b.bootstrap, "pf", 20_000)


def test_no_prefault_when_no_data_partition_may_be_cached(broker_factory):
    b = broker_factory("--cache-bytes", str(64 << 20), "--partition-cache-bytes", "0")
    time.sleep(1)  # a prefault of 32 MiB per shard takes a few ms
    assert prefault_lines(b) == {}
    assert idle_bytes(b) == {0: 0, 1: 0}


def test_records_pass_through_prefaulted_and_recycled_buffers(broker_factory):
    # 8 MiB per shard in two buffers of a read window (4 MiB: the budget holds one),
    # though its arenas are 1 MiB; 20 MB produced: the cache evicts and reuses them.
    b = broker_factory("--cache-bytes", str(16 << 20))
    for shard, line in wait_prefaulted(b).items():
        assert line == (2, 4 << 20, 8 << 20), f"shard {shard}"
    produce_and_read_back(b.bootstrap, "pf-small", 20_000)


def test_prefault_off_faults_in_nothing_ahead(broker_factory):
    cache_bytes = 256 << 20
    b = broker_factory("--cache-bytes", str(cache_bytes), "--cache-prefault", "false")
    assert prefault_lines(b) == {}
    assert resident_bytes(b) < cache_bytes // 2
