#!/usr/bin/env python3
"""shardlog vs Apache Kafka, same machine, same run, same clients (see shared PERF.md).

Started by scripts/bench (which checks the cache and builds shardlog); run that, not
this file. Standard library only, except matplotlib for the chart (perf/cache/venv).

For each broker in turn (Kafka first: its produce-max rate sets produce-rate's offered
load), the broker is started fresh on a free port with a fresh data dir under
perf/cache/run/, pinned to the same CPU set, and every selected workload runs against it:

  produce-max      1 KiB records, unthrottled, acks=all, idempotence on, 4 partitions
  produce-small    100 B records, otherwise the same
  produce-rate     fixed offered load (half of Kafka's produce-max records/s): latency
  consume-max      read the produce-max topic back from offset 0
  many-partitions  1,000 partitions, 1 KiB records
  many-connections 200 producer processes (rdkafka_performance), one connection each

Per broker and workload: MiB/s, records/s, latency percentiles, broker CPU seconds
(utime+stime from /proc/<pid>/stat), CPU seconds per GB moved, peak RSS (VmHWM, reset
before each step through /proc/<pid>/clear_refs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "perf" / "cache"
LIBS = CACHE / "kafka-libs"
RDPERF = CACHE / "bin" / "rdkafka_performance"
RUN = CACHE / "run"
KAFKA_DIR = ROOT / "perf" / "kafka"

WORKLOADS = ["produce-max", "produce-small", "produce-rate", "consume-max", "many-partitions", "many-connections"]
BROKERS = ["kafka", "shardlog"]

JVM_PERF_OPTS = [
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20
T0 = time.monotonic()


# ---------------------------------------------------------------- terminal output

def hms(s: float) -> str:
    s = int(s)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def say(msg: str) -> None:
    print(f"[bench {hms(time.monotonic() - T0)}] {msg}", flush=True)


class Ticker:
    """Shows `label ... elapsed` while a step runs (in place on a tty, else every 15 s)."""

    def __init__(self, label: str):
        self.label = label
        self.stop = threading.Event()
        self.start = time.monotonic()
        self.tty = sys.stdout.isatty()
        self.t = threading.Thread(target=self.run, daemon=True)

    def __enter__(self):
        say(f"{self.label} ...")
        self.t.start()
        return self

    def run(self):
        period = 1.0 if self.tty else 15.0
        while not self.stop.wait(period):
            el = time.monotonic() - self.start
            if self.tty:
                sys.stdout.write(f"\r    {self.label}: {el:6.0f} s elapsed (total {hms(time.monotonic() - T0)})")
                sys.stdout.flush()
            else:
                say(f"    {self.label}: {el:.0f} s elapsed")

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()
        if self.tty:
            sys.stdout.write("\r" + " " * 100 + "\r")
            sys.stdout.flush()


class BenchError(Exception):
    pass


# ---------------------------------------------------------------- /proc helpers

def proc_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def reset_hwm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def rel(p) -> str:
    p = str(p)
    r = str(ROOT) + "/"
    return p.replace(r, "")


def tail(path: Path, n: int = 30) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])
    except OSError:
        return "(no log)"


# ---------------------------------------------------------------- running clients

@dataclass
class Proc:
    rc: int
    out: str
    err: str
    seconds: float
    cpu: float  # client CPU seconds (user+sys)
    timed_out: bool = False


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
    while True:
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
    return Proc(p.returncode, "".join(out_chunks), "".join(err_chunks), time.monotonic() - start, cpu, timed_out)


def java_tool(cls: str, args: list[str]) -> list[str]:
    return ["java", "-Xmx512M", *JVM_PERF_OPTS,
            f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2-tools.properties'}",
            "-cp", f"{LIBS}/*", cls, *args]


# ---------------------------------------------------------------- brokers

class Broker:
    name = "?"

    def __init__(self, opts):
        self.opts = opts
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.dir = RUN / self.name
        self.log = RUN / f"{self.name}.log"
        self.start_cmd: list[str] = []
        self.extra_cmds: list[str] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def taskset(self) -> list[str]:
        return ["taskset", "-c", self.opts.cpuset] if shutil.which("taskset") else []

    def prepare(self):
        pass

    def start(self):
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self.port = free_port()
        self.prepare()
        logf = open(self.log, "w")
        self.proc = subprocess.Popen(self.start_cmd, stdout=logf, stderr=subprocess.STDOUT, cwd=ROOT,
                                     start_new_session=True)
        logf.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if not self.alive():
                raise BenchError(f"{self.name} exited during startup (rc {self.proc.returncode}); log tail:\n{tail(self.log)}")
            if port_open(self.port) and self.ready():
                return
            time.sleep(0.3)
        raise BenchError(f"{self.name} did not open 127.0.0.1:{self.port} within 90 s; log tail:\n{tail(self.log)}")

    def ready(self) -> bool:
        return True

    def stop(self) -> Optional[int]:
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                say(f"{self.name} ignored SIGTERM for 60 s; killing it")
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        return rc

    def version(self) -> str:
        return "?"


class Shardlog(Broker):
    name = "shardlog"

    def prepare(self):
        self.start_cmd = [*self.taskset(), str(self.opts.shardlog_bin), "--listen", self.bootstrap,
                          "--data-dir", str(self.dir / "data"), "--cores", str(self.opts.cores),
                          "--flush", self.opts.flush]

    def version(self) -> str:
        r = subprocess.run([str(self.opts.shardlog_bin), "--version"], capture_output=True, text=True)
        return r.stdout.strip() or "?"


class Kafka(Broker):
    name = "kafka"

    def prepare(self):
        cport = free_port()
        while cport == self.port:
            cport = free_port()
        props = (KAFKA_DIR / "server.properties").read_text()
        props = props.replace("@PORT@", str(self.port)).replace("@CONTROLLER_PORT@", str(cport)) \
            .replace("@LOG_DIR@", str(self.dir / "data"))
        cfg = self.dir / "server.properties"
        cfg.write_text(props)
        cluster_id = uuid.uuid4().bytes
        import base64
        cid = base64.urlsafe_b64encode(cluster_id).decode().rstrip("=")
        fmt = ["java", f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2-tools.properties'}", "-cp", f"{LIBS}/*",
               "kafka.tools.StorageTool", "format", "--standalone", "-t", cid, "-c", str(cfg)]
        r = subprocess.run(fmt, capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"kafka storage format failed: {r.stdout}{r.stderr}")
        self.extra_cmds = [shlex.join(fmt)]
        self.start_cmd = [*self.taskset(), "java", "-Xmx1G", "-Xms1G", *JVM_PERF_OPTS,
                          f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2-broker.properties'}",
                          "-cp", f"{LIBS}/*", "kafka.Kafka", str(cfg)]

    def ready(self) -> bool:
        try:
            return "Kafka Server started" in self.log.read_text(errors="replace")
        except OSError:
            return False

    def version(self) -> str:
        jars = sorted(LIBS.glob("kafka_2.13-*.jar"))
        return "Apache Kafka " + jars[0].name[len("kafka_2.13-"):-4] if jars else "?"


# ---------------------------------------------------------------- results

@dataclass
class Result:
    broker: str
    workload: str
    client: str
    ok: bool = True
    error: str = ""
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    mibps: Optional[float] = None
    rps: Optional[float] = None
    p50: Optional[float] = None
    p99: Optional[float] = None
    p999: Optional[float] = None
    max: Optional[float] = None
    avg: Optional[float] = None
    broker_cpu: Optional[float] = None
    cpu_per_gb: Optional[float] = None
    peak_rss_mib: Optional[float] = None
    client_cpu: Optional[float] = None
    notes: list = field(default_factory=list)
    commands: list = field(default_factory=list)


def percentile(sorted_vals: list, q: float) -> Optional[float]:
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, int(round(q * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


# ---------------------------------------------------------------- the bench

class Bench:
    def __init__(self, opts):
        self.opts = opts
        self.results: list[Result] = []
        self.commands: list[tuple[str, str]] = []  # (what, command)
        self.kafka_rps: Optional[float] = None
        self.limits: dict = {}
        self.broker_events: list[str] = []
        self.versions: dict = {}
        self.rate_used: dict = {}
        self.profile: dict = {}
        self.loadavg: dict = {}
        q = opts.quick
        self.sizes = dict(
            max_records=200_000 if q else 2_000_000,
            small_records=1_000_000 if q else 10_000_000,
            rate_seconds=10 if q else 30,
            part_records=100_000 if q else 300_000,
            conn_seconds=8 if q else 20,
            timeout=300 if q else 900,
        )

    # -- one client step against a running broker -------------------------------
    def step(self, broker: Broker, workload: str, client: str, cmd: list[str], parse, moved_bytes=None,
             timeout=None, env=None) -> Result:
        res = Result(broker.name, workload, client)
        res.commands.append(rel(shlex.join(cmd)))
        label = f"{broker.name} | {workload} ({client})"
        if not broker.alive():
            res.ok, res.error = False, "broker not running"
            self.results.append(res)
            return res
        reset_hwm(broker.pid)
        cpu0 = proc_cpu_seconds(broker.pid)
        with Ticker(label):
            p = run_cmd(cmd, timeout or self.sizes["timeout"], env=env, alive=broker.alive)
        self.after_step(broker, res, cpu0, p, parse, moved_bytes)
        return res

    def after_step(self, broker: Broker, res: Result, cpu0: float, p: Proc, parse, moved_bytes=None):
        if broker.alive():
            res.broker_cpu = proc_cpu_seconds(broker.pid) - cpu0
            res.peak_rss_mib = proc_status_kib(broker.pid, "VmHWM") / 1024
        res.client_cpu = p.cpu
        res.seconds = p.seconds
        try:
            if p.timed_out:
                raise BenchError(f"client timed out after {p.seconds:.0f} s")
            parse(res, p)
            if p.rc != 0:
                raise BenchError(f"client exited with {p.rc}")
        except BenchError as e:
            res.ok = False
            out = (p.out[-1500:] + "\n" + p.err[-2500:]).strip()
            res.error = f"{e}\n--- client output (tail) ---\n{out}"
        except Exception as e:  # a parse failure: keep the output for the report
            res.ok = False
            res.error = f"could not parse client output ({e!r})\n{(p.out[-1500:] + p.err[-1500:]).strip()}"
        if not broker.alive():
            res.ok = False
            msg = f"{broker.name} died during {res.workload} ({res.client}), rc {broker.proc.returncode}"
            res.error = (res.error + "\n" if res.error else "") + msg + "\n--- broker log (tail) ---\n" + tail(broker.log)
            self.broker_events.append(msg)
        moved = moved_bytes if moved_bytes is not None else res.bytes
        if res.broker_cpu is not None and moved:
            res.cpu_per_gb = res.broker_cpu / (moved / 1e9)
        if res.ok:
            parts = [f"{res.mibps:.1f} MiB/s" if res.mibps is not None else None,
                     f"{res.rps:,.0f} rec/s" if res.rps is not None else None,
                     f"p99 {res.p99:g} ms" if res.p99 is not None else None,
                     f"broker CPU {res.broker_cpu:.1f} s" if res.broker_cpu is not None else None,
                     f"{res.cpu_per_gb:.1f} CPU-s/GB" if res.cpu_per_gb is not None else None]
            say(f"    -> {', '.join(x for x in parts if x)} ({res.seconds:.0f} s)")
        else:
            say(f"    -> FAILED: {res.error.splitlines()[0]}")
        self.results.append(res)

    # -- parsers -----------------------------------------------------------------
    @staticmethod
    def parse_java_producer(record_size):
        rx = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                        r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")

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
            errs = [l for l in p.err.splitlines() if "ERROR" in l or "Exception" in l]
            if errs:
                res.notes.append("client errors: " + " | ".join(errs[:3])[:400])
        return parse

    @staticmethod
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

    @staticmethod
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

    @staticmethod
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

    # -- topics ------------------------------------------------------------------
    def create_topic(self, broker: Broker, name: str, partitions: int):
        cmd = java_tool("org.apache.kafka.tools.TopicCommand",
                        ["--bootstrap-server", broker.bootstrap, "--create", "--topic", name,
                         "--partitions", str(partitions), "--replication-factor", "1"])
        self.commands.append((f"{broker.name}: create topic {name}", rel(shlex.join(cmd))))
        last = None
        for _ in range(5):
            p = run_cmd(cmd, 120)
            if p.rc == 0 or "already exists" in p.out + p.err:
                return
            last = p
            time.sleep(2)
        raise BenchError(f"creating topic {name} ({partitions} partitions) on {broker.name} failed: "
                         f"{(last.out + last.err)[-1500:]}")

    # -- workloads -----------------------------------------------------------------
    def java_producer(self, broker, workload, topic, n, size, rate=-1, client="java", extra=()):
        cmd = java_tool("org.apache.kafka.tools.ProducerPerformance",
                        ["--topic", topic, "--num-records", str(n), "--record-size", str(size),
                         "--throughput", str(rate), "--command-property", f"bootstrap.servers={broker.bootstrap}",
                         "acks=all", *extra])
        return self.step(broker, workload, client, cmd, self.parse_java_producer(size))

    def rdkafka_producer(self, broker, workload, topic, n, size, rate=None, latency=False, client="rdkafka"):
        cmd = [str(RDPERF), "-P", "-t", topic, "-b", broker.bootstrap, "-s", str(size), "-c", str(n),
               "-a", "-1", "-X", "enable.idempotence=true"]
        lat = None
        if rate:
            cmd += ["-r", str(int(rate))]
        if latency:
            lat = RUN / f"lat-{broker.name}-{workload}.txt"
            if lat.exists():
                lat.unlink()
            # librdkafka's own default linger (rdkafka_performance sets 1000 ms otherwise)
            cmd += ["-X", "linger.ms=5", "-l", "-A", str(lat)]
        return self.step(broker, workload, client, cmd, self.parse_rdkafka_producer(size, lat))

    def w_produce_max(self, b: Broker):
        self.create_topic(b, "bench-max", 4)
        n = self.sizes["max_records"]
        r = self.java_producer(b, "produce-max", "bench-max", n, 1024)
        if b.name == "kafka" and r.ok:
            self.kafka_rps = r.rps
        self.rdkafka_producer(b, "produce-max", "bench-max", n, 1024)

    def w_produce_small(self, b: Broker):
        self.create_topic(b, "bench-small", 4)
        n = self.sizes["small_records"]
        self.java_producer(b, "produce-small", "bench-small", n, 100)
        self.rdkafka_producer(b, "produce-small", "bench-small", n, 100)

    def offered_rate(self) -> int:
        if self.opts.rate:
            return int(self.opts.rate)
        if self.kafka_rps:
            return max(1000, int(self.kafka_rps / 2 / 1000) * 1000)
        return 20_000

    def w_produce_rate(self, b: Broker):
        self.create_topic(b, "bench-rate", 4)
        rate = self.offered_rate()
        self.rate_used[b.name] = rate
        n = rate * self.sizes["rate_seconds"]
        # Java only: rdkafka_performance's -r limiter busy-polls a whole core above 1,000 msgs/s,
        # which on a small machine starves the broker and measures the client, not the broker.
        self.java_producer(b, "produce-rate", "bench-rate", n, 1024, rate=rate)

    def w_consume_max(self, b: Broker):
        produced = sum(r.records for r in self.results
                       if r.broker == b.name and r.workload == "produce-max" and r.ok)
        if not produced:
            # run on its own: fill the topic first (not reported as produce-max)
            self.create_topic(b, "bench-max", 4)
            n = self.sizes["max_records"]
            cmd = [str(RDPERF), "-P", "-t", "bench-max", "-b", b.bootstrap, "-s", "1024", "-c", str(n), "-a", "-1",
                   "-X", "enable.idempotence=true"]
            self.commands.append((f"{b.name}: fill bench-max for consume-max", rel(shlex.join(cmd))))
            with Ticker(f"{b.name} | consume-max: filling topic"):
                p = run_cmd(cmd, self.sizes["timeout"])
            if p.rc != 0:
                r = Result(b.name, "consume-max", "fill", ok=False, error=p.err[-1500:])
                self.results.append(r)
                return
            produced = n
        time.sleep(1)
        cmd = java_tool("org.apache.kafka.tools.ConsumerPerformance",
                        ["--bootstrap-server", b.bootstrap, "--topic", "bench-max", "--num-records", str(produced),
                         "--timeout", "60000"])
        self.step(b, "consume-max", "java", cmd, self.parse_java_consumer(1024))
        cmd = [str(RDPERF), "-C", "-t", "bench-max", "-b", b.bootstrap, "-p", "0", "-p", "1", "-p", "2", "-p", "3",
               "-o", "beginning", "-e", "-c", str(produced)]
        self.step(b, "consume-max", "rdkafka", cmd, self.parse_rdkafka_consumer)

    def w_many_partitions(self, b: Broker):
        with Ticker(f"{b.name} | many-partitions: creating 1,000 partitions"):
            t = time.monotonic()
            self.create_topic(b, "bench-1000p", 1000)
            created = time.monotonic() - t
        # Warm-up (not measured): touch every partition so that the timed run measures steady
        # state, not the broker materialising 1,000 logs in the background after CreateTopics.
        # Repeated until one pass has no delivery failure (~30 records per partition).
        warm = [str(RDPERF), "-P", "-t", "bench-1000p", "-b", b.bootstrap, "-s", "100", "-c", "30000", "-a", "-1",
                "-X", "linger.ms=100", "-X", "message.send.max.retries=0"]
        self.commands.append((f"{b.name}: many-partitions warm-up, repeated until no delivery fails (not measured)",
                              rel(shlex.join(warm))))
        rx = re.compile(r"(\d+) delivered \(offset \d+, (\d+) failed\)")
        t = time.monotonic()
        passes, clean = 0, False
        with Ticker(f"{b.name} | many-partitions: warm-up, 30,000 x 100 B over 1,000 partitions"):
            while not clean and time.monotonic() - t < 180 and b.alive():
                wp = run_cmd(warm, 120, alive=b.alive)
                passes += 1
                m = list(rx.finditer(wp.out + wp.err))
                clean = wp.rc == 0 and bool(m) and int(m[-1].group(1)) == 30000 and int(m[-1].group(2)) == 0
                if not clean:
                    time.sleep(1)
        warm_s = time.monotonic() - t
        r = self.java_producer(b, "many-partitions", "bench-1000p", self.sizes["part_records"], 1024)
        r.notes.append(f"topic creation (1,000 partitions, incl. JVM start of the topic tool) took {created:.1f} s, "
                       f"then the warm-up took {warm_s:.1f} s in {passes} pass(es)"
                       f"{'' if clean else ' and never ran clean'} (not measured)")

    def w_many_connections(self, b: Broker, nconn: int = 200):
        self.create_topic(b, "bench-conn", 4)
        # Each producer offers a fixed rate (default 10 x 1 KiB/s, 2,000 records/s in all): 200
        # unthrottled producer processes would measure the clients starving a small machine, not
        # the broker. At <= 1,000 msgs/s rdkafka_performance's -r limiter sleeps instead of spinning.
        # Even so, 200 librdkafka processes at 50 records/s each took ~1.8 of this machine's 2 cores.
        rate_each = self.opts.conn_rate
        each = rate_each * self.sizes["conn_seconds"]
        res = Result(b.name, "many-connections", f"rdkafka x{nconn}")
        if not b.alive():
            res.ok, res.error = False, "broker not running"
            self.results.append(res)
            return
        latdir = RUN / f"conn-{b.name}"
        shutil.rmtree(latdir, ignore_errors=True)
        latdir.mkdir(parents=True)
        base = [str(RDPERF), "-P", "-t", "bench-conn", "-b", b.bootstrap, "-s", "1024", "-c", str(each),
                "-a", "-1", "-X", "enable.idempotence=true", "-X", "linger.ms=5", "-r", str(rate_each),
                "-X", "queue.buffering.max.kbytes=16384", "-l", "-q"]
        res.commands.append(rel(shlex.join(base + ["-A", f"{latdir}/lat-<i>.txt"])) + f"   # x{nconn} processes at once")
        reset_hwm(b.pid)
        cpu0 = proc_cpu_seconds(b.pid)
        procs = []
        max_conns = 0
        ru_total = 0.0
        start = time.monotonic()
        with Ticker(f"{b.name} | many-connections ({nconn} rdkafka_performance producers)"):
            for i in range(nconn):
                procs.append(subprocess.Popen(base + ["-A", str(latdir / f"lat-{i}.txt")], stdout=subprocess.DEVNULL,
                                              stderr=open(latdir / f"err-{i}.txt", "w"), cwd=ROOT,
                                              start_new_session=True))
            deadline = time.monotonic() + self.sizes["timeout"]
            pending = {p.pid: p for p in procs}
            rcs = {}
            last_ss = 0.0
            while pending and time.monotonic() < deadline:
                if not b.alive():
                    deadline = min(deadline, time.monotonic() + 5)
                if time.monotonic() - last_ss > 1.0:
                    max_conns = max(max_conns, established(b.port))
                    last_ss = time.monotonic()
                for pid in list(pending):
                    r = os.wait4(pid, os.WNOHANG)
                    if r[0]:
                        rcs[pid] = os.waitstatus_to_exitcode(r[1])
                        ru_total += r[2].ru_utime + r[2].ru_stime
                        del pending[pid]
                time.sleep(0.05)
            timed_out = bool(pending)
            for pid, p in pending.items():
                os.killpg(pid, signal.SIGKILL)
                os.wait4(pid, 0)
        wall = time.monotonic() - start
        res.seconds, res.client_cpu = wall, ru_total
        if b.alive():
            res.broker_cpu = proc_cpu_seconds(b.pid) - cpu0
            res.peak_rss_mib = proc_status_kib(b.pid, "VmHWM") / 1024
        lat = []
        for f in latdir.glob("lat-*.txt"):
            lat.extend(int(x) / 1000 for x in f.read_text().split())
        lat.sort()
        res.records = len(lat)
        res.bytes = res.records * 1024
        res.rps = res.records / wall
        res.mibps = res.bytes / MIB / wall
        fill_latency(res, lat)
        res.notes.append(f"{nconn} processes x {each} records at {rate_each} records/s each (offered "
                         f"{nconn * rate_each:,} records/s, {nconn * rate_each * 1024 / MIB:.1f} MiB/s); MiB/s is over "
                         f"the wall time including process start; max established client connections seen: "
                         f"{max_conns}")
        failed = [rc for rc in rcs.values() if rc != 0]
        expected = nconn * each
        if timed_out or failed or res.records < expected:
            res.ok = False
            errs = ""
            for f in sorted(latdir.glob("err-*.txt"))[:3]:
                t = f.read_text(errors="replace").strip()
                if t:
                    errs += f"\n{f.name}: {t[-600:]}"
            res.error = (f"{len(pending)} producers timed out, {len(failed)} exited non-zero, "
                         f"{res.records}/{expected} records delivered{errs}")
        if not b.alive():
            res.ok = False
            msg = f"{b.name} died during many-connections, rc {b.proc.returncode}"
            res.error += "\n" + msg + "\n" + tail(b.log)
            self.broker_events.append(msg)
        if res.broker_cpu is not None and res.bytes:
            res.cpu_per_gb = res.broker_cpu / (res.bytes / 1e9)
        if res.ok:
            say(f"    -> {res.mibps:.1f} MiB/s, p99 {res.p99:g} ms, broker CPU {res.broker_cpu:.1f} s, "
                f"{max_conns} connections")
        else:
            say(f"    -> FAILED: {res.error.splitlines()[0]}")
        self.results.append(res)

    # -- machine limits --------------------------------------------------------------
    def measure_limits(self):
        size = (256 if self.opts.quick else 1024) * MIB
        with Ticker("limits | loopback TCP copy"):
            self.limits["loopback_mibps"] = loopback_bandwidth(size)
        say(f"    -> loopback TCP: {self.limits['loopback_mibps']:.0f} MiB/s ({size // MIB} MiB, 1 stream)")
        RUN.mkdir(parents=True, exist_ok=True)
        f = RUN / "dd-odirect.tmp"
        cmd = ["dd", "if=/dev/zero", f"of={f}", "bs=1M", f"count={size // MIB}", "oflag=direct", "conv=fsync"]
        self.commands.append(("limits: O_DIRECT write bandwidth of the data disk", rel(shlex.join(cmd))))
        with Ticker("limits | dd oflag=direct"):
            r = subprocess.run(cmd, capture_output=True, text=True)
        f.unlink(missing_ok=True)
        m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", r.stderr)
        if m:
            self.limits["odirect_mibps"] = int(m.group(1)) / MIB / float(m.group(2))
            say(f"    -> O_DIRECT write: {self.limits['odirect_mibps']:.0f} MiB/s")
        else:
            self.limits["odirect_error"] = r.stderr.strip()[-300:]
            say(f"    -> dd failed: {r.stderr.strip()[-200:]}")

    # -- one broker ----------------------------------------------------------------
    def run_broker(self, b: Broker):
        self.loadavg[b.name + " start"] = os.getloadavg()[0]
        say(f"== {b.name}: starting fresh on a free port (CPUs {self.opts.cpuset}); "
            f"load average {self.loadavg[b.name + ' start']:.2f}")
        try:
            b.start()
        except BenchError as e:
            say(f"    -> {e}")
            self.broker_events.append(f"{b.name} failed to start: {e}")
            for w in self.opts.workloads:
                self.results.append(Result(b.name, w, "-", ok=False, error=str(e)))
            return
        self.commands.append((f"{b.name}: start", rel(shlex.join(b.start_cmd))))
        for c in b.extra_cmds:
            self.commands.append((f"{b.name}: storage format", rel(c)))
        say(f"    {b.name} up at {b.bootstrap}, pid {b.pid}, RSS {proc_status_kib(b.pid, 'VmRSS') / 1024:.0f} MiB")
        self.versions[b.name] = b.version()
        fn = {"produce-max": self.w_produce_max, "produce-small": self.w_produce_small,
              "produce-rate": self.w_produce_rate, "consume-max": self.w_consume_max,
              "many-partitions": self.w_many_partitions, "many-connections": self.w_many_connections}
        for w in self.opts.workloads:
            if not b.alive():
                say(f"{b.name} is down; restarting it fresh for {w}")
                try:
                    b.stop()
                    b.start()
                except BenchError as e:
                    self.results.append(Result(b.name, w, "-", ok=False, error=str(e)))
                    continue
            try:
                fn[w](b)
            except BenchError as e:
                say(f"    -> {w} failed: {str(e).splitlines()[0]}")
                self.results.append(Result(b.name, w, "-", ok=False, error=str(e)))
        self.loadavg[b.name + " end"] = os.getloadavg()[0]
        rc = b.stop()
        say(f"    {b.name} stopped (exit code {rc})")
        if rc not in (0, None) and not (b.name == "kafka" and rc == 143):
            self.broker_events.append(f"{b.name} exited with code {rc} on SIGTERM; log tail:\n{tail(b.log, 15)}")

    # -- profile ------------------------------------------------------------------
    def run_profile(self, which: list[str]):
        if not shutil.which("perf"):
            self.profile["error"] = "linux-perf is not installed (scripts/bench-setup tries apt-get install linux-perf)"
            return
        b = Shardlog(self.opts)
        say("== profile: shardlog under perf record -g")
        try:
            b.start()
            self.create_topic(b, "bench-max", 4)
            n = self.sizes["max_records"] // (2 if not self.opts.quick else 1)
            for w in which:
                data = RUN / f"perf-{w}.data"
                rec = ["perf", "record", "-F", "499", "-g", "-p", str(b.pid), "-o", str(data)]
                pr = subprocess.Popen(rec, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                time.sleep(1)
                if w == "produce-max":
                    cmd = java_tool("org.apache.kafka.tools.ProducerPerformance",
                                    ["--topic", "bench-max", "--num-records", str(n), "--record-size", "1024",
                                     "--throughput", "-1", "--command-property", f"bootstrap.servers={b.bootstrap}",
                                     "acks=all"])
                else:
                    cmd = [str(RDPERF), "-C", "-t", "bench-max", "-b", b.bootstrap, "-p", "0", "-p", "1", "-p", "2",
                           "-p", "3", "-o", "beginning", "-e", "-c", str(10 ** 9)]
                with Ticker(f"profile | shardlog {w}"):
                    run_cmd(cmd, self.sizes["timeout"])
                pr.send_signal(signal.SIGINT)
                try:
                    _, perr = pr.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    pr.kill()
                    perr = "perf record did not stop"
                if pr.returncode not in (0, None, -2, 130) or not data.exists():
                    self.profile[w] = f"perf record failed (rc {pr.returncode}): {perr.strip()[-500:]}"
                    continue
                rep = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort",
                                      "dso,symbol", "--percent-limit", "1.5", "-g", "none"],
                                     capture_output=True, text=True)
                lines = [re.sub(r"[\s-]+$", "", l) for l in rep.stdout.splitlines()
                         if l.strip() and not l.startswith("#")]
                self.profile[w] = "\n".join(lines[:40]) or rep.stderr[-800:]
                self.profile[w + "_cmd"] = rel(shlex.join(rec)) + "  # while: " + rel(shlex.join(cmd))
                data.unlink(missing_ok=True)
        except BenchError as e:
            self.profile["error"] = str(e)
        finally:
            b.stop()


def fill_latency(res: Result, lat: list):
    if not lat:
        return
    res.p50, res.p99, res.p999 = percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 0.999)
    res.max = lat[-1]
    res.avg = sum(lat) / len(lat)


def established(port: int) -> int:
    try:
        r = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{port} )"],
                           capture_output=True, text=True, timeout=5)
        return len([l for l in r.stdout.splitlines() if l.strip()])
    except (OSError, subprocess.TimeoutExpired):
        return 0


def loopback_bandwidth(total: int) -> float:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = [0]

    def sink():
        c, _ = srv.accept()
        buf = bytearray(4 * MIB)
        view = memoryview(buf)
        while True:
            n = c.recv_into(view)
            if not n:
                break
            got[0] += n
        c.close()

    t = threading.Thread(target=sink)
    t.start()
    chunk = b"\0" * (4 * MIB)
    s = socket.create_connection(("127.0.0.1", port))
    start = time.monotonic()
    sent = 0
    while sent < total:
        s.sendall(chunk)
        sent += len(chunk)
    s.shutdown(socket.SHUT_WR)
    t.join()
    el = time.monotonic() - start
    s.close()
    srv.close()
    return got[0] / MIB / el


# ---------------------------------------------------------------- report

def fmt(v, digits=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 100:
            return f"{v:.0f}"
        return f"{v:.{digits}f}" if v != int(v) or digits else f"{v:.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def binary_time(p: Path) -> str:
    try:
        return dt.datetime.fromtimestamp(p.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    except OSError:
        return "?"


def machine_info() -> dict:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = proc_meminfo_gib()
    disk = subprocess.run(["df", "-h", "--output=source,fstype,size", str(RUN)], capture_output=True, text=True).stdout
    disk = " ".join(disk.splitlines()[-1].split()) if disk.strip() else "?"
    return dict(nproc=os.cpu_count(), cpu=cpu, kernel=platform.release(), mem_gib=mem, disk=disk)


def proc_meminfo_gib() -> str:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    return "?"


def tool_versions(opts) -> dict:
    v = {}
    j = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    v["java"] = j[0] if j else "?"
    clients = sorted(LIBS.glob("kafka-clients-*.jar"))
    v["kafka-clients (perf tests)"] = clients[0].name[len("kafka-clients-"):-4] if clients else "?"
    r = subprocess.run([str(RDPERF), "-h"], capture_output=True, text=True)
    m = re.search(r"librdkafka version (\S+)", r.stdout + r.stderr)
    v["librdkafka (rdkafka_performance)"] = m.group(1) if m else "?"
    stamp = CACHE / "bin" / ".rdkafka_performance.stamp"
    if stamp.exists():
        v["librdkafka (rdkafka_performance)"] += f", from rdkafka-sys {stamp.read_text().strip()}"
    return v


_COMMIT: Optional[tuple] = None


def git_commit() -> tuple[str, bool]:
    """HEAD (short) and whether src/ differs from it, fixed at the first call (the start of the
    run: other work may commit while the benchmark runs)."""
    global _COMMIT
    if _COMMIT is None:
        _COMMIT = _git_commit()
    return _COMMIT


def _git_commit() -> tuple[str, bool]:
    try:
        c = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "src", "Cargo.lock",
                                     "vendor"], capture_output=True, text=True, cwd=ROOT).stdout.strip())
        return c or "nocommit", dirty
    except OSError:
        return "nocommit", False


def get(results, broker, workload, client):
    for r in results:
        if r.broker == broker and r.workload == workload and r.client == client:
            return r
    return None


METRICS = [("MiB/s", "mibps", 1), ("records/s", "rps", 0), ("latency p50 (ms)", "p50", 1),
           ("latency p99 (ms)", "p99", 1), ("latency p99.9 (ms)", "p999", 1), ("latency max (ms)", "max", 1),
           ("broker CPU (s)", "broker_cpu", 1), ("broker CPU-s per GB", "cpu_per_gb", 2),
           ("broker peak RSS (MiB)", "peak_rss_mib", 0), ("client CPU (s)", "client_cpu", 1),
           ("records", "records", 0), ("elapsed (s)", "seconds", 1)]


def val(r: Optional[Result], attr: str):
    return getattr(r, attr) if r is not None and r.ok else None


def targets(bench: Bench) -> list[dict]:
    R = bench.results
    out = []

    def add(name, workload, client, attr, want, better, detail):
        kval, sval = val(get(R, "kafka", workload, client), attr), val(get(R, "shardlog", workload, client), attr)
        rr = ratio(sval, kval)
        met = None if rr is None else (rr >= want if better == "higher" else rr <= want)
        out.append(dict(name=name, kafka=kval, shardlog=sval, ratio=rr, want=want, better=better, met=met,
                        detail=detail))

    for client in ["java", "rdkafka"]:
        add(f"produce-max throughput ({client}), MiB/s", "produce-max", client, "mibps", 1.0, "higher", "")
    for client in ["java", "rdkafka"]:
        add(f"consume-max throughput ({client}), MiB/s", "consume-max", client, "mibps", 1.0, "higher", "")
    add("broker CPU-s per GB, produce-max (java)", "produce-max", "java", "cpu_per_gb", 0.5, "lower", "")
    add("broker CPU-s per GB, produce-max (rdkafka)", "produce-max", "rdkafka", "cpu_per_gb", 0.5, "lower", "")
    add("broker CPU-s per GB, consume-max (rdkafka)", "consume-max", "rdkafka", "cpu_per_gb", 0.5, "lower", "")
    add("produce-rate p99 latency (java), ms", "produce-rate", "java", "p99", 0.5, "lower", "")
    return out


def write_report(bench: Bench, out_dir: Path, full: bool) -> Path:
    opts = bench.opts
    commit, dirty = git_commit()
    date = dt.date.today().isoformat()
    stem = f"{date}-{commit}" + ("" if full else "-" + ("quick" if opts.quick else "partial"))
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path = out_dir / f"{stem}.md"
    png_path = out_dir / f"{stem}.png"
    R = bench.results
    tg = targets(bench)
    mach = machine_info()
    L = []
    L.append(f"# shardlog vs Apache Kafka: {date}, commit {commit}{' (with uncommitted changes)' if dirty else ''}")
    L.append("")
    L.append(f"Generated by `scripts/bench{' ' + ' '.join(opts.argv) if opts.argv else ''}` "
             f"({'quick' if opts.quick else 'full'} run, {hms(time.monotonic() - T0)} end to end). "
             "Both brokers ran on this machine in this run, one after the other, each started fresh, with the same "
             "clients and workloads. Ratios are shardlog / Kafka. Method: PERF.md (shared).")
    L.append("")
    L.append(f"![throughput and latency]({png_path.name})")
    L.append("")
    # headline
    L.append("## Targets")
    L.append("")
    L.append("| target | Kafka | shardlog | shardlog/Kafka | goal | met |")
    L.append("| --- | ---: | ---: | ---: | --- | --- |")
    for t in tg:
        met = "–" if t["met"] is None else ("**yes**" if t["met"] else "**NO**")
        goal = f"{'≥' if t['better'] == 'higher' else '≤'} {t['want']:g}×"
        L.append(f"| {t['name']} | {fmt(t['kafka'], 2)} | {fmt(t['shardlog'], 2)} | {fmt(t['ratio'], 2)} | {goal} | {met} |")
    L.append("")
    short = [t for t in tg if t["met"] is False]
    unknown = [t for t in tg if t["met"] is None]
    if short:
        L.append("**Where shardlog falls short:** " + "; ".join(
            f"{t['name']}: {fmt(t['ratio'], 2)}× of Kafka (goal {'≥' if t['better'] == 'higher' else '≤'} {t['want']:g}×)"
            for t in short) + ". A profile of shardlog's hot path is in *Profile* below.")
    else:
        L.append("shardlog meets every target that could be measured in this run.")
    if unknown:
        L.append("")
        L.append("**Not measured** (a workload failed or was not run): " + ", ".join(t["name"] for t in unknown) + ".")
    L.append("")
    failures = [r for r in R if not r.ok]
    if failures or bench.broker_events:
        L.append("## Failures")
        L.append("")
        for ev in bench.broker_events:
            L.append(f"- {ev.splitlines()[0]}")
        for r in failures:
            L.append(f"- **{r.broker} / {r.workload} ({r.client})**: {r.error.splitlines()[0] if r.error else 'failed'}")
            if r.error and len(r.error.splitlines()) > 1:
                L.append("")
                L.append("  ```")
                for line in r.error.splitlines()[1:40]:
                    L.append("  " + line)
                L.append("  ```")
        L.append("")
    # limits & machine
    L.append("## Machine and limits")
    L.append("")
    L.append(f"- `nproc` {mach['nproc']}, CPU {mach['cpu']}, kernel {mach['kernel']}, memory {mach['mem_gib']}")
    L.append(f"- data disk (both brokers' data dirs under `perf/cache/run/`): {mach['disk']}")
    if "loopback_mibps" in bench.limits:
        L.append(f"- loopback TCP bandwidth (one stream, plain socket copy): **{bench.limits['loopback_mibps']:.0f} MiB/s**")
    if "odirect_mibps" in bench.limits:
        L.append(f"- O_DIRECT sequential write of the data disk (`dd oflag=direct bs=1M`): "
                 f"**{bench.limits['odirect_mibps']:.0f} MiB/s**")
    elif "odirect_error" in bench.limits:
        L.append(f"- O_DIRECT write: dd failed: {bench.limits['odirect_error']}")
    if bench.loadavg:
        L.append("- 1-minute load average (other work on this shared machine shows up here): " + ", ".join(
            f"{k} {v:.2f}" for k, v in bench.loadavg.items()))
    L.append(f"- brokers pinned with `taskset -c {opts.cpuset}`; shardlog `--cores {opts.cores} --flush {opts.flush}`; "
             "Kafka JVM `-Xmx1G -Xms1G` with the G1 options of `kafka-server-start.sh`. Clients are not pinned: on a "
             "small machine they compete with the broker for CPU, so compare ratios and CPU-s/GB, not absolutes.")
    L.append("")
    L.append("## Versions")
    L.append("")
    L.append(f"- shardlog: {bench.versions.get('shardlog', '?')} (commit {commit}{', dirty' if dirty else ''}; "
             f"binary `{rel(opts.shardlog_bin)}`, built {binary_time(opts.shardlog_bin)})")
    L.append(f"- {bench.versions.get('kafka', 'Apache Kafka ?')}, KRaft combined mode, single node "
             "(`perf/kafka/server.properties`)")
    for k, v in tool_versions(opts).items():
        L.append(f"- {k}: {v}")
    L.append("")
    # workloads
    L.append("## Workloads")
    L.append("")
    desc = {
        "produce-max": "1 KiB records, unthrottled, acks=all, idempotence on (client default), topic of 4 partitions.",
        "produce-small": "100 B records, unthrottled, acks=all, idempotence on, 4 partitions.",
        "produce-rate": "1 KiB records at a fixed offered load: {rate}, acks=all, idempotence on, 4 partitions, "
                        "`kafka-producer-perf-test --throughput`. Latency is send-to-ack per record, in whole ms "
                        "(the tool's resolution). rdkafka_performance is not used here: its `-r` limiter busy-polls "
                        "a whole core above 1,000 msgs/s, which on this machine would take CPU from the broker.",
        "consume-max": "read the produce-max topic (4 partitions) from offset 0. Java: `kafka-consumer-perf-test` "
                       "(subscribe, consumer group); rdkafka: `rdkafka_performance -C` with the 4 partitions assigned "
                       "(no group).",
        "many-partitions": "1 KiB records into one topic of 1,000 partitions (Java producer); compare with "
                           "produce-max (4 partitions).",
        "many-connections": "200 `rdkafka_performance` producer processes at once (one broker connection each), "
                            "each at a fixed rate (`-r`), 1 KiB records, acks=all, idempotence on, `linger.ms=5`; "
                            "latency (µs resolution) over all records of all producers.",
    }
    for w in opts.workloads:
        rows = [r for r in R if r.workload == w]
        if not rows:
            continue
        L.append(f"### {w}")
        L.append("")
        rate = ", ".join(f"{b}: {v:,} records/s ({v * 1024 / MIB:.0f} MiB/s)" for b, v in bench.rate_used.items())
        L.append(desc[w].format(rate=rate or "n/a"))
        L.append("")
        clients = []
        for r in rows:
            if r.client not in clients and r.client != "-":
                clients.append(r.client)
        for c in clients:
            k, s = get(R, "kafka", w, c), get(R, "shardlog", w, c)
            L.append(f"**client: {c}**")
            L.append("")
            L.append("| | Kafka | shardlog | shardlog/Kafka |")
            L.append("| --- | ---: | ---: | ---: |")
            for label, key, d in METRICS:
                kv = getattr(k, key) if k and k.ok else None
                sv = getattr(s, key) if s and s.ok else None
                if kv is None and sv is None:
                    continue
                L.append(f"| {label} | {fmt(kv, d)} | {fmt(sv, d)} | {fmt(ratio(sv, kv), 2)} |")
            if (k and not k.ok) or (s and not s.ok):
                L.append(f"| status | {'ok' if k and k.ok else 'FAILED'} | {'ok' if s and s.ok else 'FAILED'} | |")
            L.append("")
            for r in (k, s):
                if r and r.notes:
                    L.append(f"- {r.broker}: " + "; ".join(r.notes))
            if w == "many-partitions":
                for b in BROKERS:
                    mp, pm = get(R, b, w, c), get(R, b, "produce-max", "java")
                    if mp and pm and mp.ok and pm.ok:
                        L.append(f"- {b}: 1,000 partitions at {mp.mibps / pm.mibps:.2f}× its own 4-partition "
                                 "produce-max (java)")
            L.append("")
    # profile
    if bench.profile:
        L.append("## Profile")
        L.append("")
        if "error" in bench.profile:
            L.append(f"Profile not taken: {bench.profile['error']}")
        for w in ("produce-max", "consume-max"):
            if w in bench.profile:
                L.append(f"shardlog during {w}, `perf report --no-children --sort dso,symbol` (self time, ≥ 1.5%; "
                         "`[k]` kernel, `[.]` user space):")
                L.append("")
                if bench.profile.get(w + "_cmd"):
                    L.append(f"`{bench.profile[w + '_cmd']}`")
                    L.append("")
                L.append("```")
                L.append(bench.profile[w])
                L.append("```")
                L.append("")
    elif short:
        L.append("## Profile")
        L.append("")
        L.append("Not taken in this run (`--no-profile`, or only some workloads ran).")
        L.append("")
    # commands
    L.append("## Exact commands")
    L.append("")
    L.append("Paths are relative to the repository root; ports were free ports picked for this run.")
    L.append("")
    L.append("```")
    jt = rel(shlex.join(java_tool("CLASS", [])[:-1]))
    L.append(f"JAVA_TOOL=\"{jt}\"")
    for what, c in bench.commands:
        L.append(f"# {what}")
        L.append(c.replace(jt + " ", "$JAVA_TOOL "))
    for r in R:
        for c in r.commands:
            L.append(f"# {r.broker} / {r.workload} ({r.client})")
            L.append(c.replace(jt + " ", "$JAVA_TOOL "))
    L.append("```")
    L.append("")
    L.append("Raw numbers: `" + f"{stem}.json" + "`.")
    md_path.write_text("\n".join(L) + "\n")
    (out_dir / f"{stem}.json").write_text(json.dumps(dict(
        date=date, commit=commit, dirty=dirty, quick=opts.quick, machine=mach, limits=bench.limits,
        rate=bench.rate_used, targets=tg, results=[asdict(r) for r in R], events=bench.broker_events,
        versions=bench.versions), indent=1, default=str))
    chart_ok = make_chart(bench, png_path)
    if not chart_ok:
        md_path.write_text(md_path.read_text().replace(f"![throughput and latency]({png_path.name})\n",
                                                       "(chart not drawn: matplotlib unavailable)\n"))
    if full:
        latest = out_dir / "LATEST.md"
        latest.write_text(md_path.read_text().replace(f"]({png_path.name})", "](LATEST.png)")
                          .replace(f"`{stem}.json`", f"`{stem}.json`, this file is a copy of `{md_path.name}`"))
        if chart_ok:
            shutil.copyfile(png_path, out_dir / "LATEST.png")
    return md_path


def make_chart(bench: Bench, path: Path, title_suffix: Optional[str] = None) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    R = bench.results
    colors = {"kafka": "#4a6fa5", "shardlog": "#d9822b"}
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.8), gridspec_kw=dict(width_ratios=[1.4, 1]))
    # throughput
    ax = axes[0]
    keys = []
    for r in R:
        if r.ok and r.mibps is not None and (r.workload, r.client) not in keys:
            keys.append((r.workload, r.client))
    x = range(len(keys))
    w = 0.38
    for i, b in enumerate(BROKERS):
        vals = []
        for wk, c in keys:
            r = get(R, b, wk, c)
            vals.append(r.mibps if r and r.ok and r.mibps is not None else 0)
        bars = ax.bar([xi + (i - 0.5) * w for xi in x], vals, w, label=b, color=colors[b])
        for bar, v in zip(bars, vals):
            if v:
                ax.text(bar.get_x() + bar.get_width() / 2, v, f"{v:.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{wk}\n{c}" for wk, c in keys], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("MiB/s")
    ax.set_title("Throughput (higher is better)")
    ax.margins(y=0.08)
    # latency percentiles, one group per (workload, client), gaps between groups
    ax = axes[1]
    lat_keys = [k for k in [("produce-rate", "java"), ("many-connections", "rdkafka x200"), ("produce-max", "java")]
                if any(val(get(R, b, *k), "p99") is not None for b in BROKERS)]
    pct = [("p50", "p50"), ("p99", "p99"), ("p99.9", "p999"), ("max", "max")]
    xs, labels, centers = [], [], []
    pos = 0.0
    for k in lat_keys:
        first = pos
        for p, _ in pct:
            xs.append(pos)
            labels.append(p)
            pos += 1
        centers.append(((first + pos - 1) / 2, f"{k[0]} ({k[1]})"))
        pos += 0.8
    for i, b in enumerate(BROKERS):
        vals = []
        for k in lat_keys:
            for _, attr in pct:
                v = val(get(R, b, *k), attr)
                vals.append(max(v, 0.01) if v is not None else 0)
        bars = ax.bar([x + (i - 0.5) * w for x in xs], vals, w, label=b, color=colors[b])
        for bar, v in zip(bars, vals):
            if v:
                ax.text(bar.get_x() + bar.get_width() / 2, v, f"{v:.0f}" if v >= 10 else f"{v:.1f}",
                        ha="center", va="bottom", fontsize=6)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=7)
    for c, name in centers:
        ax.annotate(name, xy=(c, 0), xycoords=("data", "axes fraction"), xytext=(0, -22),
                    textcoords="offset points", ha="center", va="top", fontsize=8)
    ax.set_ylabel("ms (log scale)")
    ax.set_title("Latency percentiles, send to ack (lower is better)")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 3)
    handles, labels_ = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels_, loc="upper right", ncol=2)
    if title_suffix is None:
        title_suffix = f"{dt.date.today().isoformat()} {git_commit()[0]}"
    fig.suptitle(f"shardlog vs Apache Kafka, {title_suffix}"
                 f"{' (quick)' if bench.opts.quick else ''}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/bench", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small runs (a few minutes end to end), for development")
    ap.add_argument("--workload", action="append", choices=WORKLOADS, metavar="NAME",
                    help=f"run only this workload (repeatable): {', '.join(WORKLOADS)}")
    ap.add_argument("--broker", action="append", choices=BROKERS, help="run only this broker (repeatable)")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="shardlog --cores and size of the CPU set "
                                                                      "both brokers are pinned to (default: nproc)")
    ap.add_argument("--flush", default="interval", choices=["always", "interval", "never"],
                    help="shardlog --flush (default interval; Kafka's default never fsyncs per write either)")
    ap.add_argument("--rate", type=int, help="produce-rate offered load in records/s "
                                             "(default: half of Kafka's produce-max java records/s in this run)")
    ap.add_argument("--conn-rate", type=int, default=10, help="many-connections: records/s offered by each of the "
                                                                  "200 producers (default 10)")
    ap.add_argument("--shardlog-bin", type=Path, required=True)
    ap.add_argument("--replot", type=Path, metavar="JSON",
                    help="only redraw the chart of an earlier run from its .json (writes the .png beside it)")
    ap.add_argument("--out", type=Path, help="result folder (default perf/results for a full run of every workload "
                                             "and broker, else perf/cache/results)")
    ap.add_argument("--no-profile", action="store_true", help="skip the perf profile of shardlog")
    ap.add_argument("--profile", action="store_true", help="take the profile even if shardlog meets its targets")
    opts = ap.parse_args(argv)
    raw = list(argv if argv is not None else sys.argv[1:])
    opts.argv = []
    skip = False
    for a in raw:
        if skip:
            skip = False
        elif a == "--shardlog-bin":
            skip = True
        elif not a.startswith("--shardlog-bin="):
            opts.argv.append(a)
    opts.workloads = [w for w in WORKLOADS if not opts.workload or w in opts.workload]
    if opts.replot:
        data = json.loads(opts.replot.read_text())
        opts.quick = data.get("quick", False)
        bench = Bench(opts)
        bench.results = [Result(**r) for r in data["results"]]
        png = opts.replot.with_suffix(".png")
        make_chart(bench, png, title_suffix=f"{data['date']} {data['commit']}")
        say(f"chart: {rel(png)}")
        return 0
    brokers = [b for b in BROKERS if not opts.broker or b in opts.broker]
    ncpu = os.cpu_count() or 1
    opts.cores = max(1, min(opts.cores, ncpu))
    opts.cpuset = f"0-{opts.cores - 1}" if opts.cores > 1 else "0"
    full = not opts.quick and not opts.workload and not opts.broker
    out_dir = opts.out or (ROOT / "perf" / "results" if full else CACHE / "results")

    RUN.mkdir(parents=True, exist_ok=True)
    git_commit()

    def on_term(signum, frame):
        say(f"received signal {signum} from outside; stopping the broker and writing what was measured")
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    bench = Bench(opts)
    say(f"shardlog vs Apache Kafka: {'quick' if opts.quick else 'full'} run; brokers: {', '.join(brokers)}; "
        f"workloads: {', '.join(opts.workloads)}; CPUs {opts.cpuset}")
    bench.measure_limits()
    for name in brokers:
        b = Kafka(opts) if name == "kafka" else Shardlog(opts)
        try:
            bench.run_broker(b)
        except KeyboardInterrupt:
            b.stop()
            bench.broker_events.append("the run was interrupted (SIGINT/SIGTERM) during " + name)
            path = write_report(bench, CACHE / "results", False)
            say(f"partial results: {rel(path)}")
            raise
        finally:
            if b.alive():
                b.stop()
    short = [t for t in targets(bench) if t["met"] is False]
    if "shardlog" in brokers and not opts.no_profile and (short or opts.profile):
        which = []
        if opts.profile or any("produce" in t["name"] or "CPU" in t["name"] for t in short):
            which.append("produce-max")
        if opts.profile or any("consume" in t["name"] for t in short):
            which.append("consume-max")
        bench.run_profile(which or ["produce-max"])
    path = write_report(bench, out_dir, full)
    say(f"results: {rel(path)}" + (f" (and {rel(out_dir / 'LATEST.md')})" if full else ""))
    for t in targets(bench):
        if t["ratio"] is not None:
            say(f"    {t['name']}: shardlog/Kafka = {t['ratio']:.2f} "
                f"({'met' if t['met'] else 'NOT met'}, goal {'>=' if t['better'] == 'higher' else '<='} {t['want']:g})")
    for r in bench.results:
        if not r.ok:
            say(f"    FAILED {r.broker} / {r.workload} ({r.client}): {r.error.splitlines()[0] if r.error else ''}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
