"""DescribeConfigs (key 32) against the real binary, compared with answers recorded from
Apache Kafka 4.4: one KRaft node started as the bench starts it (perf/kafka/server.properties,
node.id=0), topics `plain` (no override) and `over` (retention.ms=3600000,
max.message.bytes=200000, cleanup.policy=compact,delete, segment.jitter.ms=5), asked with
DescribeConfigs v4 over a raw socket (kafka-python's protocol classes). Kafka need not run.

Each recorded entry is (value, config_source, config_type, read_only, synonyms as
(name, value, source)); sources: 1 TOPIC_CONFIG, 2 DYNAMIC_BROKER_CONFIG,
3 DYNAMIC_DEFAULT_BROKER_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG.

Where shardlog answers otherwise on purpose, `DIFFERENT` says why; the test checks
shardlog's own answer for those."""

from __future__ import annotations

import socket
import struct

import pytest

TOPIC, BROKER_RESOURCE = 2, 4
OVERRIDES = {"retention.ms": "3600000", "max.message.bytes": "200000",
             "cleanup.policy": "compact,delete", "segment.jitter.ms": "5"}
# The flags of the second recording's server.properties, as shardlog flags.
STATIC_FLAGS = ["--log-retention-ms", "4000000", "--max-message-bytes", "2000000",
                "--log-cleaner-backoff-ms", "1000", "--default-partitions", "2",
                "--auto-create-topics", "false", "--log-segment-ms", "100000000",
                "--log-retention-check-interval-ms", "200000"]
CLUSTER_DEFAULT = {"log.retention.ms": "7200000", "log.segment.bytes": "2097152", "log.cleaner.backoff.ms": "2000"}
BROKER_0 = {"log.retention.ms": "5400000", "message.max.bytes": "300000", "log.cleaner.backoff.ms": "3000"}

# Kafka 4.4 answers where shardlog differs on purpose, and shardlog's answer.
DIFFERENT = {
    # KRaft with eligible leader replicas (the 4.x default) copies the controller's
    # min.insync.replicas into the cluster's dynamic configs; shardlog has no controller.
    "min.insync.replicas": ("1", 5, 3, False, [("min.insync.replicas", "1", 5)]),
    # Kafka can re-bind listeners at runtime; shardlog cannot (read-only).
    "listeners": None,
    # shardlog's own default: 256 MiB (Kafka: -1, no limit).
    "queued.max.request.bytes": ("268435456", 5, 5, True, [("queued.max.request.bytes", "268435456", 5)]),
}
# Set in the recording's server.properties; the test broker is started without them
# (advertised.listeners, node.id, broker.id) or with its own values (listeners, log.dirs):
# checked on their own below.
STARTUP = {"advertised.listeners", "broker.id", "node.id", "listeners", "log.dirs"}

