"""shardlog compatibility runner for the Python clients and kcat (see README.md).

    run --bootstrap HOST:PORT --client C --version V --scenario S

Clients: kafka-python, aiokafka, confluent-kafka (librdkafka bundled in the wheel) and kcat
(Debian's package, older librdkafka; driven with subprocess). Exit 0 iff the cell behaved as
matrix.json expects ("pass": the scenario passed; "not-yet": its interim assertion held).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = time.monotonic()
# admin_scenarios.py imports helpers from this module: give it this very module object.
sys.modules.setdefault("run", sys.modules[__name__])


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:5.1f}s] {msg}", flush=True)


class CheckError(Exception):
    pass


def check(cond, what: str) -> None:
    if not cond:
        raise CheckError(what)


def eq(got, want, what: str) -> None:
    if got != want:
        raise CheckError(f"{what}: expected {want!r}, got {got!r}")


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def wait_until(cond, timeout: float, what) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
    if not cond():
        raise CheckError(f"timed out after {timeout:.0f}s waiting for {what() if callable(what) else what}")


def murmur2_partition(key: bytes, n: int) -> int:
    """Partition of a keyed record under the Java client's default partitioner."""
    from kafka.partitioner.default import murmur2

    return (murmur2(key) & 0x7FFFFFFF) % n


# A consumed record: (partition, offset, key, value, headers) with str key/value and a
# tuple of (name, value-str) headers.
def rec(partition, offset, key, value, headers=()):
    dec = lambda b: None if b is None else (b.decode() if isinstance(b, (bytes, bytearray)) else b)
    return (partition, offset, dec(key), dec(value), tuple((k, dec(v)) for k, v in (headers or ())))


def default_headers(i: int) -> tuple:
    return (("h-index", str(i)), ("h-kind", "compat")) if i % 3 == 0 else ()


def kcat_headers(i: int) -> tuple:
    # kcat -H puts the same headers on every record of one run: the first 100 records get them
    return (("h-kind", "compat"), ("h-run", "first")) if i < 100 else ()


def expected_records(n: int, partitions: int | None, headers_of, prefix_k="k", prefix_v="v", start=0):
    out = []
    for i in range(start, start + n):
        headers = headers_of(i) if headers_of else ()
        key = f"{prefix_k}{i}"
        part = murmur2_partition(key.encode(), partitions) if partitions else None
        out.append({"key": key, "value": f"{prefix_v}{i}", "headers": headers, "partition": part})
    return out


def check_exactly_once(got: list, expected: list, what: str, check_headers=True) -> dict:
    """Each expected key exactly once, with its value/headers, in its partition, at
    consecutive offsets per partition in production order. Returns {partition: count}."""
    eq(len(got), len(expected), f"{what}: number of records consumed")
    by_key = {}
    for r in got:
        check(r[2] not in by_key, f"{what}: key {r[2]} consumed twice (partition {r[0]} offset {r[1]})")
        by_key[r[2]] = r
    counts: dict = {}
    for e in expected:
        r = by_key.get(e["key"])
        check(r is not None, f"{what}: key {e['key']} never consumed")
        eq(r[3], e["value"], f"{what}: value of {e['key']}")
        if check_headers:
            eq(r[4], e["headers"], f"{what}: headers of {e['key']}")
        if e["partition"] is not None:
            eq(r[0], e["partition"], f"{what}: partition of {e['key']}")
        nxt = counts.get(r[0], 0)
        eq(r[1], nxt, f"{what}: offset of {e['key']} in partition {r[0]} (per-partition order)")
        counts[r[0]] = nxt + 1
    return counts


CLEANUPS: list = []


def cleanup_later(fn):
    CLEANUPS.append(fn)


