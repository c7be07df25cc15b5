"""TLS listeners (issue 14): SSL and SASL_SSL beside PLAINTEXT, with certificates made by
the test (tls_certs.py: a CA, a server certificate for 127.0.0.1/localhost, client
certificates CN=<name>,OU=eng,O=acme). Clients: librdkafka (confluent-kafka), Kafka's
Java console producer and consumer (PEM truststore), kafka-python. Client-certificate
principals are Kafka's DefaultKafkaPrincipalBuilder's: `User:` and the subject in RFC 2253
(X500Principal.getName()), `User:ANONYMOUS` without a certificate."""

from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from helpers import (REPO_ROOT, Broker, BrokerError, Reader, connection_closed_by_peer, frame,
                     free_port, raw_api_versions, recv_frame, request_header_v1, shardlog_bin)
from tls_certs import make_pki

CLI_LIBS = REPO_ROOT / "tests/compat/kafka-cli/.cache/libs"
CLI_LOG4J = REPO_ROOT / "tests/compat/kafka-cli/log4j2.properties"

USERS = "alice:alice-secret\n"
ALICE = "User:CN=alice,OU=eng,O=acme"


@pytest.fixture
def tls_broker(tmp_path):
    """make(*extra) -> a started broker with PLAINTEXT on `.port`, SSL on `.ssl_port` and
    SASL_SSL on `.sasl_ssl_port`; `.pki` holds the certificate paths (tls_certs.make_pki).
    In `extra`, `{ssl_port}` and `{ca}` stand for the SSL port and the CA file."""
    brokers = []
    pki = make_pki(tmp_path / "pki", clients=("alice", "bob"))

    def make(*extra: str) -> Broker:
        work = tmp_path / f"broker{len(brokers)}"
        work.mkdir()
        users = work / "users.txt"
        users.write_text(USERS)
        b = Broker(shardlog_bin(), work, cores=2)
        b.ssl_port, b.sasl_ssl_port = free_port(), free_port()
        b.ssl_bootstrap = f"127.0.0.1:{b.ssl_port}"
        b.sasl_ssl_bootstrap = f"127.0.0.1:{b.sasl_ssl_port}"
        b.pki = pki
        b.extra_args = [
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{b.port},SSL://127.0.0.1:{b.ssl_port},"
            f"SASL_SSL://127.0.0.1:{b.sasl_ssl_port}",
            "--ssl-keystore-location", str(pki["server"]),
            "--sasl-plain-users-file", str(users),
            *(a.format(ssl_port=b.ssl_port, ca=pki["ca"]) for a in extra),
        ]
        brokers.append(b)
        b.start()
        return b

    yield make
    errors = []
    for b in brokers:
        if b.running():
            try:
                b.stop()
            except BrokerError as e:
                errors.append(str(e))
    assert not errors, "\n".join(errors)


def ssl_conf(b: Broker, client: str | None = None, **extra) -> dict:
    conf = {
        "bootstrap.servers": b.ssl_bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(b.pki["ca"]),
        **extra,
    }
    if client:
        conf["ssl.certificate.location"] = str(b.pki[f"{client}.crt"])
        conf["ssl.key.location"] = str(b.pki[f"{client}.key"])
    return conf


def records(n: int, size: int = 100) -> list:
    """n distinct (key, value) pairs, values of `size` bytes or more."""
    return [(f"k{i}".encode(), (f"v{i}-" + "x" * size).encode()) for i in range(n)]


def produce_all(conf: dict, topic: str, pairs: list) -> None:
    p = Producer({**conf, "message.timeout.ms": 20000})
    errors = []
    for k, v in pairs:
        p.produce(topic, key=k, value=v, on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(30) == 0
    assert errors == [None] * len(pairs)


def consume_all(conf: dict, topic: str, n: int) -> list:
    c = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.key(), m.value()))
    finally:
        c.close()
    return got


