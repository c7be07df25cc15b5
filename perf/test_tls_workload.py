"""The produce-max-tls workload's pieces without a broker: the certificates openssl makes
(a PKCS#8 key, a chain the CA verifies for 127.0.0.1), Kafka's server.properties with the
SSL listener, shardlog's flags, the clients' settings, and the report's target lines.

    python3 -m pytest perf/test_tls_workload.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF))

from shardbench import tls  # noqa: E402
from shardbench.common import Result  # noqa: E402

CERTS = tls.Certs(ca=Path("/c/ca.pem"), keystore=Path("/c/server.pem"))


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_certificates_are_a_pkcs8_keystore_the_ca_verifies_for_127_0_0_1(tmp_path):
    certs = tls.make_certs(tmp_path)
    keystore = certs.keystore.read_text()
    assert keystore.startswith("-----BEGIN PRIVATE KEY-----\n")
    assert keystore.count("-----BEGIN CERTIFICATE-----") == 2
    r = subprocess.run(["openssl", "verify", "-CAfile", str(certs.ca), "-verify_ip", "127.0.0.1",
                        "-purpose", "sslserver", str(tmp_path / "server.crt")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == f"{tmp_path / 'server.crt'}: OK"


def test_kafka_gets_an_ssl_listener_reading_the_pem_keystore():
    props = ("listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
             "advertised.listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
             "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
             "log.dirs=/d")
    assert tls.kafka_properties(props, 9092, 9094, CERTS) == (
        "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093\n"
        "advertised.listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL\n"
        "log.dirs=/d\n"
        "\n"
        "# produce-max-tls: the SSL listener's PEM keystore (key and chain in one file)\n"
        "ssl.keystore.type=PEM\n"
        "ssl.keystore.location=/c/server.pem\n")


def test_the_real_kafka_properties_get_the_listener():
    props = (PERF / "kafka" / "server.properties").read_text()
    props = props.replace("@PORT@", "1000").replace("@CONTROLLER_PORT@", "1001").replace("@LOG_DIR@", "/d")
    out = tls.kafka_properties(props, 1000, 1002, CERTS)
    assert "listeners=PLAINTEXT://127.0.0.1:1000,SSL://127.0.0.1:1002,CONTROLLER://127.0.0.1:1001" in out
    assert "\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL\n" in out


def test_shardlog_and_client_settings():
    assert tls.shardlog_args("127.0.0.1:9092", 9094, CERTS) == [
        "--listeners", "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094",
        "--ssl-keystore-location", "/c/server.pem"]
    assert tls.java_client_props(CERTS) == [
        "security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location=/c/ca.pem"]
    assert tls.rdkafka_client_args(CERTS) == [
        "-X", "security.protocol=ssl", "-X", "ssl.ca.location=/c/ca.pem"]


def test_the_report_compares_tls_throughput_and_cpu_per_gb():
    from shardbench.report import targets
    from shardbench.workloads import TLS_WORKLOADS, WORKLOADS

    assert TLS_WORKLOADS == ["produce-max-tls"] and "produce-max-tls" in WORKLOADS
    results = []
    for broker, mibps, cpu in (("kafka", 100.0, 4.0), ("shardlog", 150.0, 1.0)):
        for client in ("java", "rdkafka"):
            results.append(Result(broker, "produce-max-tls", client, mibps=mibps, cpu_per_gb=cpu))
    bench = SimpleNamespace(results=results, opts=SimpleNamespace(workloads=["produce-max-tls"]))
    tls_targets = [(t["name"], t["ratio"], t["met"]) for t in targets(bench) if "TLS" in t["name"]]
    assert tls_targets == [
        ("produce-max over TLS throughput (java), MiB/s", 1.5, True),
        ("produce-max over TLS throughput (rdkafka), MiB/s", 1.5, True),
        ("broker CPU-s per GB, produce-max over TLS (java)", 0.25, True),
        ("broker CPU-s per GB, produce-max over TLS (rdkafka)", 0.25, True),
    ]
    bench.opts.workloads = ["produce-max"]
    assert not [t for t in targets(bench) if "TLS" in t["name"]]