# =========================================================================================
# Client adapters: the same scenario code drives every client through these.
# =========================================================================================
class KafkaPython:
    name = "kafka-python"
    # The two members of group-classic are polled in turn from one thread. With 0.1 s polls
    # kafka-python 3.0.12 can loop for tens of seconds: the leader's JoinGroup waits ~0.5 s
    # for the other member, outlives the poll, and the leader drops the assignment its
    # SyncGroup then returns and joins again (a new generation each ~0.6 s). Polls longer
    # than that wait avoid it.
    group_poll_s = 1.0
    headers_of = staticmethod(default_headers)
    codecs = ["gzip", "snappy", "lz4", "zstd"]

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        import kafka

        self.k = kafka
        self._admin = None

    def version(self):
        return self.k.__version__

    def admin(self):
        if self._admin is None:
            self._admin = self.k.KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000,
                                                  client_id="compat-admin")
            cleanup_later(self._admin.close)
        return self._admin

    def create_topic(self, topic, partitions, configs=None):
        opts = {"num_partitions": partitions, "replication_factor": 1}
        if configs:
            opts["configs"] = configs
        self.admin().create_topics({topic: opts}, timeout_ms=10000)

    def producer(self, compression=None, **extra):
        p = self.k.KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", compression_type=compression,
                                 linger_ms=5, request_timeout_ms=15000, max_block_ms=15000, **extra)
        cleanup_later(lambda: p.close(timeout=5))
        return KPProducer(p)

    def reader(self, topic, partitions):
        c = self.k.KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, auto_offset_reset="earliest",
                                 enable_auto_commit=False, fetch_max_wait_ms=100)
        cleanup_later(lambda: c.close(autocommit=False))
        c.assign([self.k.TopicPartition(topic, p) for p in range(partitions)])
        c.seek_to_beginning()
        return KPConsumer(c, self.k)

    def group_member(self, topic, group, protocol="classic"):
        assert protocol == "classic"
        c = self.k.KafkaConsumer(topic, bootstrap_servers=self.bootstrap, group_id=group, auto_offset_reset="earliest",
                                 enable_auto_commit=False, fetch_max_wait_ms=100, session_timeout_ms=10000,
                                 heartbeat_interval_ms=500, max_poll_interval_ms=30000)
        cleanup_later(lambda: c.close(autocommit=False))
        return KPConsumer(c, self.k)

    def committed(self, group, topic):
        res = self.admin().list_group_offsets({group: None})
        offs = res[group] if isinstance(res, dict) and group in res else res
        return {tp.partition: om.offset for tp, om in offs.items() if tp.topic == topic}


class KPProducer:
    def __init__(self, p):
        self.p = p
        self.futures = []

    def send(self, topic, key, value, headers=(), partition=None, timestamp_ms=None):
        self.futures.append(self.p.send(topic, key=key.encode(), value=value.encode(),
                                        headers=[(k, v.encode()) for k, v in headers] or None,
                                        partition=partition, timestamp_ms=timestamp_ms))

    def flush(self):
        self.p.flush(timeout=30)
        out = [f.get(timeout=15) for f in self.futures]
        self.futures = []
        return [(m.partition, m.offset) for m in out]


class KPConsumer:
    def __init__(self, c, k):
        self.c = c
        self.k = k

    def poll(self, timeout=0.2):
        out = []
        for tp, msgs in self.c.poll(timeout_ms=int(timeout * 1000)).items():
            out += [rec(m.partition, m.offset, m.key, m.value, m.headers) for m in msgs]
        return out

    def assignment(self):
        return sorted(tp.partition for tp in self.c.assignment())

    def commit(self):
        self.c.commit()

    def close(self):
        self.c.close(autocommit=False)


# ---------------------------------------------------------------------------------------
class AioKafka:
    """aiokafka is asyncio-only; every call runs on one private event loop."""

    name = "aiokafka"
    group_poll_s = 0.1
    headers_of = staticmethod(default_headers)
    codecs = ["gzip", "snappy", "lz4", "zstd"]

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        import aiokafka

        self.a = aiokafka
        self.loop = asyncio.new_event_loop()
        self._admin = None

    def run(self, coro, timeout=30):
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    def version(self):
        return self.a.__version__

    def mk(self, cls, *a, **kw):
        """aiokafka objects must be created inside the running loop."""

        async def make():
            return cls(*a, **kw)

        return self.run(make())

    def admin(self):
        if self._admin is None:
            from aiokafka.admin import AIOKafkaAdminClient

            self._admin = self.mk(AIOKafkaAdminClient, bootstrap_servers=self.bootstrap, request_timeout_ms=15000)
            self.run(self._admin.start())
            cleanup_later(lambda: self.run(self._admin.close(), 5))
        return self._admin

    def create_topic(self, topic, partitions, configs=None):
        from aiokafka.admin import NewTopic

        self.run(self.admin().create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})]))

    def producer(self, compression=None, **extra):
        p = self.mk(self.a.AIOKafkaProducer, bootstrap_servers=self.bootstrap, acks="all", compression_type=compression,
                                    linger_ms=5, request_timeout_ms=15000, **extra)
        self.run(p.start())
        cleanup_later(lambda: self.run(p.stop(), 5))
        return AioProducer(self, p)

    def reader(self, topic, partitions, **extra):
        c = self.mk(self.a.AIOKafkaConsumer, bootstrap_servers=self.bootstrap, group_id=None, auto_offset_reset="earliest",
                                    enable_auto_commit=False, fetch_max_wait_ms=100, **extra)
        self.run(c.start())
        cleanup_later(lambda: self.run(c.stop(), 5))
        tps = [self.a.TopicPartition(topic, p) for p in range(partitions)]
        self.mk(c.assign, tps)
        self.run(c.seek_to_beginning(*tps))
        return AioConsumer(self, c)

    def group_member(self, topic, group, protocol="classic"):
        assert protocol == "classic"
        c = self.mk(self.a.AIOKafkaConsumer, topic, bootstrap_servers=self.bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100,
                                    session_timeout_ms=10000, heartbeat_interval_ms=500, max_poll_interval_ms=30000)
        self.run(c.start())
        cleanup_later(lambda: self.run(c.stop(), 5))
        return AioConsumer(self, c)

    def committed(self, group, topic):
        offs = self.run(self.admin().list_consumer_group_offsets(group))
        return {tp.partition: om.offset for tp, om in offs.items() if tp.topic == topic}