# Recorded from Kafka 4.4.
PLAIN = {
    'cleanup.policy': ('delete', 5, 7, False, [('log.cleanup.policy', 'delete', 5)]),
    'compression.gzip.level': ('-1', 5, 3, False, [('compression.gzip.level', '-1', 5)]),
    'compression.lz4.level': ('9', 5, 3, False, [('compression.lz4.level', '9', 5)]),
    'compression.type': ('producer', 5, 2, False, [('compression.type', 'producer', 5)]),
    'compression.zstd.level': ('3', 5, 3, False, [('compression.zstd.level', '3', 5)]),
    'delete.retention.ms': ('86400000', 5, 5, False, [('log.cleaner.delete.retention.ms', '86400000', 5)]),
    'errors.deadletterqueue.group.enable': ('false', 5, 1, False, []),
    'file.delete.delay.ms': ('60000', 5, 5, False, [('log.segment.delete.delay.ms', '60000', 5)]),
    'flush.messages': ('9223372036854775807', 5, 5, False, [('log.flush.interval.messages', '9223372036854775807', 5)]),
    'flush.ms': ('9223372036854775807', 5, 5, False, []),
    'follower.replication.throttled.replicas': ('', 5, 7, False, []),
    'index.interval.bytes': ('4096', 5, 3, False, [('log.index.interval.bytes', '4096', 5)]),
    'leader.replication.throttled.replicas': ('', 5, 7, False, []),
    'local.retention.bytes': ('-2', 5, 5, False, [('log.local.retention.bytes', '-2', 5)]),
    'local.retention.ms': ('-2', 5, 5, False, [('log.local.retention.ms', '-2', 5)]),
    'max.compaction.lag.ms': ('9223372036854775807', 5, 5, False, [('log.cleaner.max.compaction.lag.ms', '9223372036854775807', 5)]),
    'max.decompressed.message.bytes': ('2147483639', 5, 3, False, [('max.decompressed.message.bytes', '2147483639', 5)]),
    'max.message.bytes': ('1048588', 5, 3, False, [('message.max.bytes', '1048588', 5)]),
    'message.timestamp.after.max.ms': ('3600000', 5, 5, False, [('log.message.timestamp.after.max.ms', '3600000', 5)]),
    'message.timestamp.before.max.ms': ('9223372036854775807', 5, 5, False, [('log.message.timestamp.before.max.ms', '9223372036854775807', 5)]),
    'message.timestamp.type': ('CreateTime', 5, 2, False, [('log.message.timestamp.type', 'CreateTime', 5)]),
    'min.cleanable.dirty.ratio': ('0.5', 5, 6, False, [('log.cleaner.min.cleanable.ratio', '0.5', 5)]),
    'min.compaction.lag.ms': ('0', 5, 5, False, [('log.cleaner.min.compaction.lag.ms', '0', 5)]),
    'min.insync.replicas': ('1', 3, 3, False, [('min.insync.replicas', '1', 3), ('min.insync.replicas', '1', 4), ('min.insync.replicas', '1', 5)]),
    'preallocate': ('false', 5, 1, False, [('log.preallocate', 'false', 5)]),
    'remote.copy.lag.bytes': ('-1', 5, 5, False, [('log.remote.copy.lag.bytes', '-1', 5)]),
    'remote.copy.lag.ms': ('0', 5, 5, False, [('log.remote.copy.lag.ms', '0', 5)]),
    'remote.log.copy.disable': ('false', 5, 1, False, []),
    'remote.log.delete.on.disable': ('false', 5, 1, False, []),
    'remote.storage.enable': ('false', 5, 1, False, []),
    'retention.bytes': ('-1', 5, 5, False, [('log.retention.bytes', '-1', 5)]),
    'retention.ms': ('604800000', 5, 5, False, []),
    'segment.bytes': ('1073741824', 5, 3, False, [('log.segment.bytes', '1073741824', 5)]),
    'segment.index.bytes': ('10485760', 5, 3, False, [('log.index.size.max.bytes', '10485760', 5)]),
    'segment.jitter.ms': ('0', 5, 5, False, []),
    'segment.ms': ('604800000', 5, 5, False, []),
    'unclean.leader.election.enable': ('false', 5, 1, False, [('unclean.leader.election.enable', 'false', 5)]),
}
OVER = {
    'cleanup.policy': ('compact,delete', 1, 7, False, [('cleanup.policy', 'compact,delete', 1), ('log.cleanup.policy', 'delete', 5)]),
    'max.message.bytes': ('200000', 1, 3, False, [('max.message.bytes', '200000', 1), ('message.max.bytes', '1048588', 5)]),
    'retention.ms': ('3600000', 1, 5, False, [('retention.ms', '3600000', 1)]),
    'segment.jitter.ms': ('5', 1, 5, False, [('segment.jitter.ms', '5', 1)]),
}
BROKER = {
    'advertised.listeners': ('PLAINTEXT://127.0.0.1:56289,CONTROLLER://127.0.0.1:41793', 4, 7, True, [('advertised.listeners', 'PLAINTEXT://127.0.0.1:56289,CONTROLLER://127.0.0.1:41793', 4)]),
    'auto.create.topics.enable': ('true', 5, 1, True, [('auto.create.topics.enable', 'true', 5)]),
    'background.threads': ('10', 5, 3, False, [('background.threads', '10', 5)]),
    'broker.id': ('0', 4, 3, True, [('broker.id', '0', 4), ('broker.id', '-1', 5)]),
    'compression.gzip.level': ('-1', 5, 3, False, [('compression.gzip.level', '-1', 5)]),
    'compression.lz4.level': ('9', 5, 3, False, [('compression.lz4.level', '9', 5)]),
    'compression.type': ('producer', 5, 2, False, [('compression.type', 'producer', 5)]),
    'compression.zstd.level': ('3', 5, 3, False, [('compression.zstd.level', '3', 5)]),
    'connections.max.idle.ms': ('600000', 5, 5, True, [('connections.max.idle.ms', '600000', 5)]),
    'fetch.max.bytes': ('57671680', 5, 3, True, [('fetch.max.bytes', '57671680', 5)]),
    'group.initial.rebalance.delay.ms': ('3000', 5, 3, True, [('group.initial.rebalance.delay.ms', '3000', 5)]),
    'group.max.session.timeout.ms': ('1800000', 5, 3, True, [('group.max.session.timeout.ms', '1800000', 5)]),
    'group.min.session.timeout.ms': ('6000', 5, 3, True, [('group.min.session.timeout.ms', '6000', 5)]),
    'listeners': ('PLAINTEXT://127.0.0.1:56289,CONTROLLER://127.0.0.1:41793', 4, 7, False, [('listeners', 'PLAINTEXT://127.0.0.1:56289,CONTROLLER://127.0.0.1:41793', 4), ('listeners', 'PLAINTEXT://:9092', 5)]),
    'log.cleaner.backoff.ms': ('15000', 5, 5, False, [('log.cleaner.backoff.ms', '15000', 5)]),
    'log.cleaner.dedupe.buffer.size': ('134217728', 5, 5, False, [('log.cleaner.dedupe.buffer.size', '134217728', 5)]),
    'log.cleaner.delete.retention.ms': ('86400000', 5, 5, False, [('log.cleaner.delete.retention.ms', '86400000', 5)]),
    'log.cleaner.enable': ('true', 5, 1, True, [('log.cleaner.enable', 'true', 5)]),
    'log.cleaner.io.buffer.load.factor': ('0.9', 5, 6, False, [('log.cleaner.io.buffer.load.factor', '0.9', 5)]),
    'log.cleaner.io.buffer.size': ('524288', 5, 3, False, [('log.cleaner.io.buffer.size', '524288', 5)]),
    'log.cleaner.io.max.bytes.per.second': ('1.7976931348623157E308', 5, 6, False, [('log.cleaner.io.max.bytes.per.second', '1.7976931348623157E308', 5)]),
    'log.cleaner.max.compaction.lag.ms': ('9223372036854775807', 5, 5, False, [('log.cleaner.max.compaction.lag.ms', '9223372036854775807', 5)]),
    'log.cleaner.min.cleanable.ratio': ('0.5', 5, 6, False, [('log.cleaner.min.cleanable.ratio', '0.5', 5)]),
    'log.cleaner.min.compaction.lag.ms': ('0', 5, 5, False, [('log.cleaner.min.compaction.lag.ms', '0', 5)]),
    'log.cleaner.threads': ('1', 5, 3, False, [('log.cleaner.threads', '1', 5)]),
    'log.cleanup.policy': ('delete', 5, 7, False, [('log.cleanup.policy', 'delete', 5)]),
    'log.dirs': ('/tmp/wt-configs-kafka/data', 4, 7, True, [('log.dirs', '/tmp/wt-configs-kafka/data', 4)]),
    'log.flush.interval.messages': ('9223372036854775807', 5, 5, False, [('log.flush.interval.messages', '9223372036854775807', 5)]),
    'log.flush.interval.ms': (None, 5, 5, False, []),
    'log.flush.scheduler.interval.ms': ('9223372036854775807', 5, 5, True, [('log.flush.scheduler.interval.ms', '9223372036854775807', 5)]),
    'log.index.interval.bytes': ('4096', 5, 3, False, [('log.index.interval.bytes', '4096', 5)]),
    'log.index.size.max.bytes': ('10485760', 5, 3, False, [('log.index.size.max.bytes', '10485760', 5)]),
    'log.local.retention.bytes': ('-2', 5, 5, False, [('log.local.retention.bytes', '-2', 5)]),
    'log.local.retention.ms': ('-2', 5, 5, False, [('log.local.retention.ms', '-2', 5)]),
    'log.message.timestamp.after.max.ms': ('3600000', 5, 5, False, [('log.message.timestamp.after.max.ms', '3600000', 5)]),
    'log.message.timestamp.before.max.ms': ('9223372036854775807', 5, 5, False, [('log.message.timestamp.before.max.ms', '9223372036854775807', 5)]),
    'log.message.timestamp.type': ('CreateTime', 5, 2, False, [('log.message.timestamp.type', 'CreateTime', 5)]),
    'log.preallocate': ('false', 5, 1, False, [('log.preallocate', 'false', 5)]),
    'log.remote.copy.lag.bytes': ('-1', 5, 5, False, [('log.remote.copy.lag.bytes', '-1', 5)]),
    'log.remote.copy.lag.ms': ('0', 5, 5, False, [('log.remote.copy.lag.ms', '0', 5)]),
    'log.retention.bytes': ('-1', 5, 5, False, [('log.retention.bytes', '-1', 5)]),
    'log.retention.check.interval.ms': ('300000', 5, 5, True, [('log.retention.check.interval.ms', '300000', 5)]),
    'log.retention.hours': ('168', 5, 3, True, [('log.retention.hours', '168', 5)]),
    'log.retention.minutes': (None, 5, 3, True, []),
    'log.retention.ms': (None, 5, 5, False, []),
    'log.roll.hours': ('168', 5, 3, True, [('log.roll.hours', '168', 5)]),
    'log.roll.jitter.hours': ('0', 5, 3, True, [('log.roll.jitter.hours', '0', 5)]),
    'log.roll.jitter.ms': (None, 5, 5, False, []),
    'log.roll.ms': (None, 5, 5, False, []),
    'log.segment.bytes': ('1073741824', 5, 3, False, [('log.segment.bytes', '1073741824', 5)]),
    'log.segment.delete.delay.ms': ('60000', 5, 5, False, [('log.segment.delete.delay.ms', '60000', 5)]),
    'max.connections': ('2147483647', 5, 3, False, [('max.connections', '2147483647', 5)]),
    'max.connections.per.ip': ('2147483647', 5, 3, False, [('max.connections.per.ip', '2147483647', 5)]),
    'max.decompressed.message.bytes': ('2147483639', 5, 3, False, [('max.decompressed.message.bytes', '2147483639', 5)]),
    'message.max.bytes': ('1048588', 5, 3, False, [('message.max.bytes', '1048588', 5)]),
    'min.insync.replicas': ('1', 3, 3, False, [('min.insync.replicas', '1', 3), ('min.insync.replicas', '1', 4), ('min.insync.replicas', '1', 5)]),
    'node.id': ('0', 4, 3, True, [('node.id', '0', 4)]),
    'num.io.threads': ('8', 5, 3, False, [('num.io.threads', '8', 5)]),
    'num.network.threads': ('3', 5, 3, False, [('num.network.threads', '3', 5)]),
    'num.partitions': ('1', 5, 3, True, [('num.partitions', '1', 5)]),
    'num.replica.fetchers': ('1', 5, 3, False, [('num.replica.fetchers', '1', 5)]),
    'offsets.retention.minutes': ('10080', 5, 3, True, [('offsets.retention.minutes', '10080', 5)]),
    'offsets.topic.segment.bytes': ('104857600', 5, 3, True, [('offsets.topic.segment.bytes', '104857600', 5)]),
    # Not in the recording (added later): Kafka 4.4's TransactionLogConfig defines it as an
    # INT, default 86400000, changeable at runtime (DynamicProducerStateManagerConfig).
    'producer.id.expiration.ms': ('86400000', 5, 3, False, [('producer.id.expiration.ms', '86400000', 5)]),
    'queued.max.request.bytes': ('-1', 5, 5, True, [('queued.max.request.bytes', '-1', 5)]),
    'socket.request.max.bytes': ('104857600', 5, 3, True, [('socket.request.max.bytes', '104857600', 5)]),
    'unclean.leader.election.enable': ('false', 5, 1, False, [('unclean.leader.election.enable', 'false', 5)]),
}
LEVELS_TOPIC = {
    'cleanup.policy': ('delete', 5, 7, False, [('log.cleanup.policy', 'delete', 5)]),
    'max.message.bytes': ('300000', 2, 3, False, [('message.max.bytes', '300000', 2), ('message.max.bytes', '2000000', 4), ('message.max.bytes', '1048588', 5)]),
    'retention.ms': ('5400000', 2, 5, False, [('log.retention.ms', '5400000', 2), ('log.retention.ms', '7200000', 3), ('log.retention.ms', '4000000', 4), ('log.retention.hours', '168', 5)]),
    'segment.bytes': ('2097152', 3, 3, False, [('log.segment.bytes', '2097152', 3), ('log.segment.bytes', '1073741824', 5)]),
    'segment.ms': ('100000000', 4, 5, False, [('log.roll.ms', '100000000', 4), ('log.roll.hours', '168', 5)]),

}
LEVELS_OVER = {
    'cleanup.policy': ('compact,delete', 1, 7, False, [('cleanup.policy', 'compact,delete', 1), ('log.cleanup.policy', 'delete', 5)]),
    'max.message.bytes': ('200000', 1, 3, False, [('max.message.bytes', '200000', 1), ('message.max.bytes', '300000', 2), ('message.max.bytes', '2000000', 4), ('message.max.bytes', '1048588', 5)]),
    'retention.ms': ('3600000', 1, 5, False, [('retention.ms', '3600000', 1), ('log.retention.ms', '5400000', 2), ('log.retention.ms', '7200000', 3), ('log.retention.ms', '4000000', 4), ('log.retention.hours', '168', 5)]),
    'segment.bytes': ('2097152', 3, 3, False, [('log.segment.bytes', '2097152', 3), ('log.segment.bytes', '1073741824', 5)]),
    'segment.ms': ('100000000', 4, 5, False, [('log.roll.ms', '100000000', 4), ('log.roll.hours', '168', 5)]),
}
LEVELS_BROKER = {
    'auto.create.topics.enable': ('false', 4, 1, True, [('auto.create.topics.enable', 'false', 4), ('auto.create.topics.enable', 'true', 5)]),
    'log.cleaner.backoff.ms': ('3000', 2, 5, False, [('log.cleaner.backoff.ms', '3000', 2), ('log.cleaner.backoff.ms', '2000', 3), ('log.cleaner.backoff.ms', '1000', 4), ('log.cleaner.backoff.ms', '15000', 5)]),
    'log.retention.check.interval.ms': ('200000', 4, 5, True, [('log.retention.check.interval.ms', '200000', 4), ('log.retention.check.interval.ms', '300000', 5)]),
    'log.retention.hours': ('168', 5, 3, True, [('log.retention.hours', '168', 5)]),
    'log.retention.ms': ('5400000', 2, 5, False, [('log.retention.ms', '5400000', 2), ('log.retention.ms', '7200000', 3), ('log.retention.ms', '4000000', 4), ('log.retention.hours', '168', 5)]),
    'log.roll.hours': ('168', 5, 3, True, [('log.roll.hours', '168', 5)]),
    'log.roll.ms': ('100000000', 4, 5, False, [('log.roll.ms', '100000000', 4), ('log.roll.hours', '168', 5)]),
    'log.segment.bytes': ('2097152', 3, 3, False, [('log.segment.bytes', '2097152', 3), ('log.segment.bytes', '1073741824', 5)]),
    'message.max.bytes': ('300000', 2, 3, False, [('message.max.bytes', '300000', 2), ('message.max.bytes', '2000000', 4), ('message.max.bytes', '1048588', 5)]),
    'num.partitions': ('2', 4, 3, True, [('num.partitions', '2', 4), ('num.partitions', '1', 5)]),
}
LEVELS_DEFAULT = {
    'log.cleaner.backoff.ms': ('2000', 3, 5, False, [('log.cleaner.backoff.ms', '2000', 3)]),
    'log.retention.ms': ('7200000', 3, 5, False, [('log.retention.ms', '7200000', 3)]),
    'log.segment.bytes': ('2097152', 3, 3, False, [('log.segment.bytes', '2097152', 3)]),
    'min.insync.replicas': ('1', 3, 3, False, [('min.insync.replicas', '1', 3)]),
}


