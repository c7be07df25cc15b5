"""The result files: the markdown report (perf/results/<date>-<commit>.md, LATEST.md),
the raw numbers (<stem>.json), the chart (<stem>.png, matplotlib), and what they state
beside the measurements: the targets (shardlog/Kafka ratios and goals), the machine,
tool versions and the commit measured.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .brokers import BROKERS
from .clients import java_tool
from .common import CACHE, GIB, LIBS, MIB, RDPERF, ROOT, RUN, T0, Result, hms, rel, result_dict
from .limits import FLOOD_BASELINE, IDLE_CONNS, LIMIT_WORKLOADS, PROBE_RATE

if TYPE_CHECKING:
    from .workloads import Bench


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
           ("steady-state latency p99 (ms)", "steady_p99", 1), ("steady-state latency p99.9 (ms)", "steady_p999", 1),
           ("steady-state latency max (ms)", "steady_max", 1),
           ("broker CPU (s)", "broker_cpu", 1), ("broker CPU-s per GB", "cpu_per_gb", 2),
           ("broker peak RSS (MiB)", "peak_rss_mib", 0), ("client CPU (s)", "client_cpu", 1),
           ("client's busiest thread (% of a core)", "client_top_thread_pct", 0),
           ("client + broker CPU-s per GB", "total_cpu_per_gb", 2),
           ("cores busy, client + broker", "cores_busy", 2),
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

    # Issue 8's targets: throughput ratios at or above 1.3 (Java) / 1.5 (rdkafka) for the
    # producers, 1.3 for the consumers; broker CPU per GB at or below 0.5 on every produce and
    # consume workload of one client at full speed (not many-partitions or many-connections,
    # which measure something else); produce-rate p99 / p99.9 at or below 0.5; many-partitions at
    # or above 5. Workloads with no figure in the issue (TLS, transactions, cold reads) must beat
    # Kafka.
    for w in ["produce-max", "produce-small"]:
        for client, want in [("java", 1.3), ("rdkafka", 1.5)]:
            add(f"{w} throughput ({client}), MiB/s", w, client, "mibps", want, "higher", "")
    for client in ["java", "rdkafka"]:
        add(f"consume-max throughput ({client}), MiB/s", "consume-max", client, "mibps", 1.3, "higher", "")
    if "consume-cold" in bench.opts.workloads:
        for client in ["java", "rdkafka"]:
            add(f"consume-cold throughput ({client}), MiB/s", "consume-cold", client, "mibps", 1.0, "higher", "")
    cpu_rows = [("produce-max", "java"), ("produce-max", "rdkafka"), ("produce-small", "java"),
                ("produce-small", "rdkafka"), ("produce-rate", "java"), ("consume-max", "java"),
                ("consume-max", "rdkafka"), ("consume-cold", "java"), ("consume-cold", "rdkafka")]
    for w, client in cpu_rows:
        if w in bench.opts.workloads:
            add(f"broker CPU-s per GB, {w} ({client})", w, client, "cpu_per_gb", 0.5, "lower", "")
    add("produce-rate p99 latency, whole run incl. client warm-up (java), ms", "produce-rate", "java", "p99", 0.5,
        "lower", "")
    add("produce-rate p99 latency, steady state (java), ms", "produce-rate", "java", "steady_p99", 0.5, "lower", "")
    add("produce-rate p99.9 latency, steady state (java), ms", "produce-rate", "java", "steady_p999", 0.5, "lower",
        "")
    if "many-partitions" in bench.opts.workloads:
        add("many-partitions throughput (java), MiB/s", "many-partitions", "java", "mibps", 5.0, "higher", "")
    if "produce-max-tls" in bench.opts.workloads:
        for client in ["java", "rdkafka"]:
            add(f"produce-max over TLS throughput ({client}), MiB/s", "produce-max-tls", client, "mibps", 1.0,
                "higher", "")
        for client in ["java", "rdkafka"]:
            add(f"broker CPU-s per GB, produce-max over TLS ({client})", "produce-max-tls", client, "cpu_per_gb",
                0.5, "lower", "")
    if "produce-txn" in bench.opts.workloads:
        add("produce-txn throughput (java), MiB/s", "produce-txn", "java", "mibps", 1.0, "higher", "")
        add("broker CPU-s per GB, produce-txn (java)", "produce-txn", "java", "cpu_per_gb", 0.5, "lower", "")
    return out


LIMITS_DESC = {
    "producers-unthrottled":
        f"issue 11: `rdkafka_performance -P` processes started at once with no rate limit, first {FLOOD_BASELINE} "
        "(the issue's first data point), then 200, each run on a broker started fresh, for a fixed time, then "
        "SIGINT. rdkafka_performance's producer settings: no idempotence (so up to 1,000,000 requests in flight "
        "per connection), acks=all, `linger.ms=1000`; 1 KiB records, topic of 8 partitions; the client queue is "
        "capped at 16 MiB per process (`queue.buffering.max.kbytes=16384`; the default, 100,000 messages, times "
        "200 processes would not fit the machine's memory). Throughput is every record delivered over the wall "
        "time from the first exec to SIGINT; the clients take most of the 2 cores, so it measures the machine as "
        "much as the broker. Peak RSS is VmHWM over the run; *RSS 5 s after* is once the producers are gone.",
    "idle-connections-5k":
        f"issue 11: {IDLE_CONNS:,} TCP connections from one Python process (`python -m shardbench.idle`, "
        "RLIMIT_NOFILE soft limit raised to the hard limit), each sending one ApiVersions v0 request, reading the "
        "answer, then sending nothing; neither broker limits connections by default (shardlog "
        "`--max-connections`/`--max-connections-per-ip`: no limit; Kafka `max.connections`, "
        "`max.connections.per.ip`: Integer.MAX_VALUE), so no flag was changed. Latency probe: "
        f"`rdkafka_performance -P` at {PROBE_RATE} records/s of 1 KiB (acks=all, idempotence on, `linger.ms=5`, "
        "µs resolution) into 4 partitions, after a 5 s warm-up at the same rate (not measured), once before the "
        "connections are opened and once while they are held. "
        "Kafka's *RSS per connection* is near zero because its JVM heap (`-Xms1G`) was touched before; "
        "*broker CPU over 10 s idle* is the broker's CPU time while only the idle connections are open.",
    "partitions-10k":
        "issue 11: one topic of 10,000 partitions, written once (200,000 x 100 B records from rdkafka_performance, "
        "random partition per record, then one Produce with a record for every partition), the broker stopped "
        "(SIGTERM) and started again on the same data dir. **Start-up time** is from the exec to: the port "
        "accepting connections; a Metadata v4 request listing all 10,000 partitions with a leader and no error; "
        "a Produce v3 (acks=all) with one record for each of the 10,000 partitions answered with no error on all "
        "(the broker serves every partition). Polled every 0.1 s; Kafka's includes the JVM start. Latency probe: "
        f"`rdkafka_performance -P` at {PROBE_RATE} records/s of 1 KiB, random partition per record (so spread over "
        "all 10,000), acks=all, idempotence on, `linger.ms=5`, µs resolution.",
}

FIGURE_DIGITS = {"RSS per connection (KiB)": 1, "throughput vs x6": 2}


def figure_rows(k: Optional[Result], s: Optional[Result]) -> list[str]:
    """Table rows for a limits workload's own figures (Result.figures), in the order first seen."""
    keys: list[str] = []
    for r in (k, s):
        for key in (r.figures if r else {}):
            if key not in keys:
                keys.append(key)
    rows = []
    for key in keys:
        kv, sv = (r.figures.get(key) if r else None for r in (k, s))
        if kv is None and sv is None:
            continue
        d = FIGURE_DIGITS.get(key, 1 if "(s)" in key else 0)
        rr = ratio(sv, kv) if all(isinstance(v, (int, float)) for v in (kv, sv)) else None
        rows.append(f"| {key} | {fmt(kv, d)} | {fmt(sv, d)} | {fmt(rr, 2)} |")
    return rows


