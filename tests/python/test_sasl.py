"""Listeners and SASL authentication (issue 14): a PLAINTEXT and a SASL_PLAINTEXT listener
side by side, PLAIN users from --sasl-plain-users-file, SCRAM-SHA-256/512 credentials
created through AlterUserScramCredentials (confluent-kafka's AdminClient and Kafka's
kafka-configs.sh), KIP-368 session lifetimes. Values are Apache Kafka's (SaslServerAuthenticator,
PlainSaslServer, ScramSaslServer, ScramControlManager)."""

from __future__ import annotations

import os
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

from helpers import (REPO_ROOT, Broker, BrokerError, Reader, connection_closed_by_peer, enc_str, frame,
                     free_port, raw_connect, recv_frame, request_header_v1, shardlog_bin)

USERS = "# PLAIN users\nadmin:admin-secret\nalice:alice-secret\n"

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
UNACCEPTABLE_CREDENTIAL = 93
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92

CLI_LIBS = REPO_ROOT / "tests/compat/kafka-cli/.cache/libs"
CLI_LOG4J = REPO_ROOT / "tests/compat/kafka-cli/log4j2.properties"


@pytest.fixture
def sasl_broker(tmp_path):
    """make(*extra_args) -> a started broker with PLAINTEXT on `.port` and SASL_PLAINTEXT
    on `.sasl_port` (`.sasl_bootstrap`)."""
    brokers = []

    def make(*extra: str) -> Broker:
        work = tmp_path / f"broker{len(brokers)}"
        work.mkdir()
        users = work / "users.txt"
        users.write_text(USERS)
        b = Broker(shardlog_bin(), work, cores=2)
        b.sasl_port = free_port()
        b.sasl_bootstrap = f"127.0.0.1:{b.sasl_port}"
        b.extra_args = [
            "--listeners", f"PLAINTEXT://127.0.0.1:{b.port},SASL_PLAINTEXT://127.0.0.1:{b.sasl_port}",
            "--sasl-plain-users-file", str(users),
            *extra,
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


def sasl_conf(b: Broker, mechanism: str, user: str, password: str, **extra) -> dict:
    return {
        "bootstrap.servers": b.sasl_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def produce_and_consume(conf: dict, n: int = 20) -> list:
    """Produces n records to a fresh topic and consumes them back with the same settings."""
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    from confluent_kafka.admin import NewTopic
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    p = Producer(conf)
    for i in range(n):
        p.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    return sorted(got, key=lambda v: int(v[1:]))


# -- raw wire helpers --------------------------------------------------------------------


def sasl_handshake(sock, mechanism: str, version: int = 1, corr: int = 1):
    sock.sendall(frame(request_header_v1(17, version, corr) + enc_str(mechanism)))
    r = Reader(recv_frame(sock))
    assert r.i32() == corr
    return r.i16(), r.array(lambda r: r.string())


def sasl_authenticate(sock, token: bytes, version: int = 1, corr: int = 2):
    """SaslAuthenticate v0/v1 (not flexible): (error, message, auth bytes, session lifetime)."""
    sock.sendall(frame(request_header_v1(36, version, corr) + struct.pack(">i", len(token)) + token))
    r = Reader(recv_frame(sock))
    assert r.i32() == corr
    error, message = r.i16(), r.string()
    auth = r.take(r.i32())
    lifetime = struct.unpack(">q", r.take(8))[0] if version >= 1 else None
    return error, message, auth, lifetime


def metadata_v1_request(corr: int = 3) -> bytes:
    return frame(request_header_v1(3, 1, corr) + struct.pack(">i", -1))


# -- tests -------------------------------------------------------------------------------


def test_plain_login_produces_and_consumes_and_plaintext_still_works(sasl_broker):
    b = sasl_broker()
    conf = sasl_conf(b, "PLAIN", "alice", "alice-secret")
    assert produce_and_consume(conf) == [f"v{i}" for i in range(20)]
    # Metadata through each listener advertises that listener's port.
    md = AdminClient(conf).list_topics(timeout=10)
    assert [(br.host, br.port) for br in md.brokers.values()] == [("127.0.0.1", b.sasl_port)]
    plain = {"bootstrap.servers": b.bootstrap}
    md = AdminClient(plain).list_topics(timeout=10)
    assert [(br.host, br.port) for br in md.brokers.values()] == [("127.0.0.1", b.port)]
    assert produce_and_consume(plain, n=5) == [f"v{i}" for i in range(5)]


def test_kafka_python_plain_and_scram_sha_512(sasl_broker):
    from kafka import KafkaConsumer, KafkaProducer
    b = sasl_broker()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    up = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"bob-secret")
    for f in admin.alter_user_scram_credentials([up]).values():
        f.result(timeout=30)
    for mechanism, user, password in [("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-512", "bob", "bob-secret")]:
        topic = f"kp-{uuid.uuid4().hex[:8]}"
        common = dict(bootstrap_servers=b.sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
        p = KafkaProducer(**common)
        for i in range(5):
            p.send(topic, f"{mechanism}-{i}".encode()).get(timeout=30)
        p.close()
        c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **common)
        assert sorted(m.value.decode() for m in c) == [f"{mechanism}-{i}" for i in range(5)]
        c.close()


def test_wrong_password_gets_sasl_authentication_failed_then_close(sasl_broker):
    b = sasl_broker()
    with raw_connect(b.sasl_bootstrap) as s:
        assert sasl_handshake(s, "PLAIN") == (0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
        error, message, auth, lifetime = sasl_authenticate(s, b"\0alice\0wrong")
        assert (error, message, auth, lifetime) == (
            SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password", b"", 0)
        assert connection_closed_by_peer(s) == (True, b"")
    # SCRAM for a user without a credential: Kafka's generic message.
    with raw_connect(b.sasl_bootstrap) as s:
        sasl_handshake(s, "SCRAM-SHA-256")
        error, message, _, _ = sasl_authenticate(s, b"n,,n=nobody,r=abcdef")
        assert (error, message) == (
            SASL_AUTHENTICATION_FAILED,
            "Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-256")
        assert connection_closed_by_peer(s) == (True, b"")
    # A real client sees the failure too.
    errors = []
    p = Producer(sasl_conf(b, "PLAIN", "alice", "nope", error_cb=lambda e: errors.append(e)))
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors and "Invalid username or password" in errors[0].str(), errors


def test_unsupported_mechanism_lists_the_enabled_ones(sasl_broker):
    b = sasl_broker("--sasl-enabled-mechanisms", "SCRAM-SHA-512,PLAIN")
    with raw_connect(b.sasl_bootstrap) as s:
        assert sasl_handshake(s, "GSSAPI") == (UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512", "PLAIN"])
        assert connection_closed_by_peer(s) == (True, b"")


def test_unauthenticated_requests_are_disconnected(sasl_broker):
    b = sasl_broker()
    # Metadata before anything: closed without an answer.
    with raw_connect(b.sasl_bootstrap) as s:
        s.sendall(metadata_v1_request())
        assert connection_closed_by_peer(s) == (True, b"")
    # ApiVersions is answered, then Metadata after the handshake closes too.
    with raw_connect(b.sasl_bootstrap) as s:
        s.sendall(frame(request_header_v1(18, 0, 9)))
        r = Reader(recv_frame(s))
        assert (r.i32(), r.i16()) == (9, 0)
        sasl_handshake(s, "PLAIN")
        s.sendall(metadata_v1_request())
        assert connection_closed_by_peer(s) == (True, b"")
    # The same Metadata on the PLAINTEXT listener is answered.
    with raw_connect(b.bootstrap) as s:
        s.sendall(metadata_v1_request(corr=5))
        assert Reader(recv_frame(s)).i32() == 5
    # SaslHandshake where no exchange is expected: ILLEGAL_SASL_STATE (KafkaApis).
    with raw_connect(b.bootstrap) as s:
        assert sasl_handshake(s, "PLAIN") == (ILLEGAL_SASL_STATE, [])


def test_api_versions_from_the_future_may_be_retried_before_the_handshake(sasl_broker):
    b = sasl_broker()
    with raw_connect(b.sasl_bootstrap) as s:
        s.sendall(frame(request_header_v1(18, 99, 1)))
        r = Reader(recv_frame(s))
        assert (r.i32(), r.i16()) == (1, 35)  # UNSUPPORTED_VERSION, in v0 format (KIP-511)
        s.sendall(frame(request_header_v1(18, 0, 2)))
        r = Reader(recv_frame(s))
        assert (r.i32(), r.i16()) == (2, 0)
        assert sasl_handshake(s, "PLAIN", corr=3)[0] == 0
        assert sasl_authenticate(s, b"\0alice\0alice-secret", corr=4) == (0, None, b"", 0)
        # A second ApiVersions after the handshake is not the exchange's; once
        # authenticated it is served like any request.
        s.sendall(frame(request_header_v1(18, 0, 5)))
        assert Reader(recv_frame(s)).i32() == 5


def test_v0_handshake_then_raw_plain_token(sasl_broker):
    b = sasl_broker()
    with raw_connect(b.sasl_bootstrap) as s:
        assert sasl_handshake(s, "PLAIN", version=0)[0] == 0
        token = b"\0alice\0alice-secret"
        s.sendall(struct.pack(">i", len(token)) + token)
        assert recv_frame(s) == b""
        s.sendall(metadata_v1_request(corr=42))
        assert Reader(recv_frame(s)).i32() == 42


def test_scram_credentials_through_the_admin_api_and_a_restart(sasl_broker):
    b = sasl_broker()
    admin = AdminClient(sasl_conf(b, "PLAIN", "admin", "admin-secret"))
    ups = [
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"carol-secret"),
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"carol-512"),
    ]
    # The same user twice in one request: DUPLICATE_RESOURCE, nothing stored.
    futures = admin.alter_user_scram_credentials(ups)
    with pytest.raises(KafkaException) as e:
        futures["carol"].result(timeout=30)
    assert e.value.args[0].code() == DUPLICATE_RESOURCE
    for up in ups:
        admin.alter_user_scram_credentials([up])["carol"].result(timeout=30)
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=30)
    assert sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 8192), (ScramMechanism.SCRAM_SHA_512, 4096)]
    bad = UserScramCredentialUpsertion("dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4095), b"x")
    with pytest.raises(KafkaException) as e:
        admin.alter_user_scram_credentials([bad])["dave"].result(timeout=30)
    assert (e.value.args[0].code(), e.value.args[0].str()) == (UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    gone = UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_256)
    with pytest.raises(KafkaException) as e:
        admin.alter_user_scram_credentials([gone])["dave"].result(timeout=30)
    assert e.value.args[0].code() == RESOURCE_NOT_FOUND
    with pytest.raises(KafkaException) as e:
        admin.describe_user_scram_credentials(["dave"])["dave"].result(timeout=30)
    assert e.value.args[0].code() == RESOURCE_NOT_FOUND

    assert produce_and_consume(sasl_conf(b, "SCRAM-SHA-256", "carol", "carol-secret"), n=5) == [
        f"v{i}" for i in range(5)]
    # Wrong SCRAM password: refused.
    errors = []
    p = Producer(sasl_conf(b, "SCRAM-SHA-512", "carol", "carol-secret", error_cb=lambda e: errors.append(e)))
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors and "SCRAM-SHA-512" in errors[0].str(), errors

    b.restart()
    assert produce_and_consume(sasl_conf(b, "SCRAM-SHA-512", "carol", "carol-512"), n=3) == [
        f"v{i}" for i in range(3)]
    plain_admin = AdminClient({"bootstrap.servers": b.bootstrap})
    described = plain_admin.describe_user_scram_credentials().result(timeout=30)
    assert sorted(described) == ["carol"]


@pytest.mark.skipif(not CLI_LIBS.is_dir(), reason="Kafka CLI jars not set up (tests/compat/kafka-cli/setup)")
def test_kafka_configs_adds_and_describes_a_scram_user(sasl_broker):
    b = sasl_broker()

    def configs(*args: str) -> str:
        cmd = ["java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dlog4j2.configurationFile={CLI_LOG4J}", "-cp", f"{CLI_LIBS}/*",
               "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.bootstrap, *args]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    out = configs("--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-scram]",
                  "--entity-type", "users", "--entity-name", "alice")
    assert out.strip() == "Completed updating config for user alice."
    out = configs("--describe", "--entity-type", "users", "--entity-name", "alice")
    assert "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192" in out, out
    assert produce_and_consume(sasl_conf(b, "SCRAM-SHA-256", "alice", "alice-scram"), n=3) == [
        f"v{i}" for i in range(3)]


