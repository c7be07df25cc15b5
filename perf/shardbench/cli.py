"""The command line behind scripts/bench (perf/bench.py calls main): the flags, then the
run itself: machine limits, each broker in turn through every selected workload, the
profile when shardlog misses a target, and the result files. `--replot` only redraws a
chart from an earlier run's JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from .brokers import BROKERS, Kafka, Shardlog
from .common import CACHE, ROOT, RUN, BenchError, Result, rel, say
from .report import git_commit, make_chart, targets, write_report
from .tls import make_certs
from .workloads import ALL_WORKLOADS, LIMIT_WORKLOADS, TLS_WORKLOADS, WORKLOADS, Bench

DESCRIPTION = "shardlog vs Apache Kafka, same machine, same run, same clients (see shared PERF.md)."


def selected_workloads(opts) -> list[str]:
    """--workload names, plus the limits workloads with --limits; with neither, the default run
    (every workload but the limits ones)."""
    if not opts.workload and not opts.limits:
        return list(WORKLOADS)
    return [w for w in ALL_WORKLOADS if w in (opts.workload or []) or (opts.limits and w in LIMIT_WORKLOADS)]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/bench", description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small runs (a few minutes end to end), for development")
    ap.add_argument("--workload", action="append", choices=ALL_WORKLOADS, metavar="NAME",
                    help=f"run only this workload (repeatable): {', '.join(ALL_WORKLOADS)}")
    ap.add_argument("--limits", action="store_true",
                    help=f"run the limits workloads ({', '.join(LIMIT_WORKLOADS)}; not in the default run, "
                         "~15-20 min for both brokers on 2 cores) -> perf/results/<date>-<commit>-limits.md")
    ap.add_argument("--flood-procs", type=int, default=200,
                    help="producers-unthrottled: producer processes of the second run (default 200)")
    ap.add_argument("--broker", action="append", choices=BROKERS, help="run only this broker (repeatable)")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="shardlog --cores and size of the CPU set "
                                                                      "both brokers are pinned to (default: nproc)")
    ap.add_argument("--shardlog-cores", type=int,
                    help="shardlog --cores alone (default: --cores): fewer shards than the CPU set both brokers "
                         "are pinned to, e.g. 1 on a 2-core machine, leaves the other core to the clients")
    ap.add_argument("--flush", default="interval", choices=["always", "interval", "never"],
                    help="shardlog --flush (default interval; Kafka's default never fsyncs per write either)")
    ap.add_argument("--rate", type=int, help="produce-rate offered load in records/s "
                                             "(default: half of Kafka's produce-max java records/s in this run)")
    ap.add_argument("--conn-rate", type=int, default=10, help="many-connections: records/s offered by each of the "
                                                                  "200 producers (default 10)")
    ap.add_argument("--shardlog-bin", type=Path, required=True)
    ap.add_argument("--shardlog-arg", action="append", default=[], metavar="ARG",
                    help="extra shardlog flag (repeatable; write --shardlog-arg=--cache-bytes=0), "
                         "for ablation runs of one mechanism")
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
    opts.workloads = selected_workloads(opts)
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
    opts.shardlog_cores = max(1, min(opts.shardlog_cores or opts.cores, opts.cores))
    full = not opts.quick and not opts.workload and not opts.broker and not opts.limits
    opts.limits_run = opts.limits and not opts.quick and not opts.workload and not opts.broker
    out_dir = opts.out or (ROOT / "perf" / "results" if full or opts.limits_run else CACHE / "results")

    RUN.mkdir(parents=True, exist_ok=True)
    git_commit()
    # TLS workloads: one CA and server certificate for the run, read by both brokers.
    opts.certs = None
    if any(w in TLS_WORKLOADS for w in opts.workloads):
        try:
            opts.certs = make_certs(RUN / "tls")
        except BenchError as e:  # the TLS workloads then fail alone, with this reason
            say(f"TLS certificates not made: {e}")

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
        if opts.profile or any("produce-small" in t["name"] for t in short):
            which.append("produce-small")
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
