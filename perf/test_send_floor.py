"""The bench's loopback send floor: the measurement (a real loopback stream, with `send` and
with `sendfile` from the page cache) and the report's lines built from it.

    python3 -m pytest perf/test_send_floor.py
"""

from __future__ import annotations

import sys
from pathlib import Path

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF))

from shardbench.common import MIB  # noqa: E402
from shardbench.report import send_floor_lines  # noqa: E402
from shardbench.workloads import loopback_send, page_cache_file  # noqa: E402


def test_both_ways_of_sending_move_bytes_and_cost_the_sender_cpu(tmp_path):
    mibps, cpu = loopback_send(64 * MIB)
    assert mibps > 0 and 0 < cpu < 50
    f = page_cache_file(tmp_path / "pc.tmp", 8 * MIB)
    assert f.stat().st_size == 8 * MIB
    mibps, cpu = loopback_send(64 * MIB, source=f)  # wraps around the 8 MiB file 8 times
    assert mibps > 0 and 0 < cpu < 50


def row(name, kafka):
    return dict(name=name, kafka=kafka, shardlog=None, ratio=None, want=0.5, better="lower", met=None, detail="")


def test_the_floor_is_stated_for_each_consume_cpu_row_with_a_kafka_figure():
    tg = [row("broker CPU-s per GB, produce-max (java)", 4.0),
          row("broker CPU-s per GB, consume-max (java)", 0.6),
          row("broker CPU-s per GB, consume-max (rdkafka)", 0.3),
          row("broker CPU-s per GB, consume-cold (rdkafka)", None)]
    lines = send_floor_lines(tg, {"loopback_send_cpu_per_gb": 0.24})
    assert lines == [
        "**The send floor under the consume CPU rows:** a bare sender pays 0.240 CPU-s per GB to hand bytes to a "
        "local reader over loopback (*Machine and limits*), so a broker that did nothing else would stand at: "
        "consume-max (java) 0.40×; consume-max (rdkafka) 0.80× of Kafka. A goal below that is out of reach over "
        "loopback.", ""]
    assert send_floor_lines(tg, {}) == []
    assert send_floor_lines(tg[:1], {"loopback_send_cpu_per_gb": 0.24}) == []