def test_sessions_expire_without_reauthentication_kip_368(sasl_broker):
    b = sasl_broker("--connections-max-reauth-ms", "1000")
    with raw_connect(b.sasl_bootstrap) as s:
        sasl_handshake(s, "PLAIN")
        assert sasl_authenticate(s, b"\0alice\0alice-secret") == (0, None, b"", 1000)
        s.sendall(metadata_v1_request(corr=7))
        assert Reader(recv_frame(s)).i32() == 7
        time.sleep(1.2)
        s.sendall(metadata_v1_request(corr=8))
        assert connection_closed_by_peer(s) == (True, b"")
    # Re-authenticating in time keeps the connection.
    with raw_connect(b.sasl_bootstrap) as s:
        sasl_handshake(s, "PLAIN")
        sasl_authenticate(s, b"\0alice\0alice-secret")
        time.sleep(1.2)
        assert sasl_handshake(s, "PLAIN", corr=10)[0] == 0
        assert sasl_authenticate(s, b"\0alice\0alice-secret", corr=11) == (0, None, b"", 1000)
        s.sendall(metadata_v1_request(corr=12))
        assert Reader(recv_frame(s)).i32() == 12
    # librdkafka re-authenticates by itself: a producer outlives several sessions.
    conf = sasl_conf(b, "PLAIN", "alice", "alice-secret")
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    for i in range(8):
        p.produce(topic, value=b"x")
        assert p.flush(10) == 0
        time.sleep(0.4)


