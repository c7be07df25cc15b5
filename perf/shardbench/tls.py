"""TLS for the produce-max-tls workload: one CA and one server certificate (127.0.0.1 and
localhost, EC P-256, unencrypted PKCS#8 key: what Kafka's PEM keystore reads) made with the
`openssl` command once per run under perf/cache/run/tls/, and the client settings both
clients use to reach an SSL listener (server certificate checked against the CA, no client
certificate).

Both brokers read the same files: shardlog `--ssl-keystore-location server.pem`, Kafka
`ssl.keystore.type=PEM` / `ssl.keystore.location=server.pem` (key then chain in one file).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from .common import BenchError


@dataclass
class Certs:
    ca: Path        # the CA certificate (clients' truststore)
    keystore: Path  # the server's private key (PKCS#8) and certificate chain, one PEM file


SERVER_EXT = ("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
              "basicConstraints=critical,CA:FALSE\n"
              "keyUsage=critical,digitalSignature\n"
              "extendedKeyUsage=serverAuth\n")


def openssl_cmds(d: Path) -> list[list[str]]:
    """The openssl commands that make the CA and the server certificate in `d`."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    return [
        ["openssl", "req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"),
         "-days", "7", "-subj", "/CN=shardbench test CA"],
        ["openssl", "req", *ec, "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"),
         "-subj", "/CN=localhost"],
        ["openssl", "x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.pem"),
         "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-out", str(d / "server.crt"), "-days", "7",
         "-extfile", str(d / "server.ext")],
    ]


def make_certs(d: Path) -> Certs:
    """Makes the CA and the server's keystore in `d` (replacing what is there)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "server.ext").write_text(SERVER_EXT)
    for cmd in openssl_cmds(d):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except FileNotFoundError:
            raise BenchError("openssl not found: produce-max-tls makes its certificates with it "
                             "(run scripts/bench-setup)")
        if r.returncode != 0:
            raise BenchError(f"{' '.join(cmd)} failed: {r.stdout}{r.stderr}")
    key = (d / "server.key").read_text()
    if "BEGIN PRIVATE KEY" not in key:
        raise BenchError(f"{d / 'server.key'} is not an unencrypted PKCS#8 key (Kafka's PEM keystore needs one)")
    keystore = d / "server.pem"
    keystore.write_text(key + (d / "server.crt").read_text() + (d / "ca.pem").read_text())
    return Certs(ca=d / "ca.pem", keystore=keystore)


def java_client_props(certs: Certs) -> list[str]:
    """kafka-producer-perf-test `--command-property` values for an SSL listener."""
    return ["security.protocol=SSL", "ssl.truststore.type=PEM", f"ssl.truststore.location={certs.ca}"]


def rdkafka_client_args(certs: Certs) -> list[str]:
    """rdkafka_performance `-X` settings for an SSL listener."""
    return ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={certs.ca}"]


def kafka_properties(props: str, port: int, ssl_port: int, certs: Certs) -> str:
    """perf/kafka/server.properties (filled in) with an SSL listener on `ssl_port` beside the
    PLAINTEXT one on `port`, reading the PEM keystore."""
    plain = f"PLAINTEXT://127.0.0.1:{port}"
    ssl = f"SSL://127.0.0.1:{ssl_port}"
    out = []
    for line in props.splitlines():
        if line.startswith(("listeners=", "advertised.listeners=")):
            line = line.replace(plain, f"{plain},{ssl}")
        elif line.startswith("listener.security.protocol.map="):
            line += ",SSL:SSL"
        out.append(line)
    out += ["", "# produce-max-tls: the SSL listener's PEM keystore (key and chain in one file)",
            "ssl.keystore.type=PEM", f"ssl.keystore.location={certs.keystore}", ""]
    return "\n".join(out)


def shardlog_args(bootstrap: str, ssl_port: int, certs: Certs) -> list[str]:
    """shardlog flags for a PLAINTEXT listener on `bootstrap` and an SSL one on `ssl_port`."""
    return ["--listeners", f"PLAINTEXT://{bootstrap},SSL://127.0.0.1:{ssl_port}",
            "--ssl-keystore-location", str(certs.keystore)]
