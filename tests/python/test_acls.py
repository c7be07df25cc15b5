"""ACLs and the authorizer (issue 14): CreateAcls / DescribeAcls / DeleteAcls with
confluent_kafka's AdminClient and Kafka's kafka-acls.sh, then what anonymous clients may
do under those ACLs, after a restart without super users and after kill -9.

Every PLAINTEXT connection is User:ANONYMOUS, so the ACLs are written while
User:ANONYMOUS is a super user, and checked after a restart without one.
"""
import os
import subprocess

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from helpers import REPO_ROOT

CLI_LIBS = str(REPO_ROOT / "tests/compat/kafka-cli/.cache/libs")
CLI_LOG4J = str(REPO_ROOT / "tests/compat/kafka-cli/log4j2.properties")

ANON = "User:ANONYMOUS"
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
LIT = ResourcePatternType.LITERAL
PRE = ResourcePatternType.PREFIXED


def admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap})



def binding(rt, name, pt, principal, op, perm, host="*"):
    return AclBinding(rt, name, pt, principal, host, op, perm)


def everything():
    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                            AclOperation.ANY, AclPermissionType.ANY)


def as_tuples(bindings):
    return sorted((b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host,
                   b.operation.name, b.permission_type.name) for b in bindings)


def kafka_error(exc):
    err = exc.args[0]
    return err.code() if isinstance(err, KafkaError) else err


def produce(b, topic, **conf):
    """Produce one record; the delivery error (None on success)."""
    p = Producer({"bootstrap.servers": b.bootstrap, "message.timeout.ms": 10000, **conf})
    result = []
    p.produce(topic, b"v", on_delivery=lambda err, msg: result.append(err))
    p.flush(15)
    assert len(result) == 1
    return result[0]