def rss_bound_mib(opts) -> float:
    """The bound stated for shardlog's RSS under unthrottled producers: its batch cache
    (--cache-bytes, default a quarter of the memory, at most 1 GiB) plus the queued-request
    budget (--queued-max-request-bytes, default 256 MiB) plus 256 MiB for everything else
    (code, io_uring buffers, partition state, connection buffers)."""
    args = " ".join(getattr(opts, "shardlog_arg", []))
    m = re.search(r"--cache-bytes[= ](\d+)", args)
    cache = int(m.group(1)) if m else min(GIB, int(proc_meminfo_kib() * 1024 / 4))
    m = re.search(r"--queued-max-request-bytes[= ](\d+)", args)
    queued = int(m.group(1)) if m else 256 * MIB
    return (cache + queued + 256 * MIB) / MIB


def rss_bound_line(opts, s: Result) -> str:
    bound = rss_bound_mib(opts)
    within = "within it" if s.peak_rss_mib <= bound else "**over it**"
    return (f"- shardlog RSS bound (stated here: batch cache + queued-request budget + 256 MiB = {bound:,.0f} MiB "
            f"on this machine): peak {s.peak_rss_mib:,.0f} MiB, {within}")


def proc_meminfo_kib() -> int:
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    return 0


def targets_lines(tg: list) -> list[str]:
    """The Targets section: each target's Kafka and shardlog figures, ratio, goal and verdict."""
    L: list[str] = []
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
    return L


