"""The bench's loopback send floor: the measurement (a real loopback stream, with `send` and
with `sendfile` from the page cache) and the report's lines built from it.

    python3 -m pytest perf/test_send_floor.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF))

from shardbench.common import MIB  # noqa: E402
from shardbench.report import send_floor_lines  # noqa: E402
from shardbench.workloads import loopback_send, page_cache_file  # noqa: E402


def test_both_ways_of_sending_move_bytes_and_cost_the_sender_cpu(tmp_path):
    # CPU-s per GB: a loopback send costs a few tenths here; per MB or per byte would be far out
    mibps, cpu = loopback_send(64 * MIB)
    assert mibps > 0 and 0.01 < cpu < 10
    f = page_cache_file(tmp_path / "pc.tmp", 8 * MIB)
    assert f.stat().st_size == 8 * MIB
    mibps, cpu = loopback_send(64 * MIB, source=f)  # reads the 8 MiB file 8 times
    assert mibps > 0 and 0.01 < cpu < 10


def test_sendfile_refuses_a_file_smaller_than_one_send(tmp_path):
    small = tmp_path / "small.tmp"
    small.write_bytes(b"x" * MIB)
    with pytest.raises(ValueError):
        loopback_send(8 * MIB, source=small)


def row(name, kafka):
    return dict(name=name, kafka=kafka, shardlog=None, ratio=None, want=0.5, better="lower", met=None, detail="")


def test_the_floor_is_the_cheaper_way_and_is_read_against_each_goal():
    tg = [row("broker CPU-s per GB, produce-max (java)", 4.0),
          row("broker CPU-s per GB, consume-max (java)", 0.6),
          row("broker CPU-s per GB, consume-max (rdkafka)", 0.3),
          row("broker CPU-s per GB, consume-cold (rdkafka)", None)]
    limits = {"loopback_send_cpu_per_gb": 0.24, "loopback_sendfile_cpu_per_gb": 0.45}
    assert send_floor_lines(tg, limits) == [
        "**The send floor under the consume CPU rows:** the cheaper way to hand bytes to a local reader over "
        "loopback measured here (`send`, *Machine and limits*) costs the sending thread 0.240 CPU-s per GB, so a "
        "broker that did nothing else would stand at: consume-max (java) 0.40×; consume-max (rdkafka) 0.80× of "
        "Kafka. The goal lies below that floor for: consume-max (rdkafka): out of reach for any broker over "
        "loopback in this run.", ""]
    # sendfile cheaper in this run: it is the floor; both goals above it
    limits = {"loopback_send_cpu_per_gb": 0.24, "loopback_sendfile_cpu_per_gb": 0.12}
    line = send_floor_lines(tg, limits)[0]
    assert "(`sendfile`, *Machine and limits*) costs the sending thread 0.120 CPU-s" in line
    assert line.endswith("consume-max (java) 0.20×; consume-max (rdkafka) 0.40× of Kafka. "
                         "Every goal lies above its floor in this run.")
    assert send_floor_lines(tg, {}) == []
    assert send_floor_lines(tg[:1], limits) == []