def create_topic(b: Broker, topic: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def tls_context(b: Broker, client: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(b.pki["ca"]))
    if client:
        ctx.load_cert_chain(str(b.pki[f"{client}.crt"]), str(b.pki[f"{client}.key"]))
    return ctx


def api_versions_frame(corr: int) -> bytes:
    return frame(request_header_v1(18, 0, corr))


# -- tests -------------------------------------------------------------------------------


def test_librdkafka_produces_and_consumes_exact_records_over_ssl(tls_broker):
    b = tls_broker()
    topic = "tls-rdkafka"
    create_topic(b, topic)
    # Values of 30 KB make records span several TLS records both ways.
    pairs = records(300) + records(20, size=30_000)
    pairs = [(f"{i}".encode(), v) for i, (_, v) in enumerate(pairs)]
    produce_all(ssl_conf(b), topic, pairs)
    got = consume_all(ssl_conf(b), topic, len(pairs))
    assert sorted(got) == sorted(pairs)
    # ...and the same records through the PLAINTEXT listener.
    assert sorted(consume_all({"bootstrap.servers": b.bootstrap}, topic, len(pairs))) == sorted(pairs)


def test_metadata_and_describe_cluster_advertise_the_ssl_listener_to_ssl_clients(tls_broker):
    b = tls_broker("--advertised-listeners", "SSL://localhost:{ssl_port}")
    admin = AdminClient(ssl_conf(b))
    md = admin.list_topics(timeout=15)
    assert [(br.host, br.port) for br in md.brokers.values()] == [("localhost", b.ssl_port)]
    cluster = admin.describe_cluster(request_timeout=15).result(15)
    assert [(n.host, n.port) for n in cluster.nodes] == [("localhost", b.ssl_port)]
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=15)
    assert [(br.host, br.port) for br in md.brokers.values()] == [("127.0.0.1", b.port)]
    # The coordinator an SSL client is sent to is the SSL listener too: a consumer group
    # over SSL works (FindCoordinator), through the advertised name.
    topic = "tls-md"
    create_topic(b, topic, partitions=1)
    produce_all(ssl_conf(b), topic, records(5))
    assert sorted(consume_all(ssl_conf(b), topic, 5)) == sorted(records(5))


def test_kafka_python_produces_and_consumes_over_ssl(tls_broker):
    from kafka import KafkaConsumer, KafkaProducer

    b = tls_broker()
    topic = "tls-kafka-python"
    create_topic(b, topic, partitions=1)
    conf = dict(bootstrap_servers=b.ssl_bootstrap, security_protocol="SSL", ssl_cafile=str(b.pki["ca"]))
    p = KafkaProducer(**conf)
    for k, v in records(50):
        p.send(topic, key=k, value=v)
    p.flush(30)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **conf)
    got = [(m.key, m.value) for m in c]
    c.close()
    assert got == records(50)


