"""A restarted broker reading a topic back from the disk stays within `--cache-bytes` plus
its stated overhead, against the real binary.

The case that broke it: a topic of many partitions makes the batch cache's append arenas
small (an eighth of the budget over the partitions), so the memory prefaulted at start-up
comes in small buffers, while reads from the disk use 4 MiB read-ahead windows. The pool
gave the small buffers back as the cache filled with read windows, and glibc kept them:
a broker with a 1 GiB cache reached a peak RSS of 2.1 GiB (scripts/bench, consume-cold).
Pool buffers are now mappings of their own, unmapped when given back. The same case
also cost CPU: each 4 MiB read faulted in fresh memory while the pool unmapped
prefaulted buffers (a third of the broker's CPU in the bench's consume-cold); the
prefault now makes buffers of a read window's size whatever the arena size, and the
reads reuse them."""

from __future__ import annotations

import re

from test_cache_prefault import prefault_lines
from helpers import wait_until

MIB = 1 << 20
CACHE = 256 * MIB
RECORDS = 300_000
VALUE = 1000
# The stated overhead beyond the budget, one shard (src/log/segment.rs READ_AHEAD_BUDGET,
# src/log/arena.rs IDLE_BLOCKS buffers of at most 4 MiB), and an allowance for the rest of
# the process (code, request buffers, glommio's io memory, indexes): about 40-60 MiB.
READ_AHEAD_BUDGET = 64 * MIB
IDLE_BUFFERS = 16 * 4 * MIB
PROCESS = 100 * MIB


def status_kib(pid: int, key: str) -> int:
    text = open(f"/proc/{pid}/status").read()
    return int(re.search(rf"^{key}:\s+(\d+) kB", text, re.M)[1])


def allocated_buffers(broker) -> int:
    status, _, body = broker.http_get("/metrics")
    assert status == 200
    found = re.findall(r'^shardlog_cache_buffers_allocated_total\{shard="\d+"\} (\d+)$', body, re.M)
    assert found, "no shardlog_cache_buffers_allocated_total series"
    return sum(int(v) for v in found)


def produce(bootstrap: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name, n in (("many", 600), ("data", 4)):
        admin.create_topics([NewTopic(name, num_partitions=n, replication_factor=1)])[name].result(60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "acks": "all", "queue.buffering.max.kbytes": 1 << 20})
    for i in range(RECORDS):
        while True:
            try:
                p.produce("data", value=b"%08d" % i + bytes([i % 251]) * (VALUE - 8), partition=i % 4)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def read_back(bootstrap: str) -> dict[int, int]:
    """Reads every record of `data` from offset 0; returns the next offset per partition
    after checking that each partition's offsets run 0, 1, 2, ... and each value is the
    one produced."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "auto.offset.reset": "error", "fetch.max.bytes": 8 << 20,
                  "max.partition.fetch.bytes": 2 << 20})
    next_offset = {p: 0 for p in range(4)}
    try:
        c.assign([TopicPartition("data", p, 0) for p in range(4)])
        remaining = RECORDS
        def drained() -> bool:
            nonlocal remaining
            for m in c.consume(num_messages=5000, timeout=0.5):
                assert m.error() is None, m.error()
                p = m.partition()
                assert m.offset() == next_offset[p], (p, m.offset(), next_offset[p])
                i = next_offset[p] * 4 + p
                assert m.value() == b"%08d" % i + bytes([i % 251]) * (VALUE - 8)
                next_offset[p] += 1
                remaining -= 1
            return remaining == 0
        wait_until(drained, 120, what=f"all {RECORDS} records read back")
    finally:
        c.close()
    return next_offset


def test_a_cold_read_after_a_restart_stays_within_the_cache_budget(broker_factory):
    b = broker_factory("--cache-bytes", str(CACHE), cores=1)
    produce(b.bootstrap)
    b.restart()
    lines = wait_until(lambda: prefault_lines(b), 30, what="the prefault line")
    _, buffer_bytes, budget = lines[0]
    # 604 partitions make 64 KiB arenas, the smallest there are; the prefault still
    # fills what the budget has left with buffers of a 4 MiB read window.
    assert (buffer_bytes, budget) == (4 * MIB, CACHE)
    allocated_before = allocated_buffers(b)
    with open(f"/proc/{b.proc.pid}/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    assert read_back(b.bootstrap) == {p: RECORDS // 4 for p in range(4)}
    # ~290 MiB read in 4 MiB windows through prefaulted, then recycled, buffers. A few
    # reads find no idle buffer that fits: the prefault covers the budget, and the
    # read-ahead windows held when the cache reaches it are memory beyond it (at most
    # READ_AHEAD_BUDGET, 16 windows; how many depends on timing), and a read shorter
    # than half a window (a partition's last) cannot reuse one either. 6 in most runs
    # here, 9 beside a CI run; with buffers of the arena size prefaulted, nearly every
    # window was a fresh allocation: 69.
    allocated = allocated_buffers(b) - allocated_before
    print(f"buffers allocated during the read: {allocated}")
    assert allocated <= READ_AHEAD_BUDGET // (4 * MIB) + 4, allocated
    peak = status_kib(b.proc.pid, "VmHWM") * 1024
    bound = CACHE + READ_AHEAD_BUDGET + IDLE_BUFFERS + PROCESS
    print(f"peak RSS {peak / MIB:.0f} MiB, bound {bound / MIB:.0f} MiB")
    assert peak <= bound, f"peak RSS {peak / MIB:.0f} MiB, bound {bound / MIB:.0f} MiB"
