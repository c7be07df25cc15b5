"""The report's check of Kafka's own figures against the reference runs.

    python3 -m pytest perf/test_kafka_drift.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF))

from shardbench.report import KAFKA_REFERENCE_RUNS, kafka_drift_lines, kafka_reference  # noqa: E402


def target(name, kafka):
    return {"name": name, "kafka": kafka}


def test_rows_where_kafka_moved_more_than_the_drift_are_named(tmp_path):
    ref_rows = [target("produce-max throughput (java), MiB/s", 100.0),
                target("broker CPU-s per GB, consume-max (java)", 1.0),
                target("produce-rate p99 latency, steady state (java), ms", 10.0)]
    (tmp_path / KAFKA_REFERENCE_RUNS[0]).write_text(json.dumps({"targets": ref_rows}))
    second = [dict(r, kafka=r["kafka"] * 3) for r in ref_rows[:1]]
    (tmp_path / KAFKA_REFERENCE_RUNS[1]).write_text(json.dumps({"targets": second}))
    ref = kafka_reference(tmp_path)
    # The mean of the runs that have the row.
    assert ref == {"produce-max throughput (java), MiB/s": 200.0,
                   "broker CPU-s per GB, consume-max (java)": 1.0,
                   "produce-rate p99 latency, steady state (java), ms": 10.0}
    now = [target("produce-max throughput (java), MiB/s", 100.0),   # 0.50x: named
           target("broker CPU-s per GB, consume-max (java)", 1.25),  # 1.25x: within
           target("produce-rate p99 latency, steady state (java), ms", 50.0),  # latency: never
           target("many-partitions throughput (java), MiB/s", 1.0)]  # no reference
    lines = kafka_drift_lines(now, ref)
    assert len(lines) == 2 and lines[1] == ""
    assert "produce-max throughput (java), MiB/s: 100 against 200 (0.50×)" in lines[0]
    assert "consume-max" not in lines[0] and "latency" not in lines[0] and "many-partitions" not in lines[0]
    assert kafka_drift_lines(now[1:], ref) == []


def test_the_committed_reference_runs_load():
    ref = kafka_reference(PERF / "results")
    assert ref["produce-max throughput (java), MiB/s"] > 0
