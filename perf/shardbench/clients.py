"""The clients Kafka users benchmark with, and reading their output: running a client
process to completion (with its CPU time), the command lines of the Java perf tools
(kafka-producer-perf-test, kafka-consumer-perf-test, the topic tool) and of
rdkafka_performance, and the parsers that turn each tool's summary into a Result.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .common import CLK_TCK, JVM_PERF_OPTS, KAFKA_DIR, LIBS, MIB, RDPERF, ROOT, BenchError, Result, fill_latency

# ---------------------------------------------------------------- running clients

@dataclass
class Proc:
    rc: int
    out: str
    err: str
    seconds: float
    cpu: float  # client CPU seconds (user+sys)
    timed_out: bool = False
    # The client's busiest thread (most CPU seconds, sampled every ~0.25 s while it ran, so
    # up to 0.25 s of its last work is missed): its name and CPU seconds. A thread near the
    # whole elapsed time means the client, not the broker, set the pace.
    top_thread: Optional[str] = None
    top_thread_cpu: Optional[float] = None


def thread_cpu_ticks(pid: int) -> dict[int, tuple[str, int]]:
    """{tid: (thread name, utime+stime in clock ticks)} of every thread of `pid` now; {}
    once the process is gone."""
    out: dict[int, tuple[str, int]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                data = f.read()
        except OSError:
            continue
        name = data[data.index("(") + 1:data.rindex(")")]
        fields = data[data.rindex(")") + 2:].split()
        out[int(tid)] = (name, int(fields[11]) + int(fields[12]))
    return out


def run_cmd(cmd: list[str], timeout: float, env=None, cwd=ROOT, alive=None) -> Proc:
    """Runs cmd to completion (or timeout); `alive()` returning False (the broker died)
    ends it early, 5 s later."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                         start_new_session=True)
    out_chunks: list[str] = []
    err_chunks: list[str] = []

    def pump(stream, sink):
        for line in stream:
            sink.append(line)

    ts = [threading.Thread(target=pump, args=(p.stdout, out_chunks), daemon=True),
          threading.Thread(target=pump, args=(p.stderr, err_chunks), daemon=True)]
    for t in ts:
        t.start()
    timed_out = False
    deadline = start + timeout
    dead_since = None
    threads: dict[int, tuple[str, int]] = {}
    next_sample = start
    while True:
        if time.monotonic() >= next_sample:
            threads.update(thread_cpu_ticks(p.pid))
            next_sample = time.monotonic() + 0.25
        try:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        except ChildProcessError:
            status, ru = 0, None
            break
        if pid:
            break
        if alive is not None and dead_since is None and not alive():
            dead_since = time.monotonic()
        if dead_since is not None and time.monotonic() - dead_since > 5:
            deadline = 0
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status) if ru is not None else -1
    for t in ts:
        t.join(timeout=5)
    cpu = (ru.ru_utime + ru.ru_stime) if ru is not None else 0.0
    top = max(threads.values(), key=lambda t: t[1], default=None)
    return Proc(p.returncode, "".join(out_chunks), "".join(err_chunks), time.monotonic() - start, cpu, timed_out,
                top[0] if top else None, top[1] / CLK_TCK if top else None)


def java_tool(cls: str, args: list[str]) -> list[str]:
    return ["java", "-Xmx512M", *JVM_PERF_OPTS,
            f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2-tools.properties'}",
            "-cp", f"{LIBS}/*", cls, *args]


# ---------------------------------------------------------------- command lines

def create_topic_cmd(bootstrap: str, name: str, partitions: int) -> list[str]:
    return java_tool("org.apache.kafka.tools.TopicCommand",
                     ["--bootstrap-server", bootstrap, "--create", "--topic", name,
                      "--partitions", str(partitions), "--replication-factor", "1"])


def java_producer_cmd(bootstrap: str, topic: str, n: int, size: int, rate=-1, extra=()) -> list[str]:
    """kafka-producer-perf-test, acks=all (idempotence is the client default)."""
    return java_tool("org.apache.kafka.tools.ProducerPerformance",
                     ["--topic", topic, "--num-records", str(n), "--record-size", str(size),
                      "--throughput", str(rate), "--command-property", f"bootstrap.servers={bootstrap}",
                      "acks=all", *extra])


def java_consumer_cmd(bootstrap: str, topic: str, n: int) -> list[str]:
    """kafka-consumer-perf-test (subscribe, consumer group)."""
    return java_tool("org.apache.kafka.tools.ConsumerPerformance",
                     ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(n),
                      "--timeout", "60000"])