def java(main: str, *args: str, stdin: str | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    cmd = ["java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           f"-Dlog4j2.configurationFile={CLI_LOG4J}", "-cp", f"{CLI_LIBS}/*", main, *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not CLI_LIBS.is_dir(), reason="Kafka CLI jars not set up (tests/compat/kafka-cli/setup)")
def test_java_console_producer_and_consumer_over_ssl_with_a_pem_truststore(tls_broker, tmp_path):
    b = tls_broker()
    topic = "tls-java"
    create_topic(b, topic, partitions=1)
    props = tmp_path / "client-ssl.properties"
    props.write_text(
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={b.pki['ca']}\n")
    lines = [f"java-{i}" for i in range(10)]
    out = java("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", b.ssl_bootstrap,
               "--topic", topic, "--command-config", str(props), stdin="\n".join(lines) + "\n")
    assert out.returncode == 0, out.stdout + out.stderr
    out = java("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", b.ssl_bootstrap,
               "--topic", topic, "--from-beginning", "--max-messages", "10", "--timeout-ms", "30000",
               "--command-config", str(props))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == lines
    # librdkafka reads what Java wrote, over SSL.
    assert [v for _, v in consume_all(ssl_conf(b), topic, 10)] == [l.encode() for l in lines]


def test_sasl_ssl_logs_in_inside_tls_and_refuses_a_wrong_password(tls_broker):
    b = tls_broker()
    conf = {"bootstrap.servers": b.sasl_ssl_bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(b.pki["ca"]), "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret"}
    topic = "tls-sasl"
    create_topic(b, topic)
    produce_all(conf, topic, records(40))
    assert sorted(consume_all(conf, topic, 40)) == sorted(records(40))
    # SCRAM-SHA-256, with a credential made through the PLAINTEXT listener.
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
    up = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                      b"carol-scram")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.alter_user_scram_credentials([up])["carol"].result(30)
    scram = {**conf, "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "carol", "sasl.password": "carol-scram"}
    assert sorted(consume_all(scram, topic, 40)) == sorted(records(40))
    # A wrong password: SASL_AUTHENTICATION_FAILED, inside TLS, then the close.
    with tls_context(b).wrap_socket(socket.create_connection(("127.0.0.1", b.sasl_ssl_port), timeout=10),
                                    server_hostname="localhost") as s:
        s.sendall(frame(request_header_v1(17, 1, 1) + struct.pack(">h", 5) + b"PLAIN"))
        r = Reader(recv_frame(s))
        assert (r.i32(), r.i16()) == (1, 0)
        token = b"\0alice\0wrong"
        s.sendall(frame(request_header_v1(36, 1, 2) + struct.pack(">i", len(token)) + token))
        r = Reader(recv_frame(s))
        assert (r.i32(), r.i16(), r.string()) == (
            2, 58, "Authentication failed: Invalid username or password")
        assert s.recv(100) == b""
    # librdkafka reports the broker's message.
    errors = []
    p = Producer({**conf, "sasl.password": "wrong", "error_cb": errors.append})
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert "Authentication failed: Invalid username or password" in errors[0].str()


def test_required_client_certificates_name_the_principal_the_acls_see(tls_broker):
    """--ssl-client-auth required with the authorizer: alice's certificate makes her
    `User:CN=alice,OU=eng,O=acme`, granted WRITE and READ on `alice-t` and READ on group
    `alice-g`; bob's certificate works for TLS but bob has no ACL; a client without a
    certificate fails the handshake."""
    b = tls_broker("--ssl-truststore-location", "{ca}", "--ssl-client-auth", "required",
                   "--authorizer", "--super-users", "User:ANONYMOUS")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # ANONYMOUS: a super user
    for f in admin.create_topics([NewTopic("alice-t", 1, 1), NewTopic("bob-t", 1, 1)]).values():
        f.result(30)
    grants = [AclBinding(ResourceType.TOPIC, "alice-t", ResourcePatternType.LITERAL, ALICE, "*", op,
                         AclPermissionType.ALLOW) for op in (AclOperation.WRITE, AclOperation.READ)]
    grants.append(AclBinding(ResourceType.GROUP, "alice-g", ResourcePatternType.LITERAL, ALICE, "*",
                             AclOperation.READ, AclPermissionType.ALLOW))
    for f in admin.create_acls(grants).values():
        f.result(30)

    def produce(client, topic):
        p = Producer({**ssl_conf(b, client), "message.timeout.ms": 10000})
        errors = []
        p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
        p.flush(15)
        assert len(errors) == 1
        return errors[0].code() if errors[0] else None

    assert produce("alice", "alice-t") is None
    assert produce("alice", "bob-t") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce("bob", "alice-t") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    seen = set(AdminClient(ssl_conf(b, "alice")).list_topics(timeout=15).topics)
    assert "alice-t" in seen and "bob-t" not in seen
    c = Consumer({**ssl_conf(b, "alice"), "group.id": "alice-g", "auto.offset.reset": "earliest"})
    c.subscribe(["alice-t"])
    value = None
    for _ in range(30):
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            value = m.value()
            break
    c.close()
    assert value == b"v"
    # Without a certificate: the handshake fails (TLS 1.3 reports it on the first read).
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with tls_context(b).wrap_socket(socket.create_connection(("127.0.0.1", b.ssl_port), timeout=10),
                                        server_hostname="localhost") as s:
            s.sendall(api_versions_frame(1))
            if s.recv(4) == b"":
                raise ConnectionError("closed")
    # The broker still serves everyone else.
    assert produce("alice", "alice-t") is None
    # SASL_SSL listeners ask for no certificate (Kafka applies the broker-wide
    # ssl.client.auth to SSL listeners only): PLAIN's User:alice, without a certificate,
    # connects, and has no ACL (the certificate's principal is another one).
    sasl = {"bootstrap.servers": b.sasl_ssl_bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(b.pki["ca"]), "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret"}
    seen = AdminClient(sasl).list_topics(timeout=15).topics
    assert "alice-t" not in seen and "bob-t" not in seen


def test_requested_client_certificates_are_optional(tls_broker):
    """--ssl-client-auth requested: a client with a certificate is its subject, one without
    is User:ANONYMOUS (here a super user, alice is granted nothing)."""
    b = tls_broker("--ssl-truststore-location", "{ca}", "--ssl-client-auth", "requested",
                   "--authorizer", "--super-users", "User:ANONYMOUS")
    create_topic(b, "req-t", partitions=1)
    produce_all(ssl_conf(b), "req-t", records(3))
    p = Producer({**ssl_conf(b, "alice"), "message.timeout.ms": 10000})
    errors = []
    p.produce("req-t", b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_tls_1_2_and_1_3_clients_are_both_served(tls_broker):
    b = tls_broker()
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = tls_context(b)
        ctx.minimum_version = ctx.maximum_version = version
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", b.ssl_port), timeout=10),
                             server_hostname="localhost") as s:
            assert s.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
            # Two pipelined requests in one write, answered in order.
            s.sendall(api_versions_frame(21) + api_versions_frame(22))
            assert [Reader(recv_frame(s)).i32() for _ in range(2)] == [21, 22]


def test_wrong_protocol_clients_are_closed_and_the_broker_keeps_serving(tls_broker):
    b = tls_broker()
    # A plaintext Kafka request on the SSL port: a TLS alert, then the close.
    with socket.create_connection(("127.0.0.1", b.ssl_port), timeout=10) as s:
        s.sendall(api_versions_frame(1))
        closed, got = connection_closed_by_peer(s)
        assert closed
        assert got[:1] == b"\x15"  # an alert record
    # Garbage, then silence, on the SSL port.
    with socket.create_connection(("127.0.0.1", b.ssl_port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x00\x05hello")
        assert connection_closed_by_peer(s)[0]
    # A TLS client on the PLAINTEXT port: its ClientHello reads as an oversized frame.
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        tls_context(b).wrap_socket(socket.create_connection(("127.0.0.1", b.port), timeout=10),
                                   server_hostname="localhost").close()
    # Both listeners still serve.
    assert 18 in raw_api_versions(b.bootstrap)
    with tls_context(b).wrap_socket(socket.create_connection(("127.0.0.1", b.ssl_port), timeout=10),
                                    server_hostname="localhost") as s:
        s.sendall(api_versions_frame(9))
        r = Reader(recv_frame(s))
        assert (r.i32(), r.i16()) == (9, 0)
    assert b.running()


def test_tls_listeners_need_a_readable_keystore(tmp_path):
    def start(*args):
        return subprocess.run(
            [str(shardlog_bin()), "--listeners", f"SSL://127.0.0.1:{free_port()}",
             "--data-dir", str(tmp_path / "d"), "--metrics-listen", "", *args],
            capture_output=True, text=True, timeout=30)

    out = start()
    assert out.returncode != 0
    assert ("listener SSL://127.0.0.1:" in out.stderr and "SSL and SASL_SSL listeners need "
            "--ssl-keystore-location (a PEM file with the private key and the certificate chain)"
            in out.stderr), out.stderr
    bad = tmp_path / "bad.pem"
    bad.write_text("not a keystore\n")
    out = start("--ssl-keystore-location", str(bad))
    assert out.returncode != 0
    assert f"--ssl-keystore-location {bad}: no certificate" in out.stderr, out.stderr
    pki = make_pki(tmp_path / "pki")
    out = start("--ssl-keystore-location", str(pki["server.crt"]))
    assert out.returncode != 0
    assert f"--ssl-keystore-location {pki['server.crt']}: no private key" in out.stderr, out.stderr