def _recv(sock: socket.socket, n: int) -> bytes:
    b = b""
    while len(b) < n:
        chunk = sock.recv(n - len(b))
        assert chunk, "connection closed"
        b += chunk
    return b


def _call(bootstrap: str, request, response_class, version: int):
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        request.API_VERSION = version
        request.with_header(correlation_id=1, client_id="describe-configs-test")
        s.sendall(request.encode(version=version, header=True, framed=True))
        size = struct.unpack(">i", _recv(s, 4))[0]
        return response_class.decode(_recv(s, size), version=version, header=True).to_dict()


def describe(bootstrap: str, rtype: int, name: str, synonyms: bool = True, docs: bool = True,
             version: int = 4, keys=None) -> dict:
    """name -> the entry's dict (`value`, `config_source`, `synonyms`, ...)."""
    from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse

    res = DescribeConfigsRequest.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                         configuration_keys=keys)
    r = _call(bootstrap, DescribeConfigsRequest(resources=[res], include_synonyms=synonyms,
                                                include_documentation=docs),
              DescribeConfigsResponse, version)
    [result] = r["results"]
    assert result["error_code"] == 0, result
    return {c["name"]: c for c in result["configs"]}


def alter(bootstrap: str, rtype: int, name: str, configs: dict) -> None:
    """IncrementalAlterConfigs SET (the broker's cluster default is resource name "")."""
    from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

    Res = IncrementalAlterConfigsRequest.AlterConfigsResource
    res = Res(resource_type=rtype, resource_name=name,
              configs=[Res.AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()])
    r = _call(bootstrap, IncrementalAlterConfigsRequest(resources=[res], validate_only=False),
              IncrementalAlterConfigsResponse, 1)
    assert [x["error_code"] for x in r["responses"]] == [0], r


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic("plain", 1, 1), NewTopic("over", 1, 1, config=OVERRIDES)],
                             request_timeout=30)
    for f in fs.values():
        f.result(timeout=30)


