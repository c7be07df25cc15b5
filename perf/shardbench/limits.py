"""The limits workloads (issue 11, robustness): not in the default run, only with
`scripts/bench --limits` or `--workload NAME`. Each starts from a fresh broker.

  producers-unthrottled  6, then 200 rdkafka_performance -P processes at once, no rate limit,
                         rdkafka_performance's producer settings (no idempotence: up to 1M
                         requests in flight per connection), 1 KiB records, 8 partitions, for a
                         fixed time; aggregate throughput, broker peak RSS, broker CPU
  idle-connections-5k    5,000 TCP connections that each send one ApiVersions and then stay
                         idle (python -m shardbench.idle); broker RSS and CPU, and the latency
                         of a fixed-rate producer without and while they are held
  partitions-10k         one topic of 10,000 partitions written once, the broker restarted:
                         start-up time (exec to listening, to Metadata listing every partition
                         with a leader, to a Produce with one record to every partition
                         succeeding), RSS after start, latency of a fixed-rate producer over all
                         partitions

Every run that writes at full speed is capped by a DiskGuard: the machine is shared, and 200
unthrottled producers write some 350 MB/s.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from . import kproto
from .brokers import Broker, established, open_fds, port_open, proc_cpu_seconds, proc_status_kib, reset_hwm
from .clients import create_topic_cmd, java_tool, rdkafka_producer_cmd, run_cmd
from .common import GIB, MIB, RDPERF, ROOT, RUN, BenchError, Result, Ticker, rel, say, tail

LIMIT_WORKLOADS = ["producers-unthrottled", "idle-connections-5k", "partitions-10k"]
PERF = ROOT / "perf"

FLOOD_TOPIC, FLOOD_PARTITIONS = "bench-flood", 8
FLOOD_BASELINE = 6  # the first data point (1.0 GB of broker RSS before the budgets)
IDLE_CONNS = 5000
BIG_TOPIC, BIG_PARTITIONS = "bench-10k", 10_000
STOP_WAIT = 240  # s a broker with 10,000 partitions gets to exit on SIGTERM before SIGKILL
PROBE_RATE = 500  # records/s of the latency probe; rdkafka_performance's -r sleeps (no spin) at <= 1,000
RDKAFKA_SUMMARY = re.compile(r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset -?\d+, (\d+) failed\) "
                             r"in (\d+)ms: (\d+) msgs/s and [\d.]+ MB/s, (\d+) produce failures")


def rss_mib(pid: int, key: str = "VmRSS") -> float:
    return proc_status_kib(pid, key) / 1024


class DiskGuard:
    """Says when a run has written too much: more than `cap` bytes taken from the data disk
    since it was made, or less than `min_free` left (another run may share the disk)."""

    def __init__(self, path: Path, cap: int = 10 * GIB, min_free: int = 10 * GIB):
        self.path, self.cap, self.min_free = path, cap, min_free
        self.free0 = self.free()

    def free(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def exceeded(self) -> Optional[str]:
        free = self.free()
        if self.free0 - free > self.cap:
            return f"stopped early: {(self.free0 - free) / GIB:.1f} GiB written (cap {self.cap / GIB:.0f} GiB)"
        if free < self.min_free:
            return f"stopped early: {free / GIB:.1f} GiB left on the data disk"
        return None


def flood_cmd(bootstrap: str) -> list[str]:
    """rdkafka_performance -P as the issue ran it: no -r, no idempotence, its own producer defaults
    (linger.ms=1000, 3 retries, acks=all from librdkafka), except a 16 MiB client queue: the
    default (100,000 messages, ~100 MiB each) times 200 processes would not fit this machine."""
    return [str(RDPERF), "-P", "-t", FLOOD_TOPIC, "-b", bootstrap, "-s", "1024",
            "-X", "queue.buffering.max.kbytes=16384"]


def parse_flood_out(text: str) -> Optional[tuple[int, int, int]]:
    """(delivered, delivery failures, produce calls refused for a full queue) from the last
    stats line of one rdkafka_performance -P."""
    m = None
    for m in RDKAFKA_SUMMARY.finditer(text):
        pass
    return (int(m.group(3)), int(m.group(4)), int(m.group(7))) if m else None


class LimitsMixin:
    """The limits workloads, mixed into workloads.Bench (self.opts, self.sizes, self.results,
    self.commands, self.step, self.create_topic, self.rdkafka_producer come from there)."""

    def limit_sizes(self) -> dict:
        q = self.opts.quick
        return dict(flood_procs=getattr(self.opts, "flood_procs", 200), flood_seconds=8 if q else 20,
                    probe_seconds=10 if q else 30, fill_records=200_000)

    def missing_broker(self, b: Broker, workload: str, client: str) -> bool:
        if b.alive():
            return False
        self.results.append(Result(b.name, workload, client, ok=False, error="broker not running"))
        return True

    def finish(self, b: Broker, res: Result):
        """Marks `res` failed when the broker died, prints the one-line outcome, keeps it."""
        if not b.alive():
            res.ok = False
            msg = f"{b.name} died during {res.workload} ({res.client}), rc {b.proc.returncode}"
            res.error = (res.error + "\n" if res.error else "") + msg + "\n--- broker log (tail) ---\n" + tail(b.log)
            self.broker_events.append(msg)
        if res.ok:
            f = res.figures
            parts = [f"{res.mibps:.1f} MiB/s" if res.mibps is not None else None,
                     f"p99 {res.p99:g} ms" if res.p99 is not None else None,
                     f"peak RSS {res.peak_rss_mib:.0f} MiB" if res.peak_rss_mib is not None else None,
                     f"broker CPU {res.broker_cpu:.1f} s" if res.broker_cpu is not None else None,
                     *(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in f.items())]
            say(f"    -> {', '.join(x for x in parts if x)} ({res.seconds:.0f} s)")
        else:
            say(f"    -> FAILED: {res.error.splitlines()[0] if res.error else ''}")
        self.results.append(res)

    def probe(self, b: Broker, workload: str, topic: str, client: str) -> Result:
        """The latency probe: rdkafka_performance -P at PROBE_RATE records/s of 1 KiB (acks=all,
        idempotence on, linger.ms=5), latency of every record (µs), as one step."""
        n = PROBE_RATE * self.limit_sizes()["probe_seconds"]
        r = self.rdkafka_producer(b, workload, topic, n, 1024, rate=PROBE_RATE, latency=True, client=client)
        r.figures["open fds"] = open_fds(b.pid) if b.alive() else None
        return r

    def warm_up(self, b: Broker, topic: str, seconds: int = 5):
        """The probe's producer for `seconds`, not measured: a topic Kafka just created takes
        writes only after its leader is in place (the first probe's p99 was ~900 ms on Kafka,
        ~13 ms on shardlog, from its first second alone), and the JVM warms up."""
        cmd = rdkafka_producer_cmd(b.bootstrap, topic, PROBE_RATE * seconds, 1024, rate=PROBE_RATE)
        self.commands.append((f"{b.name}: warm-up of {topic} (not measured)", rel(shlex.join(cmd))))
        with Ticker(f"{b.name} | warm-up of {topic}, {seconds} s (not measured)"):
            run_cmd(cmd, 120, alive=b.alive)

    # -- producers-unthrottled -------------------------------------------------------
    def w_producers_unthrottled(self, b: Broker):
        sz = self.limit_sizes()
        self.create_topic(b, FLOOD_TOPIC, FLOOD_PARTITIONS)
        base = self.flood(b, FLOOD_BASELINE, sz["flood_seconds"])
        # a fresh broker again: the same starting RSS, and the first run's data off the disk
        say(f"{b.name}: restarting fresh for the {sz['flood_procs']} producers")
        self.fresh(b, "producers-unthrottled")
        if self.missing_broker(b, "producers-unthrottled", f"rdkafka x{sz['flood_procs']}"):
            return
        self.create_topic(b, FLOOD_TOPIC, FLOOD_PARTITIONS)
        many = self.flood(b, sz["flood_procs"], sz["flood_seconds"])
        if base.ok and many.ok and base.mibps:
            many.figures["throughput vs x6"] = many.mibps / base.mibps

    def flood(self, b: Broker, nprocs: int, seconds: float) -> Result:
        """`nprocs` unthrottled producers for `seconds` (from the first exec to SIGINT), then
        the broker's RSS 5 s after they are gone."""
        res = Result(b.name, "producers-unthrottled", f"rdkafka x{nprocs}")
        if self.missing_broker(b, res.workload, res.client):
            return res
        d = RUN / f"flood-{b.name}-{nprocs}"
        if d.exists():
            for f in d.iterdir():
                f.unlink()
        d.mkdir(parents=True, exist_ok=True)
        cmd = flood_cmd(b.bootstrap)
        res.commands.append(rel(shlex.join(cmd)) + f"   # x{nprocs} processes at once, SIGINT after {seconds:g} s")
        guard = DiskGuard(b.dir)
        reset_hwm(b.pid)
        cpu0, t0 = proc_cpu_seconds(b.pid), time.monotonic()
        with Ticker(f"{b.name} | producers-unthrottled ({nprocs} rdkafka_performance, {seconds:g} s)"):
            procs = self.spawn(cmd, nprocs, d)
            spawned = time.monotonic() - t0
            stats = self.watch_flood(b, t0 + seconds, guard)
            window = time.monotonic() - t0
            cpu = proc_cpu_seconds(b.pid) - cpu0 if b.alive() else None
            rss_stop = rss_mib(b.pid) if b.alive() else None
            client_cpu, killed = self.stop_all(procs)
        time.sleep(5)
        res.seconds, res.broker_cpu, res.client_cpu = window, cpu, client_cpu
        if b.alive():
            res.peak_rss_mib = rss_mib(b.pid, "VmHWM")
            res.figures.update({"RSS at stop (MiB)": rss_stop, "RSS 5 s after (MiB)": rss_mib(b.pid)})
        self.flood_totals(res, d, nprocs, window)
        res.figures.update({"spawn time (s)": spawned, "connections (max)": stats["conns"],
                            "broker CPU (% of 1 core)": cpu / window * 100 if cpu is not None else None})
        res.notes.append(f"{nprocs} processes started in {spawned:.1f} s; throughput is all records delivered "
                         f"over the {window:.1f} s from the first exec to SIGINT; {killed} needed SIGKILL")
        if stats["guard"]:
            res.notes.append(stats["guard"])
        self.finish(b, res)
        return res

    def spawn(self, cmd: list[str], n: int, d: Path) -> list[subprocess.Popen]:
        procs = []
        for i in range(n):
            with open(d / f"out-{i}.txt", "w") as out, open(d / f"err-{i}.txt", "w") as err:
                procs.append(subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, start_new_session=True))
        return procs

    def watch_flood(self, b: Broker, until: float, guard: DiskGuard) -> dict:
        """Waits until `until`, the broker's death or the disk guard; the most connections seen."""
        conns, why = 0, None
        while time.monotonic() < until and b.alive():
            conns = max(conns, established(b.port))
            why = guard.exceeded()
            if why:
                break
            time.sleep(1.0)
        return dict(conns=conns, guard=why)

    def stop_all(self, procs: list[subprocess.Popen], grace: float = 15.0) -> tuple[float, int]:
        """SIGINT to every producer (it stops producing and prints its last stats line), SIGKILL
        to its process group after `grace` s; their CPU seconds in all and how many were killed."""
        for p in procs:
            try:
                os.kill(p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        deadline, cpu, killed = time.monotonic() + grace, 0.0, 0
        pending = {p.pid: p for p in procs}
        while pending:
            for pid in list(pending):
                r = os.wait4(pid, os.WNOHANG)
                if r[0]:
                    cpu += r[2].ru_utime + r[2].ru_stime
                    pending[pid].returncode = os.waitstatus_to_exitcode(r[1])
                    del pending[pid]
            if pending and time.monotonic() > deadline:
                for pid in list(pending):
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    r = os.wait4(pid, 0)
                    cpu += r[2].ru_utime + r[2].ru_stime
                    killed += 1
                    del pending[pid]
            time.sleep(0.05)
        return cpu, killed

    def flood_totals(self, res: Result, d: Path, nprocs: int, window: float):
        delivered = failed = refused = missing = 0
        for i in range(nprocs):
            got = parse_flood_out((d / f"out-{i}.txt").read_text(errors="replace"))
            if got is None:
                missing += 1
                continue
            delivered += got[0]
            failed += got[1]
            refused += got[2]
        res.records, res.bytes = delivered, delivered * 1024
        res.rps, res.mibps = delivered / window, delivered * 1024 / MIB / window
        res.figures.update({"delivery failures": failed, "queue-full refusals": refused})
        if res.broker_cpu is not None and res.bytes:
            res.cpu_per_gb = res.broker_cpu / (res.bytes / 1e9)
        errs = sorted({l.split("|")[2] if l.count("|") >= 3 else l[:80]
                       for i in range(nprocs) for l in (d / f"err-{i}.txt").read_text(errors="replace").splitlines()
                       if l.startswith("%3|") or "rror" in l})
        if errs:
            res.notes.append("client errors (kinds): " + ", ".join(errs[:8]))
        if missing:
            res.ok = False
            res.error = f"{missing} of {nprocs} producers printed no stats line (see {rel(d)}/err-*.txt)"
        elif not delivered:
            res.ok = False
            res.error = "no record delivered"

    # -- idle-connections-5k -----------------------------------------------------------
    def w_idle_connections_5k(self, b: Broker):
        w = "idle-connections-5k"
        self.create_topic(b, "bench-idle", 4)
        self.warm_up(b, "bench-idle")
        self.probe(b, w, "bench-idle", "latency probe, no idle connections")
        if self.missing_broker(b, w, f"{IDLE_CONNS:,} idle connections"):
            return
        res = Result(b.name, w, f"{IDLE_CONNS:,} idle connections", records=None)
        cmd = [sys.executable, "-m", "shardbench.idle", "--port", str(b.port), "--count", str(IDLE_CONNS)]
        res.commands.append(rel(shlex.join(cmd)) + "   # cwd perf/")
        rss0, fds0 = rss_mib(b.pid), open_fds(b.pid)
        t0 = time.monotonic()  # res.seconds: opening, holding, the probe, the check
        holder = subprocess.Popen(cmd, cwd=PERF, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  start_new_session=True)
        try:
            with Ticker(f"{b.name} | {w}: opening {IDLE_CONNS:,} connections"):
                opened = read_json_line(holder, 240)
            if opened is None or "error" in opened:
                raise BenchError(f"the idle-connection client failed: {opened}")
            time.sleep(5)
            if not b.alive():
                raise BenchError(f"{b.name} died while holding the connections")
            held = established(b.port)
            rss1, fds1 = rss_mib(b.pid), open_fds(b.pid)
            cpu0 = proc_cpu_seconds(b.pid)
            time.sleep(10)
            idle_cpu = proc_cpu_seconds(b.pid) - cpu0
            res.figures.update({
                "connections answered": opened["answered"], "connections failed": opened["failed"],
                "open time (s)": opened["seconds"], "established (ss)": held,
                "RSS before (MiB)": rss0, "RSS holding them (MiB)": rss1,
                "RSS per connection (KiB)": (rss1 - rss0) * 1024 / max(1, opened["answered"]),
                "open fds before": fds0, "open fds holding them": fds1,
                "broker CPU over 10 s idle (s)": idle_cpu})
            if opened["errors"]:
                res.notes.append(f"connection errors: {opened['errors']}")
            self.probe(b, w, "bench-idle", f"latency probe, {IDLE_CONNS:,} idle connections")
            holder.stdin.write("check\n")
            holder.stdin.flush()
            check = read_json_line(holder, 30) or {}
            res.figures["still open after the probe"] = check.get("still_open")
            res.seconds = time.monotonic() - t0
            res.ok = opened["answered"] == IDLE_CONNS and check.get("closed", 1) == 0
            if not res.ok:
                res.error = (f"{opened['answered']}/{IDLE_CONNS} connections answered, "
                             f"{check.get('closed', '?')} closed by the broker while held")
        except (BenchError, OSError) as e:
            res.ok, res.error = False, str(e)
        finally:
            try:
                holder.stdin.close()
            except OSError:
                pass
            try:
                holder.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(holder.pid, signal.SIGKILL)
                holder.wait()
        if b.alive():
            time.sleep(5)
            res.figures["RSS 5 s after closing (MiB)"] = rss_mib(b.pid)
        self.finish(b, res)

    # -- partitions-10k -----------------------------------------------------------------
    def w_partitions_10k(self, b: Broker):
        w = "partitions-10k"
        res = Result(b.name, w, "restart", records=None)
        t_all = time.monotonic()
        created, how = self.create_big_topic(b)
        res.figures.update({"topic creation (s)": created})
        res.notes.append(f"topic: {how}")
        fill = self.fill_big_topic(b)
        res.figures.update(fill)
        if self.missing_broker(b, w, "restart"):
            return
        res.figures.update({"RSS before restart (MiB)": rss_mib(b.pid), "open fds before restart": open_fds(b.pid),
                            "data dir (MiB)": dir_mib(b.dir)})
        t = time.monotonic()
        with Ticker(f"{b.name} | {w}: SIGTERM with {BIG_PARTITIONS:,} partitions (SIGKILL after {STOP_WAIT} s)"):
            rc = b.stop(timeout=STOP_WAIT)
        res.figures["shutdown after SIGTERM (s)"] = time.monotonic() - t
        res.notes.append(f"exit code on SIGTERM: {rc}" + (f" (did not exit within {STOP_WAIT} s: SIGKILL, so the "
                                                          "start-up below recovers from an unclean stop)"
                                                          if rc == -9 else ""))
        res.commands.append(rel(shlex.join(b.start_cmd)) + "   # the same command, data dir and port as before")
        with Ticker(f"{b.name} | {w}: restart with {BIG_PARTITIONS:,} partitions"):
            up = self.time_startup(b)
        res.figures.update(up)
        if b.alive() and "error" not in up:
            res.figures["RSS after start (MiB)"] = rss_mib(b.pid)
            res.figures["open fds after start"] = open_fds(b.pid)
            time.sleep(5)
            res.figures["RSS 5 s after start (MiB)"] = rss_mib(b.pid)
        else:
            res.ok, res.error = False, up.get("error", "broker not running after restart")
        res.seconds = time.monotonic() - t_all  # creation, fill, shutdown, start-up (not the probe)
        self.finish(b, res)
        if b.alive():
            self.probe(b, w, BIG_TOPIC, f"latency probe over {BIG_PARTITIONS:,} partitions")

    def create_big_topic(self, b: Broker) -> tuple[float, str]:
        """One CreateTopics of 10,000 partitions; where the broker refuses it, 1,000 and then
        CreatePartitions +1,000 at a time. Time until Metadata lists them all with a leader."""
        t = time.monotonic()
        with Ticker(f"{b.name} | partitions-10k: creating {BIG_PARTITIONS:,} partitions"):
            cmd = create_topic_cmd(b.bootstrap, BIG_TOPIC, BIG_PARTITIONS)
            self.commands.append((f"{b.name}: create topic {BIG_TOPIC}", rel(shlex.join(cmd))))
            p = run_cmd(cmd, 300, alive=b.alive)
            how = f"one CreateTopics of {BIG_PARTITIONS:,} partitions (kafka-topics --create)"
            if p.rc != 0 and self.wait_metadata(b, 60):
                how += f" (the tool exited with {p.rc}, but every partition was listed within 60 s)"
            elif p.rc != 0:
                lines = (p.out + p.err).strip().splitlines()
                why = next((l for l in lines if "rror" in l or "xception" in l), lines[-1] if lines else str(p.rc))
                how = (f"one CreateTopics of {BIG_PARTITIONS:,} was refused ({why.strip()[:300]}); "
                       "created as 1,000 partitions, then kafka-topics --alter +1,000 at a time")
                self.create_topic(b, BIG_TOPIC, 1000)
                for n in range(2000, BIG_PARTITIONS + 1, 1000):
                    self.alter_partitions(b, BIG_TOPIC, n)
            if not self.wait_metadata(b, 300):
                raise BenchError(f"{b.name}: Metadata did not list {BIG_PARTITIONS:,} partitions with a leader "
                                 f"within 300 s of creating them")
        return time.monotonic() - t, how

    def alter_partitions(self, b: Broker, topic: str, total: int):
        cmd = java_tool("org.apache.kafka.tools.TopicCommand",
                        ["--bootstrap-server", b.bootstrap, "--alter", "--topic", topic, "--partitions", str(total)])
        self.commands.append((f"{b.name}: grow {topic} to {total} partitions", rel(shlex.join(cmd))))
        p = run_cmd(cmd, 300, alive=b.alive)
        if p.rc != 0:
            raise BenchError(f"growing {topic} to {total} partitions on {b.name} failed: {(p.out + p.err)[-800:]}")

    def wait_metadata(self, b: Broker, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and b.alive():
            got = kproto.metadata_ready(b.port, BIG_TOPIC)
            if got and got[0] == BIG_PARTITIONS:
                return True
            time.sleep(0.5)
        return False

    def fill_big_topic(self, b: Broker) -> dict:
        """Writes 200,000 x 100 B records over the partitions (librdkafka's partitioner picks a
        random partition for a record without key: 20 per partition on average, so a partition
        stays empty with probability e^-20), then one record to every partition in one Produce."""
        n = self.limit_sizes()["fill_records"]
        cmd = [str(RDPERF), "-P", "-t", BIG_TOPIC, "-b", b.bootstrap, "-s", "100", "-c", str(n), "-a", "-1",
               "-X", "linger.ms=100"]
        self.commands.append((f"{b.name}: fill {BIG_TOPIC} (not measured as throughput)", rel(shlex.join(cmd))))
        with Ticker(f"{b.name} | partitions-10k: writing {n:,} x 100 B over {BIG_PARTITIONS:,} partitions"):
            p = run_cmd(cmd, 600, alive=b.alive)
        got = parse_flood_out(p.out + p.err)
        if got is None or got[0] < n:
            raise BenchError(f"filling {BIG_TOPIC} on {b.name}: {got[0] if got else 0}/{n} delivered, rc {p.rc}\n"
                             f"{(p.out[-600:] + p.err[-900:]).strip()}")
        t, tries = time.monotonic(), 0
        while True:
            # Kafka lists a new partition in Metadata before its replica takes writes
            # (NOT_LEADER_OR_FOLLOWER, 6): retry until every partition has taken a record.
            errs, tries = kproto.produce_all(b.port, BIG_TOPIC, BIG_PARTITIONS), tries + 1
            if errs == {0: BIG_PARTITIONS} or time.monotonic() - t > 180 or not b.alive():
                break
            time.sleep(1)
        if errs != {0: BIG_PARTITIONS}:
            raise BenchError(f"one record to each of {BIG_PARTITIONS:,} partitions on {b.name}: error codes {errs} "
                             f"after {tries} tries in {time.monotonic() - t:.0f} s")
        return {"fill time (s)": p.seconds, "Produce to every partition, tries": tries}

    def time_startup(self, b: Broker, timeout: float = 600.0) -> dict:
        """Relaunches the broker and times, from the exec: the port accepting connections,
        Metadata listing every partition with a leader, and a Produce (acks=all) with one record
        to each of the 10,000 partitions answered without error."""
        t0 = b.relaunch()
        out: dict = {}
        stage = "listen"
        while time.monotonic() - t0 < timeout:
            if not b.alive():
                return {**out, "error": f"{b.name} exited during start-up (rc {b.proc.returncode}); log tail:\n"
                                        f"{tail(b.log)}"}
            el = time.monotonic() - t0
            if stage == "listen" and port_open(b.port):
                out["start-up: listening (s)"], stage = el, "metadata"
            elif stage == "metadata":
                got = kproto.metadata_ready(b.port, BIG_TOPIC)
                if got and got[0] == BIG_PARTITIONS:
                    out["start-up: Metadata lists all (s)"], stage = time.monotonic() - t0, "produce"
            elif stage == "produce":
                errs = kproto.produce_all(b.port, BIG_TOPIC, BIG_PARTITIONS)
                if errs == {0: BIG_PARTITIONS}:
                    out["start-up: produce to all partitions (s)"] = time.monotonic() - t0
                    return out
                out["produce errors seen"] = str(errs)
            time.sleep(0.1)
        return {**out, "error": f"{b.name} not serving all {BIG_PARTITIONS:,} partitions {timeout:.0f} s after the "
                                f"exec (reached: {stage}); log tail:\n{tail(b.log)}"}


def read_json_line(p: subprocess.Popen, timeout: float) -> Optional[dict]:
    """The next line of `p`'s stdout as JSON; None on timeout, EOF or garbage."""
    r, _, _ = select.select([p.stdout], [], [], timeout)
    if not r:
        return None
    line = p.stdout.readline()
    try:
        return json.loads(line) if line else None
    except ValueError:
        return None


def dir_mib(path: Path) -> Optional[float]:
    r = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True)
    try:
        return int(r.stdout.split()[0]) / 1024
    except (IndexError, ValueError):
        return None