def rdkafka_producer_cmd(bootstrap: str, topic: str, n: int, size: int, rate=None,
                         latency_file: Optional[Path] = None) -> list[str]:
    """rdkafka_performance -P, acks=all, idempotence on; `rate` adds its -r limiter,
    `latency_file` per-record latencies (-l -A) with linger.ms=5."""
    cmd = [str(RDPERF), "-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(n),
           "-a", "-1", "-X", "enable.idempotence=true"]
    if rate:
        cmd += ["-r", str(int(rate))]
    if latency_file is not None:
        # librdkafka's own default linger (rdkafka_performance sets 1000 ms otherwise)
        cmd += ["-X", "linger.ms=5", "-l", "-A", str(latency_file)]
    return cmd


def rdkafka_consumer_cmd(bootstrap: str, topic: str, n: int) -> list[str]:
    """rdkafka_performance -C with partitions 0-3 assigned (no group), from the beginning."""
    return [str(RDPERF), "-C", "-t", topic, "-b", bootstrap, "-p", "0", "-p", "1", "-p", "2", "-p", "3",
            "-o", "beginning", "-e", "-c", str(n)]


# ---------------------------------------------------------------- output parsers
# Each returns (or is) a parse(res, proc) that fills `res` from the tool's output and raises
# BenchError when there is no summary to read.


def parse_java_producer(record_size):
    rx = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")
    steady_rx = re.compile(r"(\d+) steady state records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), "
                           r"([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, "
                           r"(\d+) ms 99th, (\d+) ms 99.9th")

    def parse(res: Result, p: Proc):
        m = None
        for m in rx.finditer(p.out):
            pass
        if not m:
            raise BenchError("no summary line from kafka-producer-perf-test")
        res.records = int(m.group(1))
        res.bytes = res.records * record_size
        res.rps = float(m.group(2))
        res.mibps = res.rps * record_size / MIB
        res.avg, res.max = float(m.group(4)), float(m.group(5))
        res.p50, res.p99, res.p999 = float(m.group(6)), float(m.group(8)), float(m.group(9))
        # with --warmup-records, a second summary covers only the records after the warm-up
        steady = None
        for steady in steady_rx.finditer(p.out):
            pass
        if steady:
            res.steady_max = float(steady.group(5))
            res.steady_p99, res.steady_p999 = float(steady.group(8)), float(steady.group(9))
        errs = [l for l in p.err.splitlines() if "ERROR" in l or "Exception" in l]
        if errs:
            res.notes.append("client errors: " + " | ".join(errs[:3])[:400])
    return parse


def parse_rdkafka_producer(record_size, latency_file: Optional[Path] = None):
    rx = re.compile(r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset \d+, (\d+) failed\) in "
                    r"(\d+)ms: (\d+) msgs/s and ([\d.]+) MB/s")

    def parse(res: Result, p: Proc):
        m = None
        for m in rx.finditer(p.out + p.err):
            pass
        if not m:
            raise BenchError("no summary line from rdkafka_performance")
        delivered, failed, ms = int(m.group(3)), int(m.group(4)), int(m.group(5))
        res.records = delivered
        res.bytes = delivered * record_size
        res.rps = delivered / (ms / 1000)
        res.mibps = res.bytes / MIB / (ms / 1000)
        if failed:
            res.notes.append(f"{failed} delivery failures")
        if latency_file is not None:
            lat = sorted(int(x) / 1000 for x in latency_file.read_text().split())
            fill_latency(res, lat)
    return parse


def parse_rdkafka_consumer(res: Result, p: Proc):
    rx = re.compile(r"% (\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s \(([\d.]+) MB/s\)")
    m = None
    for m in rx.finditer(p.out + p.err):
        pass
    if not m:
        raise BenchError("no summary line from rdkafka_performance -C")
    res.records, res.bytes, ms = int(m.group(1)), int(m.group(2)), int(m.group(3))
    res.rps = res.records / (ms / 1000)
    res.mibps = res.bytes / MIB / (ms / 1000)


def parse_java_consumer(record_size):
    def parse(res: Result, p: Proc):
        rows = [l for l in p.out.splitlines() if re.match(r"^\d{4}-\d\d-\d\d ", l)]
        if not rows:
            raise BenchError("no result row from kafka-consumer-perf-test")
        f = [x.strip() for x in rows[-1].split(",")]
        res.records = int(f[4])
        res.bytes = res.records * record_size
        res.rps = float(f[9])
        res.mibps = float(f[8])
        res.notes.append(f"overall incl. group join: {float(f[3]):.1f} MiB/s, rebalance {f[6]} ms; "
                         f"figures above are fetch-phase (fetch.MB.sec)")
        if res.records == 0:
            raise BenchError("consumed 0 records")
    return parse