def entry(c: dict) -> tuple:
    return (c["value"], c["config_source"], c["config_type"], c["read_only"],
            [(s["name"], s["value"], s["source"]) for s in c["synonyms"]])


def expect(got: dict, recorded: dict, what: str) -> None:
    for name, want in recorded.items():
        if name in STARTUP:
            continue
        want = DIFFERENT.get(name, want)
        if want is None:
            continue
        assert name in got, f"{what}: {name} missing"
        assert entry(got[name]) == want, f"{what}: {name}"


@pytest.fixture
def described(broker_factory):
    broker = broker_factory(cores=1)
    create_topics(broker.bootstrap)
    return broker


def test_a_topic_lists_kafka_4_4s_configs_with_its_defaults_types_and_sources(described):
    got = describe(described.bootstrap, TOPIC, "plain")
    assert sorted(got) == sorted(PLAIN)
    expect(got, PLAIN, "plain")
    assert all(not c["is_sensitive"] for c in got.values())
    assert all(isinstance(c["documentation"], str) and len(c["documentation"]) > 20 for c in got.values())


def test_overrides_are_topic_config_followed_by_the_broker_levels(described):
    got = describe(described.bootstrap, TOPIC, "over", docs=False)
    expect(got, OVER, "over")
    # Only the overrides are TOPIC_CONFIG (what kafka-configs --describe lists).
    assert sorted(n for n, c in got.items() if c["config_source"] == 1) == sorted(OVERRIDES)


