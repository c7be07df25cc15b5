"""Equivalence check for the split of perf/bench.py into perf/shardbench/: renders the
report of a stored run (perf/results/2026-11-29-09421b7.json) with the single-file harness
as of commit c580436 (read with `git show`) and with the package, and asserts the files
written (<stem>.md, <stem>.json, LATEST.md) are byte for byte the same.

The live inputs of a report (today's date, the commit, elapsed time, machine and tool
versions) are pinned to the same values in both; the data the JSON does not keep
(load averages, the command list, a profile) is filled in so that those sections render.
No broker, Java or network is needed.

    python3 -m pytest perf/test_report.py      or      python3 perf/test_report.py

Once the report format changes on purpose, this test has done its job: delete it, or
point BASE at a newer commit.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from types import SimpleNamespace

PERF = Path(__file__).resolve().parent
ROOT = PERF.parent
BASE = "c580436"  # last commit with the single-file perf/bench.py
RESULT = PERF / "results" / "2026-11-29-09421b7.json"

sys.path.insert(0, str(PERF))


def load_old():
    """The single-file harness at BASE as a module, with __file__ where it lived (ROOT and
    the paths derived from it, which end up in the report, must match)."""
    src = subprocess.run(["git", "show", f"{BASE}:perf/bench.py"], capture_output=True, text=True, cwd=ROOT)
    if src.returncode != 0:
        return None
    mod = types.ModuleType("bench_old")
    mod.__file__ = str(PERF / "bench.py")
    sys.modules["bench_old"] = mod
    exec(compile(src.stdout, mod.__file__, "exec"), mod.__dict__)
    return mod


class _FixedDate(dt.date):
    @classmethod
    def today(cls):
        return cls(2026, 11, 29)


def pin_live_inputs(ns, data):
    """Replaces, in module namespace `ns`, what write_report reads from the machine."""
    ns.dt = SimpleNamespace(date=_FixedDate, datetime=dt.datetime)
    ns.hms = lambda s: "00:21:07"
    ns.git_commit = lambda: (data["commit"], bool(data["dirty"]))
    ns.machine_info = lambda: dict(data["machine"])
    ns.tool_versions = lambda opts: {"java": 'openjdk version "17.0.13" 2024-10-15',
                                     "kafka-clients (perf tests)": "4.4.0",
                                     "librdkafka (rdkafka_performance)": "2.12.1, from rdkafka-sys 4.10.0+2.12.1"}
    ns.make_chart = lambda bench, path, title_suffix=None: False  # matplotlib may be absent: same in both


def opts_for(data, workloads):
    return SimpleNamespace(quick=data["quick"], workloads=list(workloads), workload=None, broker=None, cores=2,
                           cpuset="0-1", flush="interval", rate=None, conn_rate=10,
                           shardlog_bin=ROOT / "target" / "release" / "shardlog", argv=[], no_profile=False,
                           profile=False, out=None, replot=None)


def bench_from(Bench, Result, data, workloads):
    b = Bench(opts_for(data, workloads))
    b.results = [Result(**r) for r in data["results"]]
    b.limits = dict(data["limits"])
    b.rate_used = dict(data["rate"])
    b.versions = dict(data["versions"])
    b.broker_events = list(data["events"]) + ["shardlog exited with code 1 on SIGTERM; log tail:\nsecond line"]
    b.loadavg = {"kafka start": 0.42, "kafka end": 1.87, "shardlog start": 0.5, "shardlog end": 1.9}
    b.commands = [("kafka: start", "java -cp perf/cache/kafka-libs/* kafka.Kafka x"),
                  ("shardlog: create topic bench-max", " ".join(b.results[0].commands[:1]) or "x")]
    b.profile = {"produce-max": "  12.00%  shardlog  [.] crc32c\n   3.10%  [kernel]  [k] copy_user",
                 "produce-max_cmd": "perf record -F 499 -g -p 1 -o perf/cache/run/perf-produce-max.data"}
    return b


def render(write_report, bench, full):
    with tempfile.TemporaryDirectory(prefix="bench-report-") as d:
        out = Path(d)
        write_report(bench, out, full)
        return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def check(full=True):
    old = load_old()
    if old is None:
        return None
    from shardbench import report, workloads
    from shardbench.common import Result

    data = json.loads(RESULT.read_text())
    ws = list(old.WORKLOADS)
    # Workloads added since (produce-txn) are not in the old results: compare the old ones.
    assert set(ws) <= set(workloads.WORKLOADS)
    pin_live_inputs(old, data)
    pin_live_inputs(report, data)
    a = render(old.write_report, bench_from(old.Bench, old.Result, data, ws), full)
    b = render(report.write_report, bench_from(workloads.Bench, Result, data, ws), full)
    return a, b


def test_report_identical():
    got = check(full=True)
    if got is None:
        import pytest
        pytest.skip(f"commit {BASE} not in this repository")
    a, b = got
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    assert any(n.endswith(".md") and n != "LATEST.md" for n in a) and "LATEST.md" in a


def test_partial_report_identical():
    got = check(full=False)
    if got is None:
        import pytest
        pytest.skip(f"commit {BASE} not in this repository")
    a, b = got
    assert a == b


if __name__ == "__main__":
    got = check(full=True)
    if got is None:
        print(f"skipped: commit {BASE} not in this repository")
        sys.exit(0)
    a, b = got
    bad = [n for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
    for n in sorted(a):
        print(f"{n}: {len(a[n])} bytes, {'DIFFERENT' if n in bad else 'identical'}")
    sys.exit(1 if bad else 0)