def send_floor_lines(tg: list, limits: dict) -> list[str]:
    """The consume CPU rows read against the machine: for each consume workload's broker
    CPU-per-GB target with a Kafka figure, the ratio a broker would reach if it did nothing
    but hand the bytes to the kernel, by the cheaper of the two ways measured before the
    brokers (`send` from memory, `sendfile` from the page cache: one sample each, a few
    percent of noise), and whether that floor already lies above the row's goal. Empty when
    neither way was measured or no consume row has a Kafka figure."""
    ways = [(limits[k], name) for k, name in (("loopback_send_cpu_per_gb", "`send`"),
                                               ("loopback_sendfile_cpu_per_gb", "`sendfile`")) if limits.get(k)]
    rows = [t for t in tg if t["name"].startswith("broker CPU-s per GB, consume") and t["kafka"]]
    if not ways or not rows:
        return []
    floor, way = min(ways)
    parts = [f"{t['name'].removeprefix('broker CPU-s per GB, ')} {floor / t['kafka']:.2f}×" for t in rows]
    above = [t["name"].removeprefix("broker CPU-s per GB, ") for t in rows
             if t["better"] == "lower" and floor / t["kafka"] > t["want"]]
    verdict = (f"The goal lies below that floor for: {', '.join(above)}: out of reach for any broker over "
               "loopback in this run." if above else "Every goal lies above its floor in this run.")
    return [f"**The send floor under the consume CPU rows:** the cheaper way to hand bytes to a local reader "
            f"over loopback measured here ({way}, *Machine and limits*) costs the sending thread {floor:.3f} CPU-s "
            f"per GB, so a broker that did nothing else would stand at: {'; '.join(parts)} of Kafka. {verdict}", ""]


# Full runs whose Kafka figures are the reference for `kafka_drift_lines` (same host type,
# Kafka's producers at their usual speed): a day whose Kafka is far from them is flagged.
KAFKA_REFERENCE_RUNS = ("2026-12-05-c01c6fb.json", "2026-12-05-c01c6fb-run2.json")
# Kafka's figure more than this factor away from the reference (either way) is flagged.
KAFKA_DRIFT = 1.3


def kafka_reference(results_dir: Path) -> dict:
    """Each target's Kafka figure in the reference runs (the mean when both have it)."""
    seen: dict = {}
    for name in KAFKA_REFERENCE_RUNS:
        try:
            data = json.loads((results_dir / name).read_text())
        except (OSError, ValueError):
            continue
        for t in data.get("targets", []):
            if t.get("kafka"):
                seen.setdefault(t["name"], []).append(t["kafka"])
    return {k: sum(v) / len(v) for k, v in seen.items()}


def kafka_drift_lines(tg: list, reference: dict) -> list[str]:
    """Kafka's own figures in this run against the reference runs: the rows where Kafka
    is more than KAFKA_DRIFT times faster or slower than there, so that a ratio that moved
    because Kafka did (the bench host's memory management has halved Kafka's producers
    for a day) is not read as shardlog's progress. Latency rows are left out: they move by
    2x between the reference runs themselves. Empty when nothing drifted."""
    drifted = []
    for t in tg:
        if "latency" in t["name"]:
            continue
        ref, now = reference.get(t["name"]), t["kafka"]
        if ref and now and not (1 / KAFKA_DRIFT <= now / ref <= KAFKA_DRIFT):
            drifted.append(f"{t['name']}: {fmt(now, 2)} against {fmt(ref, 2)} ({now / ref:.2f}×)")
    if not drifted:
        return []
    return [f"**Kafka far from its reference runs** ({', '.join(f'`{n}`' for n in KAFKA_REFERENCE_RUNS)}; "
            f"more than {KAFKA_DRIFT:g}× either way): " + "; ".join(drifted) + ". The ratios of these rows "
            "moved with Kafka; compare shardlog's own figures across runs instead.", ""]


