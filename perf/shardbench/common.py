"""Shared by every module of the harness: repository paths (perf/cache, the Kafka jars,
rdkafka_performance, the run dir), constants, terminal output (say, Ticker), BenchError,
and the Result record one client step produces, with its latency percentiles.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent.parent
CACHE = ROOT / "perf" / "cache"
LIBS = CACHE / "kafka-libs"
RDPERF = CACHE / "bin" / "rdkafka_performance"
RUN = CACHE / "run"
KAFKA_DIR = ROOT / "perf" / "kafka"

JVM_PERF_OPTS = [
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20
GIB = 1 << 30
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
    # produce-rate: the same percentiles after the client's warm-up records
    # (kafka-producer-perf-test --warmup-records: its "steady state" summary)
    steady_p99: Optional[float] = None
    steady_p999: Optional[float] = None
    steady_max: Optional[float] = None
    broker_cpu: Optional[float] = None
    cpu_per_gb: Optional[float] = None
    peak_rss_mib: Optional[float] = None
    client_cpu: Optional[float] = None
    # the client's busiest thread: its name and its CPU seconds as a share of the elapsed
    # time, in % of one core (clients.Proc.top_thread)
    client_top_thread: Optional[str] = None
    client_top_thread_pct: Optional[float] = None
    notes: list = field(default_factory=list)
    commands: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)  # a limits workload's own figures (report.FIGURES)

    @property
    def total_cpu_per_gb(self) -> Optional[float]:
        """Client and broker CPU seconds per GB moved. Where both share a machine that they
        keep busy, throughput is set by this sum, not by the broker's share alone."""
        if not self.cpu_per_gb or not self.broker_cpu or self.client_cpu is None:
            return None
        return self.cpu_per_gb * (self.broker_cpu + self.client_cpu) / self.broker_cpu

    @property
    def cores_busy(self) -> Optional[float]:
        """Client plus broker CPU seconds over the client's elapsed time: how many cores the
        two kept busy (JVM start included)."""
        if self.broker_cpu is None or self.client_cpu is None or not self.seconds:
            return None
        return (self.broker_cpu + self.client_cpu) / self.seconds


def result_dict(r: Result) -> dict:
    """A Result for the JSON file; `figures` only where a limits workload filled it, so the
    files of the other workloads keep the layout they always had."""
    d = asdict(r)
    if not d["figures"]:
        del d["figures"]
    return d


def percentile(sorted_vals: list, q: float) -> Optional[float]:
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, int(round(q * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


def fill_latency(res: Result, lat: list):
    if not lat:
        return
    res.p50, res.p99, res.p999 = percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 0.999)
    res.max = lat[-1]
    res.avg = sum(lat) / len(lat)