class AioProducer:
    def __init__(self, ak, p):
        self.ak = ak
        self.p = p
        self.futures = []

    def send(self, topic, key, value, headers=(), partition=None, timestamp_ms=None):
        fut = self.ak.run(self.p.send(topic, key=key.encode(), value=value.encode(),
                                      headers=[(k, v.encode()) for k, v in headers] or None,
                                      partition=partition, timestamp_ms=timestamp_ms))
        self.futures.append(fut)

    def flush(self):
        self.ak.run(self.p.flush())
        out = [self.ak.run(asyncio.wait_for(f, 15)) for f in self.futures]
        self.futures = []
        return [(m.partition, m.offset) for m in out]


class AioConsumer:
    def __init__(self, ak, c):
        self.ak = ak
        self.c = c

    def poll(self, timeout=0.2):
        out = []
        batches = self.ak.run(self.c.getmany(timeout_ms=int(timeout * 1000)))
        for tp, msgs in batches.items():
            out += [rec(m.partition, m.offset, m.key, m.value, m.headers) for m in msgs]
        return out

    def assignment(self):
        return sorted(tp.partition for tp in self.c.assignment())

    def commit(self):
        self.ak.run(self.c.commit())

    def close(self):
        self.ak.run(self.c.stop(), 10)


# ---------------------------------------------------------------------------------------
class Confluent:
    name = "confluent-kafka"
    group_poll_s = 0.1
    headers_of = staticmethod(default_headers)
    codecs = ["gzip", "snappy", "lz4", "zstd"]

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        import confluent_kafka

        self.ck = confluent_kafka
        self._admin = None

    def version(self):
        return self.ck.__version__

    def conf(self, **kw):
        c = {"bootstrap.servers": self.bootstrap}
        c.update({k.replace("_", "."): v for k, v in kw.items()})
        return c

    def admin(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient(self.conf())
        return self._admin

    def create_topic(self, topic, partitions, configs=None):
        from confluent_kafka.admin import NewTopic

        fs = self.admin().create_topics([NewTopic(topic, partitions, 1, config=configs or {})], operation_timeout=10,
                                        request_timeout=15)
        fs[topic].result(timeout=20)

    def producer(self, compression=None, **extra):
        conf = self.conf(acks="all", linger_ms=5, partitioner="murmur2_random")
        if compression:
            conf["compression.type"] = compression
        conf.update(extra)
        return CKProducer(self.ck.Producer(conf))

    def reader(self, topic, partitions, **extra):
        conf = self.conf(group_id=uniq("unused"), enable_auto_commit=False, auto_offset_reset="earliest",
                         fetch_wait_max_ms=100)
        conf.update(extra)
        c = self.ck.Consumer(conf)
        cleanup_later(c.close)
        c.assign([self.ck.TopicPartition(topic, p, self.ck.OFFSET_BEGINNING) for p in range(partitions)])
        return CKConsumer(c)

    def group_member(self, topic, group, protocol="classic"):
        conf = self.conf(group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                         fetch_wait_max_ms=100)
        if protocol == "classic":
            conf.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 500})
        else:
            conf["group.protocol"] = "consumer"
        c = self.ck.Consumer(conf)
        c.subscribe([topic])
        m = CKConsumer(c)
        cleanup_later(m.close)
        return m

    def committed(self, group, topic):
        from confluent_kafka import ConsumerGroupTopicPartitions

        fs = self.admin().list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=15)
        res = fs[group].result(timeout=20)
        return {tp.partition: tp.offset for tp in res.topic_partitions if tp.topic == topic}