def test_documentation_and_synonyms_only_when_asked(described):
    for version in (3, 4):
        got = describe(described.bootstrap, TOPIC, "over", synonyms=False, docs=False, version=version)
        assert {c["documentation"] for c in got.values()} == {None}, version
        assert {len(c["synonyms"]) for c in got.values()} == {0}, version
        assert got["retention.ms"]["config_source"] == 1
    got = describe(described.bootstrap, BROKER_RESOURCE, "0", synonyms=False, docs=False)
    assert {c["documentation"] for c in got.values()} == {None}
    got = describe(described.bootstrap, TOPIC, "plain", keys=["retention.ms", "no.such.config"])
    assert list(got) == ["retention.ms"]
    assert entry(got["retention.ms"]) == PLAIN["retention.ms"]


def test_the_broker_lists_kafkas_configs_for_what_it_has(described):
    got = describe(described.bootstrap, BROKER_RESOURCE, "0")
    expect(got, BROKER, "broker 0")
    # Every config shardlog lists is one Kafka 4.4 lists with the same type.
    assert set(got) - set(BROKER) == set(), sorted(set(got) - set(BROKER))
    assert all(isinstance(c["documentation"], str) for c in got.values())
    port = described.bootstrap.rsplit(":", 1)[1]
    # Flags the test broker is started with are STATIC_BROKER_CONFIG, with shardlog's
    # default after them; flags it leaves alone are DEFAULT_CONFIG.
    assert entry(got["listeners"]) == (f"PLAINTEXT://127.0.0.1:{port}", 4, 7, True,
                                       [("listeners", f"PLAINTEXT://127.0.0.1:{port}", 4),
                                        ("listeners", "PLAINTEXT://127.0.0.1:9092", 5)])
    assert entry(got["log.dirs"])[:4] == (str(described.data_dir), 4, 7, True)
    assert entry(got["node.id"]) == ("0", 5, 3, True, [("node.id", "0", 5)])
    assert entry(got["broker.id"]) == ("0", 5, 3, True, [("broker.id", "0", 5)])
    assert entry(got["advertised.listeners"]) == (None, 5, 7, True, [])


def test_every_level_is_listed_in_kafkas_order(broker_factory):
    """Recorded with STATIC_FLAGS in server.properties, then CLUSTER_DEFAULT and BROKER_0
    set with kafka-configs."""
    broker = broker_factory(*STATIC_FLAGS, cores=1)
    create_topics(broker.bootstrap)
    alter(broker.bootstrap, BROKER_RESOURCE, "", CLUSTER_DEFAULT)
    alter(broker.bootstrap, BROKER_RESOURCE, "0", BROKER_0)
    expect(describe(broker.bootstrap, TOPIC, "plain", keys=list(LEVELS_TOPIC)), LEVELS_TOPIC, "plain")
    expect(describe(broker.bootstrap, TOPIC, "over", keys=list(LEVELS_OVER)), LEVELS_OVER, "over")
    expect(describe(broker.bootstrap, BROKER_RESOURCE, "0", keys=list(LEVELS_BROKER)), LEVELS_BROKER, "broker 0")
    got = describe(broker.bootstrap, BROKER_RESOURCE, "")
    expect(got, {k: v for k, v in LEVELS_DEFAULT.items() if k != "min.insync.replicas"}, "cluster default")
    assert sorted(got) == sorted(CLUSTER_DEFAULT)