def consume_error(b, topic, group):
    """Subscribe with `group` and poll: the first error, or the first record's value."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        for _ in range(30):
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                return m.error().code()
            return m.value()
        return None
    finally:
        c.close()


ACLS = [
    binding(ResourceType.TOPIC, "ok-", PRE, ANON, AclOperation.WRITE, ALLOW),
    binding(ResourceType.TOPIC, "ok-", PRE, "User:*", AclOperation.READ, ALLOW),
    binding(ResourceType.TOPIC, "ok-denied", LIT, ANON, AclOperation.WRITE, DENY),
    binding(ResourceType.GROUP, "g-ok", LIT, ANON, AclOperation.READ, ALLOW),
]


def test_acl_apis_answer_security_disabled_without_the_authorizer(broker):
    a = admin(broker)
    with pytest.raises(KafkaException) as e:
        a.create_acls([ACLS[0]])[ACLS[0]].result(10)
    assert kafka_error(e.value) == KafkaError.SECURITY_DISABLED
    # librdkafka 2.16 drops DescribeAcls' top-level error (it answers an empty list);
    # Kafka's own CLI shows it.
    assert a.describe_acls(everything()).result(10) == []
    if os.path.isdir(CLI_LIBS):
        rc, out, err = kafka_acls(broker, "--list")
        assert rc == 1
        assert "SecurityDisabledException: No Authorizer is configured on the broker" in out + err
    with pytest.raises(KafkaException) as e:
        a.delete_acls([everything()])[everything()].result(10)
    assert kafka_error(e.value) == KafkaError.SECURITY_DISABLED
    # Nothing else changes: produce works as ever.
    assert produce(broker, "t") is None


def test_create_describe_delete_acls(broker_factory):
    b = broker_factory("--authorizer", "--super-users", "User:ANONYMOUS")
    a = admin(b)
    for f in a.create_acls(ACLS).values():
        assert f.result(10) is None
    # Creating an existing binding again succeeds and changes nothing.
    assert a.create_acls([ACLS[0]])[ACLS[0]].result(10) is None
    assert as_tuples(a.describe_acls(everything()).result(10)) == as_tuples(ACLS)
    # MATCH: every binding that applies to the topic ok-denied.
    match = AclBindingFilter(ResourceType.TOPIC, "ok-denied", ResourcePatternType.MATCH, None,
                             None, AclOperation.ANY, AclPermissionType.ANY)
    assert as_tuples(a.describe_acls(match).result(10)) == as_tuples(ACLS[:3])
    by_principal = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:*",
                                    None, AclOperation.ANY, AclPermissionType.ANY)
    assert as_tuples(a.describe_acls(by_principal).result(10)) == as_tuples([ACLS[1]])
    # Invalid bindings: INVALID_REQUEST.
    bad_cluster = binding(ResourceType.BROKER, "not-kafka-cluster", LIT, ANON,
                          AclOperation.ALTER, ALLOW)
    with pytest.raises(KafkaException) as e:
        a.create_acls([bad_cluster])[bad_cluster].result(10)
    assert kafka_error(e.value) == KafkaError.INVALID_REQUEST
    bad_principal = binding(ResourceType.TOPIC, "t", LIT, "alice", AclOperation.READ, ALLOW)
    with pytest.raises(KafkaException) as e:
        a.create_acls([bad_principal])[bad_principal].result(10)
    assert kafka_error(e.value) == KafkaError.INVALID_REQUEST
    # Delete: the group ACL only.
    groups = AclBindingFilter(ResourceType.GROUP, None, ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)
    deleted = a.delete_acls([groups])[groups].result(10)
    assert as_tuples(deleted) == as_tuples([ACLS[3]])
    assert as_tuples(a.describe_acls(everything()).result(10)) == as_tuples(ACLS[:3])
    assert a.delete_acls([groups])[groups].result(10) == []


def kafka_acls(b, *args):
    cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           f"-Dlog4j2.configurationFile={CLI_LOG4J}", "-cp", os.path.join(CLI_LIBS, "*"),
           "org.apache.kafka.tools.AclCommand", "--bootstrap-server", b.bootstrap, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.skipif(not os.path.isdir(CLI_LIBS), reason="Kafka CLI jars not set up")
def test_kafka_acls_cli_adds_lists_and_removes(broker_factory):
    b = broker_factory("--authorizer", "--super-users", "User:ANONYMOUS")
    rc, out, err = kafka_acls(b, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                              "--operation", "Write", "--topic", "cli-t")
    assert rc == 0, out + err
    rc, out, err = kafka_acls(b, "--add", "--deny-principal", "User:bob", "--operation", "All",
                              "--group", "cli-", "--resource-pattern-type", "prefixed")
    assert rc == 0, out + err
    rc, out, err = kafka_acls(b, "--list", "--topic", "cli-t")
    assert rc == 0, out + err
    assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=cli-t, patternType=LITERAL)`:" in out
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in out
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in out
    a = admin(b)
    tuples = as_tuples(a.describe_acls(everything()).result(10))
    assert tuples == [
        ("GROUP", "cli-", "PREFIXED", "User:bob", "*", "ALL", "DENY"),
        ("TOPIC", "cli-t", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "cli-t", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
    ]
    rc, out, err = kafka_acls(b, "--remove", "--force", "--topic", "cli-t")
    assert rc == 0, out + err
    tuples = as_tuples(a.describe_acls(everything()).result(10))
    assert tuples == [("GROUP", "cli-", "PREFIXED", "User:bob", "*", "ALL", "DENY")]


def test_acls_are_enforced_and_survive_restart_and_kill9(broker_factory):
    b = broker_factory("--authorizer", "--super-users", "User:ANONYMOUS")
    a = admin(b)
    for f in a.create_acls(ACLS).values():
        f.result(10)
    for f in a.create_topics([NewTopic(t, 1, 1) for t in ("ok-a", "ok-denied", "no-x")]).values():
        f.result(10)
    assert produce(b, "ok-a") is None
    assert produce(b, "no-x") is None

    # Anonymous is no longer a super user: only the ACLs speak.
    b.extra_args = ["--authorizer"]
    b.restart()
    assert produce(b, "ok-a") is None
    assert produce(b, "no-x").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # DENY WRITE on the literal overrides the prefixed ALLOW.
    assert produce(b, "ok-denied").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Metadata: all topics hides no-x; naming it is TOPIC_AUTHORIZATION_FAILED.
    a = admin(b)
    md = a.list_topics(timeout=10)
    assert sorted(t for t in md.topics) == ["ok-a", "ok-denied"]
    md = a.list_topics(topic="no-x", timeout=10)
    assert md.topics["no-x"].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Auto-creation needs CREATE: answered TOPIC_AUTHORIZATION_FAILED, not created.
    md = a.list_topics(topic="ok-new", timeout=10)
    assert md.topics["ok-new"].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Consuming: READ on the topic and on the group.
    assert consume_error(b, "ok-a", "g-ok") == b"v"
    assert consume_error(b, "ok-a", "g-no") == KafkaError.GROUP_AUTHORIZATION_FAILED
    # The ACL APIs need the cluster ACLs anonymous has not got.
    with pytest.raises(KafkaException) as e:
        a.create_acls([ACLS[0]])[ACLS[0]].result(10)
    assert kafka_error(e.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as e:
        a.delete_acls([everything()])[everything()].result(10)
    assert kafka_error(e.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    if os.path.isdir(CLI_LIBS):
        rc, out, err = kafka_acls(b, "--list")
        assert rc == 1 and "ClusterAuthorizationException" in out + err
    # An idempotent producer needs IDEMPOTENT_WRITE or WRITE on some topic: it has one.
    assert produce(b, "ok-a", **{"enable.idempotence": True}) is None
    # Admin APIs: CREATE, DELETE, DESCRIBE_CONFIGS on topics, none granted.
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic("ok-c", 1, 1)])["ok-c"].result(10)
    assert kafka_error(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as e:
        a.delete_topics(["ok-a"])["ok-a"].result(10)
    assert kafka_error(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    from confluent_kafka.admin import ConfigResource
    res = ConfigResource(ConfigResource.Type.TOPIC, "ok-a")
    with pytest.raises(KafkaException) as e:
        a.describe_configs([res])[res].result(10)
    assert kafka_error(e.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    b.kill9()
    b.extra_args = ["--authorizer", "--super-users", "User:ANONYMOUS"]
    b.start()
    a = admin(b)
    assert as_tuples(a.describe_acls(everything()).result(10)) == as_tuples(ACLS)


def test_transactional_producers_need_write_on_their_transactional_id(broker_factory):
    b = broker_factory("--authorizer", "--super-users", "User:ANONYMOUS")
    a = admin(b)
    tx_ok = binding(ResourceType.TRANSACTIONAL_ID, "tx-ok", LIT, ANON, AclOperation.WRITE, ALLOW)
    for f in a.create_acls(ACLS + [tx_ok]).values():
        f.result(10)
    a.create_topics([NewTopic("ok-tx", 1, 1)])["ok-tx"].result(10)
    b.extra_args = ["--authorizer"]
    b.restart()

    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx-ok"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("ok-tx", b"committed")
    p.commit_transaction(30)

    denied = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx-no"})
    with pytest.raises(KafkaException) as e:
        denied.init_transactions(30)
    assert kafka_error(e.value) == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