class CKProducer:
    def __init__(self, p):
        self.p = p
        self.reports = []
        self.errors = []

    def _cb(self, err, msg):
        if err is not None:
            self.errors.append(err)
        else:
            self.reports.append((msg.partition(), msg.offset()))

    def send(self, topic, key, value, headers=(), partition=None, timestamp_ms=None):
        kw = {}
        if partition is not None:
            kw["partition"] = partition
        if timestamp_ms is not None:
            kw["timestamp"] = timestamp_ms
        self.p.produce(topic, key=key.encode(), value=value.encode(), headers=list(headers) or None,
                       on_delivery=self._cb, **kw)
        self.p.poll(0)

    def flush(self):
        left = self.p.flush(30)
        eq(left, 0, "messages still queued after flush(30)")
        check(not self.errors, f"delivery errors: {self.errors[:3]}")
        out, self.reports = self.reports, []
        return out


class CKConsumer:
    def __init__(self, c):
        self.c = c
        self.closed = False

    def poll(self, timeout=0.2):
        out = []
        for m in self.c.consume(num_messages=500, timeout=timeout):
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    continue
                raise CheckError(f"consumer error: {m.error()}")
            out.append(rec(m.partition(), m.offset(), m.key(), m.value(), m.headers()))
        return out

    def assignment(self):
        return sorted(tp.partition for tp in self.c.assignment())

    def commit(self):
        self.c.commit(asynchronous=False)

    def close(self):
        if not self.closed:
            self.closed = True
            self.c.close()


# ---------------------------------------------------------------------------------------
class Kcat:
    """kcat from Debian (librdkafka 2.0.x). Topics are created with kafka-python's admin
    client (kcat has no admin commands); all produce/consume goes through kcat."""

    name = "kcat"
    headers_of = staticmethod(kcat_headers)
    codecs = ["gzip", "snappy", "lz4", "zstd"]

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.bin = shutil.which("kcat")
        check(self.bin, "kcat not installed (run setup)")
        self.helper = KafkaPython(bootstrap)

    def version(self):
        out = subprocess.run([self.bin, "-V"], capture_output=True, text=True, timeout=10).stdout
        return out.split("Version ", 1)[1].split()[0]

    def create_topic(self, topic, partitions, configs=None):
        self.helper.create_topic(topic, partitions, configs)

    def producer(self, compression=None, **extra):
        return KcatProducer(self, compression, extra)

    def reader(self, topic, partitions):
        return KcatReader(self, topic)


