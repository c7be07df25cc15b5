"""The workloads and how they run. For each broker in turn (Kafka first: its produce-max
rate sets produce-rate's offered load), the broker is started fresh and every selected
workload runs against it:

  produce-max      1 KiB records, unthrottled, acks=all, idempotence on, 4 partitions
  produce-max-tls  produce-max over an SSL listener (shardbench.tls: certificates made
                   with openssl once per run; both brokers read the same PEM files)
  produce-small    100 B records, otherwise the same
  produce-rate     fixed offered load (half of Kafka's produce-max records/s): latency
  consume-max      read the produce-max topic back from offset 0
  consume-cold     the same after a broker restart and a dropped page cache (both read
                   from the disk); runs last, since it restarts the broker
  produce-txn      produce-max's records from a transactional Java producer, a transaction
                   every 100 ms (issue 12)
  many-partitions  1,000 partitions, 1 KiB records
  many-connections 200 producer processes (rdkafka_performance), one connection each

and, only when asked for (--limits, --workload), the limits workloads of limits.py, each on
a broker started fresh: producers-unthrottled, idle-connections-5k, partitions-10k.

Per broker and workload: MiB/s, records/s, latency percentiles, broker CPU seconds
(utime+stime from /proc/<pid>/stat), CPU seconds per GB moved, peak RSS (VmHWM, reset
before each step through /proc/<pid>/clear_refs).

Also here: the machine limits measured before the brokers (loopback TCP with `send` and with
`sendfile`, and the sender's CPU per GB for each; O_DIRECT write)
and the `perf record` profile of shardlog taken when it misses a target.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

from . import kproto
from .brokers import Broker, Shardlog, established, port_open, proc_cpu_seconds, proc_status_kib, reset_hwm
from .clients import (Proc, create_topic_cmd, java_consumer_cmd, java_producer_cmd, parse_java_consumer,
                      parse_java_producer, parse_rdkafka_consumer, parse_rdkafka_producer, rdkafka_consumer_cmd,
                      rdkafka_producer_cmd, run_cmd)
from .common import MIB, RDPERF, ROOT, RUN, BenchError, Result, Ticker, fill_latency, rel, say, tail
from .limits import LIMIT_WORKLOADS, LimitsMixin
from .tls import java_client_props, rdkafka_client_args

# consume-cold goes last: it restarts the broker (and drops the page cache), which the
# workloads after it would otherwise inherit.
WORKLOADS = ["produce-max", "produce-max-tls", "produce-small", "produce-rate", "consume-max", "produce-txn",
             "many-partitions", "many-connections", "consume-cold"]
ALL_WORKLOADS = WORKLOADS + LIMIT_WORKLOADS
# The workloads that need the brokers' SSL listener (and so the run's certificates).
TLS_WORKLOADS = ["produce-max-tls"]


# ---------------------------------------------------------------- the bench

class Bench(LimitsMixin):
    def __init__(self, opts):
        self.opts = opts
        self.results: list[Result] = []
        self.commands: list[tuple[str, str]] = []  # (what, command)
        self.kafka_rps: Optional[float] = None
        self.limits: dict = {}
        self.broker_events: list[str] = []
        self.versions: dict = {}
        self.rate_used: dict = {}
        self.filled: dict = {}  # broker name -> records put in bench-max by fill_for_consume
        self.profile: dict = {}
        self.loadavg: dict = {}
        q = opts.quick
        self.sizes = dict(
            max_records=200_000 if q else 2_000_000,
            small_records=1_000_000 if q else 10_000_000,
            rate_seconds=10 if q else 30,
            rate_warmup_seconds=3 if q else 5,
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
        if p.top_thread_cpu is not None and p.seconds > 0:
            res.client_top_thread = p.top_thread
            res.client_top_thread_pct = 100 * p.top_thread_cpu / p.seconds
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

    # -- topics ------------------------------------------------------------------
    def create_topic(self, broker: Broker, name: str, partitions: int):
        cmd = create_topic_cmd(broker.bootstrap, name, partitions)
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

    # -- clients as one step -----------------------------------------------------------
    def java_producer(self, broker, workload, topic, n, size, rate=-1, client="java", extra=(), bootstrap=None):
        cmd = java_producer_cmd(bootstrap or broker.bootstrap, topic, n, size, rate=rate, extra=extra)
        return self.step(broker, workload, client, cmd, parse_java_producer(size))

    def rdkafka_producer(self, broker, workload, topic, n, size, rate=None, latency=False, client="rdkafka",
                         bootstrap=None, extra=()):
        lat = None
        if latency:
            lat = RUN / f"lat-{broker.name}-{workload}.txt"
            if lat.exists():
                lat.unlink()
        cmd = rdkafka_producer_cmd(bootstrap or broker.bootstrap, topic, n, size, rate=rate, latency_file=lat)
        cmd += list(extra)
        return self.step(broker, workload, client, cmd, parse_rdkafka_producer(size, lat))

    # -- workloads -----------------------------------------------------------------
    def w_produce_max(self, b: Broker):
        self.create_topic(b, "bench-max", 4)
        n = self.sizes["max_records"]
        r = self.java_producer(b, "produce-max", "bench-max", n, 1024)
        if b.name == "kafka" and r.ok:
            self.kafka_rps = r.rps
        self.rdkafka_producer(b, "produce-max", "bench-max", n, 1024)
        if getattr(b, "metrics_port", None):
            self.metrics_overhead(b, n)

    def w_produce_max_tls(self, b: Broker):
        """produce-max (same records, partitions, acks, clients) through the broker's SSL listener;
        the topic is created through the PLAINTEXT one."""
        certs = self.opts.certs
        if not b.ssl_port or certs is None:
            raise BenchError(f"{b.name} has no SSL listener (the certificates were not made)")
        self.create_topic(b, "bench-max-tls", 4)
        n = self.sizes["max_records"]
        self.java_producer(b, "produce-max-tls", "bench-max-tls", n, 1024, bootstrap=b.ssl_bootstrap,
                           extra=java_client_props(certs))
        self.rdkafka_producer(b, "produce-max-tls", "bench-max-tls", n, 1024, bootstrap=b.ssl_bootstrap,
                              extra=rdkafka_client_args(certs))

    def metrics_overhead(self, b: Broker, n: int):
        """The metrics endpoint's cost (issue 13): the produce-max Java producer four times more, on
        fresh topics of the same broker, without (A) and with (B) a scrape of /metrics every second,
        in the order A B B A so that a drift of the machine over the four runs cancels out."""
        for i, scraped in ((1, False), (1, True), (2, True), (2, False)):
            self.metrics_overhead_run(b, n, i, scraped)
        self.scrape_cost(b)

    def scrape_cost(self, b: Broker, scrapes: int = 100):
        """The broker CPU one scrape costs, measured directly: `scrapes` back to back on the idle
        broker (after the runs above, so with their topics and counters), broker CPU before and
        after. Noise between producer runs hides a cost this small; this does not."""
        import time
        import urllib.request
        res = Result(b.name, "metrics-overhead", f"{scrapes} scrapes back to back")
        if not b.alive():
            res.ok, res.error = False, "broker not running"
            self.results.append(res)
            return
        size = 0
        cpu0, t0 = proc_cpu_seconds(b.pid), time.monotonic()
        try:
            for _ in range(scrapes):
                with urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=5) as r:
                    size = len(r.read())
        except OSError as e:
            res.ok, res.error = False, f"scrape failed: {e}"
        res.seconds = time.monotonic() - t0
        res.broker_cpu = proc_cpu_seconds(b.pid) - cpu0
        res.notes.append(f"{size:,} bytes per scrape; {res.broker_cpu / scrapes * 1e3:.2f} ms of broker CPU "
                         f"per scrape, so {res.broker_cpu / scrapes * 100:.3f}% of one core at one scrape a second")
        self.results.append(res)

    def metrics_overhead_run(self, b: Broker, n: int, i: int, scraped: bool):
        import urllib.request
        topic = f"bench-scrape-{'on' if scraped else 'off'}-{i}"
        self.create_topic(b, topic, 4)
        if not scraped:
            self.java_producer(b, "metrics-overhead", topic, n, 1024, client=f"java, no scrape #{i}")
            return
        stop, scrapes, failures = threading.Event(), [0], [0]

        def scraper():
            while not stop.wait(1.0):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=5) as r:
                        r.read()
                    scrapes[0] += 1
                except OSError:
                    failures[0] += 1

        t = threading.Thread(target=scraper, daemon=True)
        t.start()
        try:
            r = self.java_producer(b, "metrics-overhead", topic, n, 1024,
                                   client=f"java, /metrics every 1 s #{i}")
        finally:
            stop.set()
            t.join(10)
        r.notes.append(f"{scrapes[0]} scrapes, {failures[0]} failed")

    def w_produce_txn(self, b: Broker):
        """kafka-producer-perf-test with a transactional id, committing every 100 ms."""
        self.create_topic(b, "bench-txn", 4)
        n = self.sizes["max_records"] // 2
        self.java_producer(b, "produce-txn", "bench-txn", n, 1024,
                           extra=("--transactional-id", f"bench-txn-{b.name}", "--transaction-duration-ms", "100"))

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
        # The first records wait on the client's own start (metadata, producer id, JIT: at
        # 50 MiB/s the first ~1.5 s queue up to ~300 ms in the client, on either broker): the
        # tool reports the records after `warmup` separately as its steady state.
        warmup = rate * self.sizes["rate_warmup_seconds"]
        self.java_producer(b, "produce-rate", "bench-rate", n, 1024, rate=rate,
                           extra=["--warmup-records", str(warmup)])

    def fill_for_consume(self, b: Broker, workload: str) -> int:
        """Records in the produce-max topic: what produce-max wrote in this run, or, when it
        did not run, a fill with rdkafka_performance (not reported as produce-max); 0 if the
        fill failed (recorded as a failed `workload`)."""
        produced = sum(r.records for r in self.results
                       if r.broker == b.name and r.workload == "produce-max" and r.ok)
        if produced:
            return produced
        if self.filled.get(b.name):
            return self.filled[b.name]
        self.create_topic(b, "bench-max", 4)
        n = self.sizes["max_records"]
        cmd = rdkafka_producer_cmd(b.bootstrap, "bench-max", n, 1024)
        self.commands.append((f"{b.name}: fill bench-max for {workload}", rel(shlex.join(cmd))))
        with Ticker(f"{b.name} | {workload}: filling topic"):
            p = run_cmd(cmd, self.sizes["timeout"])
        if p.rc != 0:
            self.results.append(Result(b.name, workload, "fill", ok=False, error=p.err[-1500:]))
            return 0
        self.filled[b.name] = n
        return n

    def w_consume_max(self, b: Broker):
        produced = self.fill_for_consume(b, "consume-max")
        if not produced:
            return
        time.sleep(1)
        cmd = java_consumer_cmd(b.bootstrap, "bench-max", produced)
        self.step(b, "consume-max", "java", cmd, parse_java_consumer(1024))
        cmd = rdkafka_consumer_cmd(b.bootstrap, "bench-max", produced)
        self.step(b, "consume-max", "rdkafka", cmd, parse_rdkafka_consumer)

    def restart_cold(self, b: Broker) -> tuple[Optional[str], Optional[str]]:
        """Stops the broker (SIGTERM), writes back and drops the kernel's page cache
        (`sync; echo 3 > /proc/sys/vm/drop_caches`), starts it again on its data dir and waits
        until Metadata shows the produce-max topic's 4 partitions with a leader. Returns (the
        error that stopped the restart, why the page cache was not dropped), each None when
        there was none."""
        self.note_stop(b, b.stop(), "before consume-cold")
        subprocess.run(["sync"], check=False)
        not_dropped = None
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError as e:
            not_dropped = f"the page cache was not dropped ({e}): Kafka may have read from memory"
            if "consume-cold: " + not_dropped not in self.broker_events:
                self.broker_events.append("consume-cold: " + not_dropped)
        t0 = b.relaunch()
        while time.monotonic() - t0 < 120:
            if not b.alive():
                return (f"{b.name} exited during the restart (rc {b.proc.returncode}); log tail:\n{tail(b.log)}",
                        not_dropped)
            if port_open(b.port):
                got = kproto.metadata_ready(b.port, "bench-max")
                if got and got[0] == 4:
                    return None, not_dropped
            time.sleep(0.2)
        return (f"{b.name} did not serve bench-max's 4 partitions within 120 s of its restart; log tail:\n"
                f"{tail(b.log)}", not_dropped)

    def w_consume_cold(self, b: Broker):
        """PERF.md's consume-cold: before each client, the broker is restarted and the page
        cache dropped, so both brokers read the produce-max topic from the disk (shardlog's
        batch cache starts empty; Kafka's page cache is empty)."""
        produced = self.fill_for_consume(b, "consume-cold")
        if not produced:
            return
        # the restart keeps the broker's port, so the commands can be made up front
        for client, cmd, parse in [
                ("java", java_consumer_cmd(b.bootstrap, "bench-max", produced), parse_java_consumer(1024)),
                ("rdkafka", rdkafka_consumer_cmd(b.bootstrap, "bench-max", produced), parse_rdkafka_consumer)]:
            err, not_dropped = self.restart_cold(b)
            if err:
                say(f"    -> consume-cold ({client}) failed: {err.splitlines()[0]}")
                self.results.append(Result(b.name, "consume-cold", client, ok=False, error=err))
                continue
            res = self.step(b, "consume-cold", client, cmd, parse)
            if not_dropped and b.name == "kafka":
                # not a cold read for Kafka (shardlog reads with O_DIRECT either way): no ratio
                res.ok = False
                res.error = not_dropped

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
            self.limits["loopback_mibps"], self.limits["loopback_send_cpu_per_gb"] = loopback_send(size)
        say(f"    -> loopback TCP: {self.limits['loopback_mibps']:.0f} MiB/s ({size // MIB} MiB, 1 stream), "
            f"sender {self.limits['loopback_send_cpu_per_gb']:.3f} CPU-s/GB")
        RUN.mkdir(parents=True, exist_ok=True)
        f = page_cache_file(RUN / "sendfile.tmp", 256 * MIB)
        try:
            with Ticker("limits | loopback sendfile"):
                (self.limits["loopback_sendfile_mibps"],
                 self.limits["loopback_sendfile_cpu_per_gb"]) = loopback_send(size, source=f)
        finally:
            f.unlink(missing_ok=True)
        say(f"    -> loopback sendfile from the page cache: {self.limits['loopback_sendfile_mibps']:.0f} MiB/s, "
            f"sender {self.limits['loopback_sendfile_cpu_per_gb']:.3f} CPU-s/GB")
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
        fn = {"produce-max": self.w_produce_max, "produce-max-tls": self.w_produce_max_tls,
              "produce-small": self.w_produce_small,
              "produce-rate": self.w_produce_rate, "consume-max": self.w_consume_max,
              "consume-cold": self.w_consume_cold,
              "produce-txn": self.w_produce_txn,
              "many-partitions": self.w_many_partitions, "many-connections": self.w_many_connections,
              "producers-unthrottled": self.w_producers_unthrottled,
              "idle-connections-5k": self.w_idle_connections_5k, "partitions-10k": self.w_partitions_10k}
        for i, w in enumerate(self.opts.workloads):
            if w in LIMIT_WORKLOADS and i > 0 and b.alive():
                say(f"{b.name}: restarting fresh for {w} (a limits workload starts from an empty broker)")
                self.fresh(b, w)
            if not b.alive():
                # Keep the log of the broker that went down: start() truncates it.
                kept = b.log.with_name(f"{b.log.stem}-down-before-{w}.log")
                rc = b.proc.returncode if b.proc is not None else None
                if b.log.exists():
                    shutil.copyfile(b.log, kept)
                say(f"{b.name} is down (exit code {rc}; its log: {rel(kept)}); restarting it fresh for {w}")
                say("    log tail: " + tail(b.log, 8).replace("\n", "\n    "))
                self.broker_events.append(f"{b.name} went down before {w} (exit code {rc}); log kept in {rel(kept)}")
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
        if self.opts.workloads[-1:] == ["producers-unthrottled"]:
            shutil.rmtree(b.dir, ignore_errors=True)  # up to 10 GiB of flood data on a shared disk
        self.note_stop(b, rc, "at the end")

    def note_stop(self, b: Broker, rc: Optional[int], when: str):
        """Records a broker that did not exit cleanly on SIGTERM (Kafka's JVM exits 143) in the
        run's events, with its log's tail."""
        if rc not in (0, None) and not (b.name == "kafka" and rc == 143):
            self.broker_events.append(f"{b.name} exited with code {rc} on SIGTERM {when}; log tail:\n"
                                      f"{tail(b.log, 15)}")

    def fresh(self, b: Broker, w: str):
        self.note_stop(b, b.stop(), f"before {w}")
        try:
            b.start()
        except BenchError as e:
            say(f"    -> {e}")

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
            if "produce-small" in which:
                self.create_topic(b, "bench-small", 4)
            for w in which:
                data = RUN / f"perf-{w}.data"
                rec = ["perf", "record", "-F", "499", "-g", "-p", str(b.pid), "-o", str(data)]
                pr = subprocess.Popen(rec, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                time.sleep(1)
                if w == "produce-max":
                    cmd = java_producer_cmd(b.bootstrap, "bench-max", n, 1024)
                elif w == "produce-small":
                    # after the produce-max profile: the batch cache has filled once, as in the run
                    cmd = java_producer_cmd(b.bootstrap, "bench-small", self.sizes["small_records"] // 2, 100)
                else:
                    cmd = rdkafka_consumer_cmd(b.bootstrap, "bench-max", 10 ** 9)
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



def loopback_send(total: int, source: Optional[Path] = None) -> tuple[float, float]:
    """One TCP stream over loopback carrying `total` bytes to a thread that reads them into a
    4 MiB buffer: (MiB/s, the sending thread's CPU seconds per GB sent). The sender writes
    4 MiB at a time with `send` from one buffer in memory, what shardlog does with a fetch
    response, or, given `source` (a file of at least 256 MiB in the page cache), with
    `sendfile` from it, what Kafka does. On loopback the sender's system call also runs the
    receiving side's TCP (softirq in the sender's context), so its CPU is the least any
    broker pays to hand a GB to a local consumer that way: the floor under the consume
    rows' broker CPU per GB."""
    span = 0
    if source is not None:
        span = source.stat().st_size // (4 * MIB) * (4 * MIB)
        if span == 0:
            raise ValueError(f"{source}: sendfile needs a file of at least 4 MiB")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = [0]

    def sink():
        c, _ = srv.accept()
        with c:
            view = memoryview(bytearray(4 * MIB))
            while n := c.recv_into(view):
                got[0] += n

    t = threading.Thread(target=sink, daemon=True)
    t.start()
    chunk = b"\0" * (4 * MIB)
    fd = os.open(source, os.O_RDONLY) if source is not None else None
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            start, cpu0 = time.monotonic(), time.thread_time()
            sent = 0
            while sent < total:
                if fd is None:
                    s.sendall(chunk)
                    sent += len(chunk)
                else:
                    # `sent % span` stays below the file's end, so a call never returns 0
                    sent += os.sendfile(s.fileno(), fd, sent % span, min(4 * MIB, total - sent))
            cpu = time.thread_time() - cpu0
            s.shutdown(socket.SHUT_WR)
            t.join()
            el = time.monotonic() - start
    finally:
        srv.close()
        if fd is not None:
            os.close(fd)
    return got[0] / MIB / el, cpu / (sent / 1e9)


def page_cache_file(path: Path, size: int) -> Path:
    """A file of `size` bytes written through the page cache (so it stays there, as a topic
    Kafka just wrote does) for `loopback_send`'s `sendfile` case."""
    chunk = b"\1" * (4 * MIB)
    with open(path, "wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
    return path