def write_report(bench: Bench, out_dir: Path, full: bool) -> Path:
    opts = bench.opts
    commit, dirty = git_commit()
    date = dt.date.today().isoformat()
    stem = f"{date}-{commit}" + ("" if full else "-" + ("quick" if opts.quick else "partial"))
    if getattr(opts, "limits_run", False):
        stem = f"{date}-{commit}-limits"
    out_dir.mkdir(parents=True, exist_ok=True)
    # A second run at the same commit gets its own files (-run2, -run3, ...) instead of
    # overwriting the first: runs are meant to be read side by side.
    base, n = stem, 1
    while (out_dir / f"{stem}.md").exists():
        n += 1
        stem = f"{base}-run{n}"
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
    short = [t for t in tg if t["met"] is False]
    if any(w not in LIMIT_WORKLOADS for w in opts.workloads):
        L.extend(targets_lines(tg))
        L.extend(send_floor_lines(tg, bench.limits))
        L.extend(kafka_drift_lines(tg, kafka_reference(Path(__file__).resolve().parents[1] / "results")))
    else:
        L.append("Only the limits workloads ran (issue 11, see *Workloads*); the throughput and latency targets "
                 "of the default run are not measured here.")
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
        L.append(f"- loopback TCP bandwidth (one stream, plain socket copy): **{bench.limits['loopback_mibps']:.0f} MiB/s**"
                 + (f"; the sending thread's CPU: **{bench.limits['loopback_send_cpu_per_gb']:.3f} CPU-s per GB** "
                    "(`send` of 4 MiB from memory, as shardlog sends a fetch response)"
                    if "loopback_send_cpu_per_gb" in bench.limits else ""))
    if "loopback_sendfile_mibps" in bench.limits:
        L.append(f"- loopback `sendfile` of a file in the page cache (as Kafka sends a fetch response): "
                 f"**{bench.limits['loopback_sendfile_mibps']:.0f} MiB/s**; the sending thread's CPU: "
                 f"**{bench.limits['loopback_sendfile_cpu_per_gb']:.3f} CPU-s per GB**")
    if "odirect_mibps" in bench.limits:
        L.append(f"- O_DIRECT sequential write of the data disk (`dd oflag=direct bs=1M`): "
                 f"**{bench.limits['odirect_mibps']:.0f} MiB/s**")
    elif "odirect_error" in bench.limits:
        L.append(f"- O_DIRECT write: dd failed: {bench.limits['odirect_error']}")
    if bench.loadavg:
        L.append("- 1-minute load average (other work on this shared machine shows up here): " + ", ".join(
            f"{k} {v:.2f}" for k, v in bench.loadavg.items()))
    extra = "".join(f" {a}" for a in getattr(opts, "shardlog_arg", []))
    L.append(f"- brokers pinned with `taskset -c {opts.cpuset}`; shardlog `--cores {getattr(opts, 'shardlog_cores', opts.cores)} --flush {opts.flush}{extra}`; "
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
        "produce-max-tls": "produce-max (1 KiB records, unthrottled, acks=all, idempotence on, 4 partitions) "
                           "through each broker's SSL listener: TLS 1.3 as the client and broker negotiate "
                           "(shardlog: rustls with ring; Kafka: the JDK's provider), server certificate only "
                           "(EC P-256, made with openssl for the run, `perf/cache/run/tls/`), no client "
                           "certificate. Java: `security.protocol=SSL`, `ssl.truststore.type=PEM`; rdkafka: "
                           "`security.protocol=ssl`, `ssl.ca.location`. Kafka's listener reads the same PEM "
                           "keystore (`ssl.keystore.type=PEM`).",
        "produce-small": "100 B records, unthrottled, acks=all, idempotence on, 4 partitions.",
        "produce-rate": "1 KiB records at a fixed offered load: {rate}, acks=all, idempotence on, 4 partitions, "
                        "`kafka-producer-perf-test --throughput`. Latency is send-to-ack per record, in whole ms "
                        "(the tool's resolution). rdkafka_performance is not used here: its `-r` limiter busy-polls "
                        "a whole core above 1,000 msgs/s, which on this machine would take CPU from the broker. "
                        "The first 5 s of records are the client's warm-up (`--warmup-records`): its start "
                        "(metadata, producer id, JIT on a machine it shares with the broker) queues the first "
                        "~1.5 s of records for up to ~300 ms in the client on either broker, and these 1% of the "
                        "records are the whole run's p99, while every Produce request is handled in under 25 ms "
                        "by the broker. The *steady-state* rows are the records after the warm-up.",
        "consume-max": "read the produce-max topic (4 partitions) from offset 0. Java: `kafka-consumer-perf-test` "
                       "(subscribe, consumer group); rdkafka: `rdkafka_performance -C` with the 4 partitions assigned "
                       "(no group).",
        "consume-cold": "consume-max from the disk: before each client the broker is stopped, the kernel's page "
                        "cache written back and dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) and the "
                        "broker started again on its data, so Kafka reads through an empty page cache and "
                        "shardlog with an empty batch cache (O_DIRECT reads with its read-ahead). Same clients "
                        "and topic as consume-max.",
        "produce-txn": "1 KiB records, unthrottled, from `kafka-producer-perf-test --transactional-id ... "
                       "--transaction-duration-ms 100` (a commit every 100 ms), 4 partitions.",
        "many-partitions": "1 KiB records into one topic of 1,000 partitions (Java producer); compare with "
                           "produce-max (4 partitions).",
        "many-connections": "200 `rdkafka_performance` producer processes at once (one broker connection each), "
                            "each at a fixed rate (`-r`), 1 KiB records, acks=all, idempotence on, `linger.ms=5`; "
                            "latency (µs resolution) over all records of all producers.",
        **LIMITS_DESC,
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
            L.extend(figure_rows(k, s))
            if (k and not k.ok) or (s and not s.ok):
                L.append(f"| status | {'ok' if k and k.ok else 'FAILED'} | {'ok' if s and s.ok else 'FAILED'} | |")
            L.append("")
            for r in (k, s):
                if r and r.notes:
                    L.append(f"- {r.broker}: " + "; ".join(r.notes))
            tops = [f"{r.broker} `{r.client_top_thread}` {r.client_top_thread_pct:.0f}%" for r in (k, s)
                    if r and r.ok and r.client_top_thread and r.client_top_thread_pct is not None]
            if tops:
                L.append("- the client's busiest thread (near 100% of a core: the client sets the pace): "
                         + ", ".join(tops))
            if w == "producers-unthrottled" and s is not None and s.peak_rss_mib is not None:
                L.append(rss_bound_line(opts, s))
            if w == "many-partitions":
                for b in BROKERS:
                    mp, pm = get(R, b, w, c), get(R, b, "produce-max", "java")
                    if mp and pm and mp.ok and pm.ok:
                        L.append(f"- {b}: 1,000 partitions at {mp.mibps / pm.mibps:.2f}× its own 4-partition "
                                 "produce-max (java)")
            L.append("")
    # the metrics endpoint's own cost (shardlog only, run inside produce-max)
    offs = [r for r in R if r.broker == "shardlog" and r.workload == "metrics-overhead"
            and r.client.startswith("java, no scrape")]
    ons = [r for r in R if r.broker == "shardlog" and r.workload == "metrics-overhead"
           and r.client.startswith("java, /metrics every 1 s")]
    if offs or ons:
        L.append("### metrics-overhead")
        L.append("")
        L.append("shardlog only, after produce-max on the same broker: the produce-max Java producer on fresh "
                 "4-partition topics, four times, without (A) and with (B) `/metrics` scraped every second, "
                 "in the order A B B A; the columns are the means of the two runs of each. The goal "
                 "(issue 13) is under 2% lower throughput and higher CPU-s/GB; the noise between runs is "
                 "shown by each run's MiB/s below.")
        L.append("")
        L.append("| | no scrape | scrape every 1 s | scraped / not |")
        L.append("| --- | ---: | ---: | ---: |")

        def mean(rs, key):
            vs = [getattr(r, key) for r in rs if r.ok and getattr(r, key) is not None]
            return sum(vs) / len(vs) if vs else None

        for label, key, d in METRICS:
            a, b_ = mean(offs, key), mean(ons, key)
            if a is None and b_ is None:
                continue
            L.append(f"| {label} | {fmt(a, d)} | {fmt(b_, d)} | {fmt(ratio(b_, a), 3)} |")
        L.append("")
        for r in sorted(offs + ons, key=lambda r: r.client):
            mib = f"{r.mibps:.1f} MiB/s" if r.ok and r.mibps is not None else "failed"
            L.append(f"- {r.client}: {mib}" + ("; " + "; ".join(r.notes) if r.notes else ""))
        for r in R:
            if r.broker == "shardlog" and r.workload == "metrics-overhead" and "back to back" in r.client:
                L.append(f"- {r.client}: " + ("; ".join(r.notes) if r.ok else f"failed: {r.error}"))
        L.append("")
    # profile
    if bench.profile:
        L.append("## Profile")
        L.append("")
        if "error" in bench.profile:
            L.append(f"Profile not taken: {bench.profile['error']}")
        for w in ("produce-max", "produce-small", "consume-max"):
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
        rate=bench.rate_used, targets=tg, results=[result_dict(r) for r in R], events=bench.broker_events,
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