class KcatProducer:
    """Buffers records; flush() runs one `kcat -P` per partition with -K/-H/-p."""

    def __init__(self, kc, compression, extra):
        self.kc = kc
        self.compression = compression
        self.extra = extra
        self.pending = []

    def send(self, topic, key, value, headers=(), partition=None, timestamp_ms=None):
        self.pending.append((topic, key, value, tuple(headers), partition))

    def flush(self):
        # kcat -H applies the same headers to every record of one run: group runs by
        # (topic, partition, headers), keeping production order within a partition.
        runs = []
        for t, k, v, h, p in self.pending:
            if runs and runs[-1][0] == (t, p, h):
                runs[-1][1].append((k, v))
            else:
                runs.append(((t, p, h), [(k, v)]))
        for (t, p, h), kvs in runs:
            args = [self.kc.bin, "-P", "-b", self.kc.bootstrap, "-t", t, "-K", "\t", "-X", "acks=all",
                    "-X", "partitioner=murmur2_random"]
            if p is not None:
                args += ["-p", str(p)]
            if self.compression:
                args += ["-z", self.compression]
            for name, val in h:
                args += ["-H", f"{name}={val}"]
            for name, val in self.extra.items():
                args += ["-X", f"{name}={val}"]
            data = "".join(f"{k}\t{v}\n" for k, v in kvs).encode()
            r = subprocess.run(args, input=data, capture_output=True, timeout=60)
            check(r.returncode == 0, f"kcat -P exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        self.pending = []
        return None  # kcat reports no offsets


class KcatReader:
    def __init__(self, kc, topic):
        self.kc = kc
        self.topic = topic
        self.done = False

    def poll(self, timeout=0.2):
        if self.done:
            time.sleep(timeout)
            return []
        self.done = True
        fmt = "%p\\t%o\\t%k\\t%s\\t%h\\n"
        args = [self.kc.bin, "-C", "-b", self.kc.bootstrap, "-t", self.topic, "-o", "beginning", "-e", "-q",
                "-f", fmt]
        r = subprocess.run(args, capture_output=True, timeout=60)
        check(r.returncode == 0, f"kcat -C exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        out = []
        for line in r.stdout.decode().splitlines():
            p, o, k, v, h = line.split("\t")
            headers = tuple(tuple(kv.split("=", 1)) for kv in h.split(",")) if h else ()
            out.append(rec(int(p), int(o), k, v, headers))
        return out


CLIENTS = {"kafka-python": KafkaPython, "aiokafka": AioKafka, "confluent-kafka": Confluent, "kcat": Kcat}


# =========================================================================================
# Scenarios
# =========================================================================================
def read_all(reader, want: int, timeout=45.0, linger=1.0) -> list:
    got: list = []
    end = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < end:
        got += reader.poll(0.2)
    check(len(got) >= want, f"timed out after {timeout:.0f}s: consumed {len(got)} of {want} records")
    end = time.monotonic() + linger
    while time.monotonic() < end:  # catch duplicates
        got += reader.poll(0.2)
    return got


def produce(client, topic, expected, compression=None, explicit_partition=False, **extra):
    p = client.producer(compression, **extra)
    for e in expected:
        p.send(topic, e["key"], e["value"], e["headers"], partition=e["partition"] if explicit_partition else None)
    return p.flush()


def scenario_produce_consume(client, interim):
    """3 partitions, 300 keyed records (every third with 2 headers), acks=all; the default
    (murmur2 for librdkafka via partitioner=murmur2_random) partitioner places each key;
    a fresh consumer (no group) reads everything exactly once, per-partition order kept."""
    topic = uniq("pc")
    client.create_topic(topic, 3)
    log(f"created topic {topic} with 3 partitions")
    expected = expected_records(300, 3, client.headers_of)
    reports = produce(client, topic, expected)
    if reports is not None:  # delivery reports: (partition, offset) in production order per partition
        eq(sorted(reports), sorted(_expected_offsets(expected)), "delivery reports (partition, offset)")
    per = {}
    for e in expected:
        per[e["partition"]] = per.get(e["partition"], 0) + 1
    log(f"produced 300 records with acks=all, per partition {dict(sorted(per.items()))}")
    got = read_all(client.reader(topic, 3), 300)
    check_exactly_once(got, expected, "fresh consumer")
    log("consumed 300 records: every key/value/header exactly once, partitions and offsets as produced")


def _expected_offsets(expected):
    seen: dict = {}
    out = []
    for e in expected:
        o = seen.get(e["partition"], 0)
        out.append((e["partition"], o))
        seen[e["partition"]] = o + 1
    return out


def scenario_compression(codec):
    def run(client, interim):
        """100 records, compressed, one partition; exact keys/values/offsets 0..99."""
        topic = uniq(f"comp-{codec}")
        client.create_topic(topic, 1)
        expected = [dict(e, partition=0, value=e["value"] + "-" + "abcdefgh" * (1 + i % 20))
                    for i, e in enumerate(expected_records(100, None, None))]
        reports = produce(client, topic, expected, compression=codec, explicit_partition=True)
        if reports is not None:
            eq(sorted(reports), [(0, i) for i in range(100)], "delivery reports")
        log(f"produced 100 {codec}-compressed records")
        got = read_all(client.reader(topic, 1), 100)
        check_exactly_once(got, expected, f"{codec} consumer")
        log("consumed 100 records: exact keys, values, offsets 0..99")

    return run


def scenario_group(protocol):
    def run(client, interim):
        """2 members of one group on 4 partitions; 200 records consumed exactly once between
        them; commit; committed offsets via the admin API = 50 per partition (sum 200); one
        member leaves -> the other gets all 4 partitions and exactly the 20 new records."""
        topic = uniq("grp")
        group = uniq(f"g-{protocol}")
        client.create_topic(topic, 4)
        members = {n: client.group_member(topic, group, protocol) for n in ("A", "B")}
        got = {"A": [], "B": []}

        def pump(names=("A", "B")):
            for n in names:
                got[n] += members[n].poll(client.group_poll_s)

        def stable():
            pump()
            a, b = members["A"].assignment(), members["B"].assignment()
            return len(a) == 2 and len(b) == 2 and sorted(a + b) == [0, 1, 2, 3]

        wait_until(stable, 45, lambda: f"2 partitions per member (A={members['A'].assignment()} "
                                       f"B={members['B'].assignment()})")
        log(f"group {group} ({protocol}) stable: A={members['A'].assignment()} B={members['B'].assignment()}")
        expected = [dict(e, partition=i % 4) for i, e in enumerate(expected_records(200, None, None))]
        produce(client, topic, expected, explicit_partition=True)
        wait_until(lambda: (pump(), len(got["A"]) + len(got["B"]) >= 200)[1], 45,
                   lambda: f"200 records (A {len(got['A'])}, B {len(got['B'])})")
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            pump()
        check_exactly_once(got["A"] + got["B"], expected, "group A+B", check_headers=False)
        for n in ("A", "B"):
            eq(sorted({r[0] for r in got[n]}), members[n].assignment(), f"partitions consumed by {n}")
        log(f"consumed 200 exactly once: A {len(got['A'])}, B {len(got['B'])}")
        for n in ("A", "B"):
            members[n].commit()
        committed = client.committed(group, topic)
        eq(dict(sorted(committed.items())), {0: 50, 1: 50, 2: 50, 3: 50}, "committed offsets via the admin API")
        eq(sum(committed.values()), 200, "sum of committed offsets")
        log("committed offsets via the admin API: 50 on each of 4 partitions, sum 200")

        members["B"].close()
        wait_until(lambda: (pump(("A",)), members["A"].assignment() == [0, 1, 2, 3])[1], 45,
                   lambda: f"A to own all 4 partitions (A={members['A'].assignment()})")
        log("B left; A now owns [0, 1, 2, 3]")
        before = len(got["A"])
        more = [dict(e, partition=i % 4) for i, e in enumerate(expected_records(20, None, None, start=200))]
        produce(client, topic, more, explicit_partition=True)
        wait_until(lambda: (pump(("A",)), len(got["A"]) - before >= 20)[1], 30,
                   lambda: f"20 new records on A (got {len(got['A']) - before})")
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            pump(("A",))
        after = sorted((r[0], r[1], r[2]) for r in got["A"][before:])
        eq(after, sorted((i % 4, 50 + i // 4, f"k{200 + i}") for i in range(20)),
           "records consumed by A after the rebalance (partition, offset, key): nothing re-consumed")
        log("A consumed exactly the 20 new records at offsets 50..54 of each partition")

    return run


# ---------------------------------------------------------------------------------------
def scenario_transactions(client, interim):
    """Transactional producer: commit 10 records, abort 5; a read_committed consumer sees
    exactly the 10. Interim (issue 12): initialisation fails within 15 s with the
    transactional-id authorization error (not a hang, not a retriable timeout)."""
    topic = uniq("txn")
    client.create_topic(topic, 1)
    txid = uniq("tx")
    start = time.monotonic()
    try:
        tx = TX[client.name](client, txid)
        tx.init()
    except Exception as e:  # noqa: BLE001
        took = time.monotonic() - start
        log(f"transactional init failed after {took:.2f}s: {type(e).__name__}: {e}")
        if not interim:
            raise
        check(took < 15, f"init should fail within 15 s, took {took:.1f}s")
        TX[client.name].check_interim(e)
        return
    check(not interim, "transactional init succeeded: issue 12 seems to have landed, mark the cell 'pass'")
    tx.run(topic, [(f"c{i}", f"committed{i}") for i in range(10)], commit=True)
    tx.run(topic, [(f"a{i}", f"aborted{i}") for i in range(5)], commit=False)
    got = read_all(client.reader(topic, 1, **TX[client.name].read_committed), 10, linger=2.0)
    eq([(r[2], r[3]) for r in got], [(f"c{i}", f"committed{i}") for i in range(10)], "read_committed records")
    log("committed transaction visible (10 records), aborted one invisible")


class TxKafkaPython:
    read_committed = {}

    def __init__(self, client, txid):
        self.p = client.k.KafkaProducer(bootstrap_servers=client.bootstrap, transactional_id=txid,
                                        enable_idempotence=True, max_block_ms=14000, request_timeout_ms=10000)
        cleanup_later(lambda: self.p.close(timeout=5))

    def init(self):
        self.p.init_transactions()

    @staticmethod
    def check_interim(e):
        from kafka.errors import TransactionalIdAuthorizationFailedError

        check(isinstance(e, TransactionalIdAuthorizationFailedError),
              f"expected TransactionalIdAuthorizationFailedError, got {type(e).__name__}: {e}")
        eq(getattr(e, "retriable", None), False, "retriable")

    def run(self, topic, kvs, commit):
        self.p.begin_transaction()
        for k, v in kvs:
            self.p.send(topic, key=k.encode(), value=v.encode(), partition=0)
        (self.p.commit_transaction if commit else self.p.abort_transaction)()


class TxAioKafka:
    read_committed = {"isolation_level": "read_committed"}

    def __init__(self, client, txid):
        self.c = client
        self.p = client.mk(client.a.AIOKafkaProducer, bootstrap_servers=client.bootstrap, transactional_id=txid,
                                           enable_idempotence=True, request_timeout_ms=10000)

    def init(self):
        cleanup_later(lambda: self.c.run(self.p.stop(), 5))
        self.c.run(self.p.start(), 20)

    @staticmethod
    def check_interim(e):
        from aiokafka.errors import TransactionalIdAuthorizationFailed

        check(isinstance(e, TransactionalIdAuthorizationFailed),
              f"expected TransactionalIdAuthorizationFailed, got {type(e).__name__}: {e}")
        eq(getattr(e, "retriable", None), False, "retriable")

    def run(self, topic, kvs, commit):
        async def go():
            await self.p.begin_transaction()
            for k, v in kvs:
                await self.p.send(topic, key=k.encode(), value=v.encode(), partition=0)
            await (self.p.commit_transaction() if commit else self.p.abort_transaction())

        self.c.run(go())

    read_committed = {"isolation_level": "read_committed"}


class TxConfluent:
    read_committed = {"isolation.level": "read_committed"}

    def __init__(self, client, txid):
        self.ck = client.ck
        self.p = client.ck.Producer(client.conf(transactional_id=txid))

    def init(self):
        self.p.init_transactions(14)

    @staticmethod
    def check_interim(e):
        from confluent_kafka import KafkaError, KafkaException

        check(isinstance(e, KafkaException), f"expected KafkaException, got {type(e).__name__}: {e}")
        err = e.args[0]
        eq(err.code(), KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "error code")
        eq(err.retriable(), False, "retriable")

    def run(self, topic, kvs, commit):
        self.p.begin_transaction()
        for k, v in kvs:
            self.p.produce(topic, key=k.encode(), value=v.encode(), partition=0)
        (self.p.commit_transaction if commit else self.p.abort_transaction)(15)


class TxKcat:
    """kcat 1.7 runs a transactional producer when transactional.id is set: it initialises
    and commits one transaction around its whole input."""

    read_committed = {}

    def __init__(self, client, txid):
        self.kc = client
        self.txid = txid
        self.topic = None

    def init(self):
        topic = uniq("txn-kcat")
        self.kc.create_topic(topic, 1)
        args = [self.kc.bin, "-P", "-b", self.kc.bootstrap, "-t", topic, "-X", f"transactional.id={self.txid}",
                "-K", "\t", "-p", "0"]
        r = subprocess.run(args, input=b"c0\tcommitted0\n", capture_output=True, timeout=30)
        self.stderr = r.stderr.decode(errors="replace")
        if r.returncode != 0:
            raise RuntimeError(f"kcat -P exited {r.returncode}: {self.stderr.strip()}")
        self.topic = topic

    @staticmethod
    def check_interim(e):
        msg = str(e)
        check("Transactional Id authorization failed" in msg or "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in msg,
              f"expected a transactional-id authorization error from kcat, got: {msg}")

    def run(self, topic, kvs, commit):
        if not commit:
            # kcat commits its whole input as one transaction; it has no way to abort.
            log("kcat: no abort (its transactional producer only commits); skipped")
            return
        args = [self.kc.bin, "-P", "-b", self.kc.bootstrap, "-t", topic, "-X", f"transactional.id={self.txid}",
                "-K", "\t", "-p", "0"]
        data = "".join(f"{k}\t{v}\n" for k, v in kvs).encode()
        r = subprocess.run(args, input=data, capture_output=True, timeout=30)
        check(r.returncode == 0, f"kcat -P (transactional) exited {r.returncode}: {r.stderr.decode(errors='replace')}")


def scenario_kcat_metadata(client, interim):
    """kcat -L -J: exact brokers, controller and partition layout (leader 0, replicas/isr
    [0]) of a 3-partition topic; the cluster-wide listing has exactly our non-internal topics."""
    t1, t2 = uniq("md-a"), uniq("md-b")
    client.create_topic(t1, 3)
    client.create_topic(t2, 1)

    def meta(*extra):
        r = subprocess.run([client.bin, "-L", "-J", "-b", client.bootstrap, *extra], capture_output=True, timeout=30)
        check(r.returncode == 0, f"kcat -L exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        return json.loads(r.stdout)

    m = meta("-t", t1)
    eq(m["brokers"], [{"id": 0, "name": client.bootstrap}], "brokers")
    eq(m["controllerid"], 0, "controllerid")
    eq(m["topics"], [{"topic": t1, "partitions": [
        {"partition": p, "leader": 0, "replicas": [{"id": 0}], "isrs": [{"id": 0}]} for p in range(3)]}],
       f"metadata of {t1}")
    log(f"kcat -L -t {t1}: broker 0 at {client.bootstrap}, controller 0, 3 partitions led by 0")
    m = meta()
    eq(sorted(t["topic"] for t in m["topics"] if not t["topic"].startswith("__")), sorted([t1, t2]),
       "non-internal topics in kcat -L")
    eq([t.get("error") for t in m["topics"]], [None] * len(m["topics"]), "topic errors in kcat -L")
    log(f"kcat -L: topics {sorted(t['topic'] for t in m['topics'])}")


TX = {"kafka-python": TxKafkaPython, "aiokafka": TxAioKafka, "confluent-kafka": TxConfluent, "kcat": TxKcat}


from admin_scenarios import ADMIN_SCENARIOS  # noqa: E402  (client-specific admin cells)

SCENARIOS = {
    "produce-consume": scenario_produce_consume,
    **{f"compression-{c}": scenario_compression(c) for c in ("gzip", "snappy", "lz4", "zstd")},
    "group-classic": scenario_group("classic"),
    "group-consumer": scenario_group("consumer"),
    "transactions": scenario_transactions,
    "metadata": scenario_kcat_metadata,
}


def main() -> int:
    ap = argparse.ArgumentParser()
    for a in ("bootstrap", "client", "version", "scenario"):
        ap.add_argument(f"--{a}", required=True)
    args = ap.parse_args()
    matrix = json.loads((HERE / "matrix.json").read_text())
    cell = next((c for c in matrix if (c["client"], c["version"], c["scenario"]) ==
                 (args.client, args.version, args.scenario)), None)
    if cell is None:
        print(f"FAIL: no cell {args.client} {args.version} {args.scenario} in matrix.json")
        return 2
    if args.client not in CLIENTS:
        print(f"FAIL: unknown client {args.client}")
        return 2
    interim = cell["expect"] == "not-yet"
    rc = 0
    try:
        client = CLIENTS[args.client](args.bootstrap)
        have = client.version()
        if have != args.version:
            raise CheckError(f"installed {args.client} is {have}, the cell wants {args.version} (run setup)")
        log(f"{args.client} {have}, scenario {args.scenario}, expect {cell['expect']}"
            + (f" (issue {cell['issue']}; interim: {cell['interim']})" if interim else "")
            + f", bootstrap {args.bootstrap}")
        fn = SCENARIOS.get(args.scenario) or ADMIN_SCENARIOS.get((args.client, args.scenario))
        if fn is None:
            raise CheckError(f"no scenario {args.scenario} for {args.client}")
        fn(client, interim)
        log("PASS (interim behaviour holds)" if interim else "PASS")
    except CheckError as e:
        rc = 1
        print(f"FAIL: {e}", flush=True)
    except Exception as e:  # noqa: BLE001
        rc = 1
        print(traceback.format_exc(), flush=True)
        print(f"FAIL: {type(e).__name__}: {e}", flush=True)
    finally:
        for fn in reversed(CLEANUPS):
            try:
                fn()
            except Exception:  # noqa: BLE001
                pass
    return rc


if __name__ == "__main__":
    # Hard stop: the runner must end by itself whatever a client call does.
    limit = float(os.environ.get("COMPAT_HARD_TIMEOUT_S", "110"))
    t = threading.Timer(limit, lambda: (print(f"FAIL: runner hard timeout ({limit:.0f} s)", flush=True),
                                        os._exit(1)))
    t.daemon = True
    t.start()
    code = main()
    sys.stdout.flush()
    os._exit(code)