def test_sasl_users_get_exactly_what_their_acls_grant(sasl_broker):
    """SASL principals meet the authorizer: User:admin (a super user) creates the topics
    and grants User:alice WRITE and READ on `alice-` topics and READ on group `alice-g`;
    alice, logged in with PLAIN, produces to and consumes from `alice-t`, but cannot
    produce to `bob-t` (TOPIC_AUTHORIZATION_FAILED) or see it in Metadata, and a group
    without an ACL gets GROUP_AUTHORIZATION_FAILED. ANONYMOUS on the PLAINTEXT listener
    gets nothing."""
    from confluent_kafka import KafkaError, TopicPartition
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, NewTopic,
                                       ResourcePatternType, ResourceType)

    b = sasl_broker("--authorizer", "--super-users", "User:admin")

    def conf(user):
        return {"bootstrap.servers": b.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"}

    admin = AdminClient(conf("admin"))
    for f in admin.create_topics([NewTopic("alice-t", 1, 1), NewTopic("bob-t", 1, 1)]).values():
        f.result(30)
    grants = [
        AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED, "User:alice", "*",
                   op, AclPermissionType.ALLOW)
        for op in (AclOperation.WRITE, AclOperation.READ)
    ] + [AclBinding(ResourceType.GROUP, "alice-g", ResourcePatternType.LITERAL, "User:alice", "*",
                    AclOperation.READ, AclPermissionType.ALLOW)]
    for f in admin.create_acls(grants).values():
        f.result(30)

    def produce(topic, c):
        p = Producer({**c, "message.timeout.ms": 10000})
        errors = []
        p.produce(topic, b"from-alice", on_delivery=lambda err, msg: errors.append(err))
        p.flush(15)
        assert len(errors) == 1
        return errors[0].code() if errors[0] else None

    assert produce("alice-t", conf("alice")) is None
    assert produce("bob-t", conf("alice")) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    seen = set(Producer(conf("alice")).list_topics(timeout=15).topics)
    assert "alice-t" in seen and "bob-t" not in seen
    # ANONYMOUS (PLAINTEXT listener) has no ACL at all.
    assert produce("alice-t", {"bootstrap.servers": b.bootstrap}) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    def consume(group):
        c = Consumer({**conf("alice"), "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        try:
            c.subscribe(["alice-t"])
            for _ in range(30):
                m = c.poll(1.0)
                if m is not None:
                    return m.error().code() if m.error() else m.value()
            return None
        finally:
            c.close()

    assert consume("alice-g") == b"from-alice"
    assert consume("other-g") == KafkaError.GROUP_AUTHORIZATION_FAILED
