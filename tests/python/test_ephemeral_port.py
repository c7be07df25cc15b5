"""Listeners on port 0 (Kafka's `listeners=PLAINTEXT://:0`): the broker picks one port
per listener, every shard listens on it, clients are told it, and it is in the log.

Before: each shard bound port 0 itself (so each listened on a port of its own), the
broker advertised port 0, logged `:0`, and a second broker on port 0 was refused as
"already listening"."""
from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from helpers import START_TIMEOUT_S, listening_sockets, raw_api_versions, shardlog_bin

CORES = 2


def start(tmp_path: Path, name: str, *args: str) -> subprocess.Popen:
    log = open(tmp_path / f"{name}.log", "wb")
    return subprocess.Popen(
        [str(shardlog_bin()), "--data-dir", str(tmp_path / name), "--cores", str(CORES),
         "--metrics-listen", "127.0.0.1:0", *args],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def bound_listeners(tmp_path: Path, name: str, proc: subprocess.Popen, count: int) -> Dict[str, int]:
    """{protocol: port} from the "starting shardlog" log line, once all `count` shards
    listen on every one of them."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, (tmp_path / f"{name}.log").read_text()
        m = re.search(r"starting shardlog .*listeners=(\S+)", (tmp_path / f"{name}.log").read_text())
        if m:
            ports = {url.split("://")[0]: int(url.rsplit(":", 1)[1]) for url in m.group(1).split(",")}
            if all(listening_sockets(p) == count for p in ports.values()):
                return ports
        time.sleep(0.05)
    raise AssertionError("no shard listened: " + (tmp_path / f"{name}.log").read_text())


def stop(procs: List[subprocess.Popen]) -> None:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        assert p.wait(timeout=30) == 0


def test_two_brokers_on_port_0_each_get_one_port_all_shards_serve_and_advertise(tmp_path):
    a = start(tmp_path, "a", "--listen", "127.0.0.1:0")
    b = start(tmp_path, "b", "--listen", "127.0.0.1:0")
    try:
        ports = [bound_listeners(tmp_path, "a", a, CORES)["PLAINTEXT"],
                 bound_listeners(tmp_path, "b", b, CORES)["PLAINTEXT"]]
        assert 0 not in ports and ports[0] != ports[1]
        for port in ports:
            bootstrap = f"127.0.0.1:{port}"
            # Connections land on both shards (SO_REUSEPORT): each one answers.
            for _ in range(8):
                assert 0 in raw_api_versions(bootstrap)
            md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
            assert [(br.host, br.port) for br in md.brokers.values()] == [("127.0.0.1", port)]
            # A client that follows the advertised address can produce.
            p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
            delivered = []
            for i in range(10):
                p.produce("port0", value=b"v%d" % i, on_delivery=lambda e, m: delivered.append(e))
            assert p.flush(30) == 0
            assert delivered == [None] * 10
    finally:
        stop([a, b])


def test_each_listener_on_port_0_gets_its_own_port(tmp_path):
    a = start(tmp_path, "a", "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
              "--advertised-listeners", "SASL_PLAINTEXT://kafka.example:9093")
    try:
        ports = bound_listeners(tmp_path, "a", a, CORES)
        assert sorted(ports) == ["PLAINTEXT", "SASL_PLAINTEXT"]
        assert ports["PLAINTEXT"] != ports["SASL_PLAINTEXT"] and 0 not in ports.values()
        md = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"}).list_topics(timeout=10)
        assert [(br.host, br.port) for br in md.brokers.values()] == [("127.0.0.1", ports["PLAINTEXT"])]
    finally:
        stop([a])
