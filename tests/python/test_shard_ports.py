"""`--shard-ports`: each shard advertised as a broker node of its own, on a port only
it listens on, leading the partitions it owns and coordinating its groups.

Checked with real clients (confluent-kafka / librdkafka, kafka-python) against the
binary: the nodes and ports Metadata gives, that each shard's port is served by that
shard alone, that produce and consume through the nodes lose nothing, that a client's
requests for a partition reach its owner's shard (per-shard request counters), that
the group coordinator is the group's shard, that per-node listings (ListGroups) are not
repeated by every node, and the start-up refusals.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewPartitions, NewTopic, ResourceType

from helpers import START_TIMEOUT_S, free_port, listening_sockets, raw_api_versions, shardlog_bin
from test_metrics import scrape, total

TOPIC = "sharded"
ROUNDS = 100
RECORDS = 4 * ROUNDS


def java_hash(s: str) -> int:
    """Java's `String.hashCode` of an ASCII string, as a signed 32-bit int."""
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_each_shard_is_a_node_that_leads_its_partitions(broker_factory):
    broker = broker_factory("--shard-ports", "0", "--node-id", "3")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=4, replication_factor=1)])[TOPIC].result(30)
    md = admin.list_topics(timeout=10)
    nodes = {b.id: (b.host, b.port) for b in md.brokers.values()}
    assert sorted(nodes) == [3, 4]
    ports = [nodes[3][1], nodes[4][1]]
    assert [nodes[3][0], nodes[4][0]] == ["127.0.0.1", "127.0.0.1"]
    assert len(set(ports)) == 2 and broker.port not in ports
    assert md.controller_id == 3
    # Only one socket listens on a shard's port (its shard); both on the shared one.
    assert [listening_sockets(p) for p in ports] == [1, 1]
    assert listening_sockets(broker.port) == 2
    for port in ports:
        assert 0 in raw_api_versions(f"127.0.0.1:{port}")
    # Placement alternates the shards on a fresh broker: partitions 0 and 2 on shard 0.
    partitions = md.topics[TOPIC].partitions
    assert {p: (m.leader, m.replicas, m.isrs) for p, m in partitions.items()} == {
        0: (3, [3], [3]), 1: (4, [4], [4]), 2: (3, [3], [3]), 3: (4, [4], [4])}

    # A producer sends each partition's batches to its leader's port: each round of
    # four records (one per partition), flushed, is one Produce request per node.
    before = scrape(broker)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for r in range(ROUNDS):
        for q in range(4):
            p.produce(TOPIC, value=b"v%d" % (4 * r + q), partition=q)
        assert p.flush(30) == 0
    after = scrape(broker)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    produced = [delta("shardlog_requests_total", shard=str(s), api="Produce") for s in (0, 1)]
    # This librdkafka sends a Produce request per partition: two per node per round.
    assert produced == [2 * ROUNDS, 2 * ROUNDS]
    # Each shard appended its own partitions: no Produce crossed between the shards
    # (a single connection would send one message across per request).
    crossed = delta("shardlog_mesh_messages_sent_total")
    assert crossed < ROUNDS / 10, (crossed, produced)

    # A group reads everything back through the nodes, each record once.
    group = "sharded-group"
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([TOPIC])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < RECORDS and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.partition(), m.value()))
    c.commit(asynchronous=False)
    c.close()
    expected_counts = {q: ROUNDS for q in range(4)}
    assert sorted(v for _, v in got) == sorted(b"v%d" % i for i in range(RECORDS))
    assert {q: sum(1 for pp, _ in got if pp == q) for q in range(4)} == expected_counts

    # The coordinator is the node of the group's shard (Kafka's offsets partition of
    # the group id, modulo the shard count), and the group is listed once, not once
    # per node.
    described = admin.describe_consumer_groups([group])[group].result(30)
    offsets_partition = abs(java_hash(group)) % 50
    assert described.coordinator.id == 3 + offsets_partition % 2
    listed = admin.list_consumer_groups().result(30).valid
    assert [g.group_id for g in listed].count(group) == 1
    committed = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group}).committed(
        [TopicPartition(TOPIC, q) for q in range(4)], timeout=30)
    assert {tp.partition: tp.offset for tp in committed} == expected_counts

    # Broker configs answer for either node's id (the client sends each to its node;
    # ids of no node are refused: `shard_nodes::names_a_node`'s unit test). Each
    # node's id and listener are its own (the port Metadata gives it), as its static
    # configs (advertised.listeners is unset, so null); the rest is shared.
    described = {}
    for node in ("3", "4"):
        res = admin.describe_configs([ConfigResource(ResourceType.BROKER, node)])
        described[node] = list(res.values())[0].result(30)
    own = {n: {k: (c[k].value, c[k].source) for k in ("node.id", "broker.id", "listeners", "advertised.listeners")}
           for n, c in described.items()}
    static = ConfigSource.STATIC_BROKER_CONFIG.value
    assert own["3"] == {"node.id": ("3", static), "broker.id": ("3", static),
                        "listeners": (f"PLAINTEXT://127.0.0.1:{ports[0]}", static),
                        "advertised.listeners": (None, ConfigSource.DEFAULT_CONFIG.value)}
    assert own["4"] == {"node.id": ("4", static), "broker.id": ("4", static),
                        "listeners": (f"PLAINTEXT://127.0.0.1:{ports[1]}", static),
                        "advertised.listeners": (None, ConfigSource.DEFAULT_CONFIG.value)}
    assert described["3"]["log.retention.ms"].value == described["4"]["log.retention.ms"].value

    # A manual assignment places each partition on its node's shard; a node id that
    # is no node is Kafka's INVALID_REPLICA_ASSIGNMENT.
    admin.create_topics([NewTopic("placed", num_partitions=3, replication_factor=-1, replica_assignment=[[4], [4], [3]])])["placed"].result(30)
    placed = admin.list_topics("placed", timeout=10).topics["placed"].partitions
    assert {p: m.leader for p, m in placed.items()} == {0: 4, 1: 4, 2: 3}
    # Partitions added with an assignment go to its node's shard too; one list per new
    # partition is required.
    admin.create_partitions([NewPartitions("placed", 4, replica_assignment=[[3]])])["placed"].result(30)
    placed = admin.list_topics("placed", timeout=10).topics["placed"].partitions
    assert {p: m.leader for p, m in placed.items()} == {0: 4, 1: 4, 2: 3, 3: 3}
    with pytest.raises(KafkaException) as refused_count:
        admin.create_partitions([NewPartitions("placed", 6, replica_assignment=[[4]])])["placed"].result(30)
    assert refused_count.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
    with pytest.raises(KafkaException) as refused_assignment:
        admin.create_topics([NewTopic("nowhere", num_partitions=1, replication_factor=-1, replica_assignment=[[9]])])["nowhere"].result(30)
    assert refused_assignment.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT


def test_kafka_python_follows_the_nodes(broker_factory):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTopicPartition
    broker = broker_factory("--shard-ports", "0")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("kp", num_partitions=2, replication_factor=1)])["kp"].result(30)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    for i in range(400):
        producer.send("kp", value=b"%d" % i, partition=i % 2)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    consumer.assign([KTopicPartition("kp", 0), KTopicPartition("kp", 1)])
    values = sorted(int(m.value) for m in consumer)
    nodes = sorted((b.node_id, b.port) for b in consumer._client.cluster.brokers())
    consumer.close()
    assert values == list(range(400))
    assert [n for n, _ in nodes] == [0, 1] and broker.port not in [p for _, p in nodes]


def free_port_pair() -> int:
    """A port P with P and P+1 both free (probed by binding both)."""
    for _ in range(50):
        p = free_port()
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", p))
                b.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    raise AssertionError("no two consecutive free ports")


def test_a_fixed_base_port_gives_shard_i_port_base_plus_i(broker_factory):
    base = free_port_pair()
    broker = broker_factory("--shard-ports", str(base))
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert {b.id: b.port for b in md.brokers.values()} == {0: base, 1: base + 1}
    assert [listening_sockets(base), listening_sockets(base + 1)] == [1, 1]


def refused(tmp_path: Path, *args: str) -> str:
    """Starts the broker with `args`, which must make it exit with a failure; its log."""
    log = tmp_path / "refused.log"
    with open(log, "wb") as out:
        proc = subprocess.run(
            [str(shardlog_bin()), "--data-dir", str(tmp_path / "data"), "--cores", "2",
             "--metrics-listen", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, timeout=START_TIMEOUT_S)
    assert proc.returncode != 0
    return log.read_text()


def test_refused_configurations(tmp_path):
    text = refused(tmp_path, "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                   "--shard-ports", "0")
    assert "--shard-ports needs exactly one listener, and 2 are given" in text
    text = refused(tmp_path, "--listen", "127.0.0.1:0", "--shard-ports", "65535")
    assert "--shard-ports: 65535 + 2 shards passes port 65535" in text
    text = refused(tmp_path, "--listen", "127.0.0.1:0", "--advertised-listener", "kafka.example:19092",
                   "--shard-ports", "0")
    assert re.search(r"--shard-ports: the listener advertises port 19092 but binds \d+: shard ports", text), text
    text = refused(tmp_path, "--listen", "127.0.0.1:0", "--node-id=-1", "--shard-ports", "0")
    assert "--shard-ports: --node-id -1 is negative" in text
    port = free_port()
    text = refused(tmp_path, "--listen", f"127.0.0.1:{port}", "--shard-ports", str(port - 1))
    assert re.search(rf"--shard-ports: port {port} is also --listen's or --metrics-listen's", text), text


def test_a_shard_port_another_process_shares_with_so_reuseport_is_refused(tmp_path):
    base = free_port_pair()
    with socket.socket() as theirs:
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        theirs.bind(("127.0.0.1", base + 1))
        theirs.listen()
        text = refused(tmp_path, "--listen", "127.0.0.1:0", "--shard-ports", str(base))
    assert (f"cannot listen on 127.0.0.1:{base + 1}: pid {os.getpid()} (" in text
            and f"already listens on 127.0.0.1:{base + 1} with SO_REUSEPORT" in text), text


def txn_node(transactional_id: str, first_node: int) -> int:
    """The node coordinating `transactional_id` on a 2-shard broker: the shard of its
    `__transaction_state` partition (`transactions::coordinator_shard`)."""
    return first_node + (abs(java_hash(transactional_id)) % 50) % 2


def test_per_node_listings_and_transaction_coordinators_through_kafka_python(broker_factory):
    # kafka-python's admin sends ListTransactions and DescribeLogDirs to every node and
    # keeps the answers apart, and finds each transactional id's coordinator with
    # FindCoordinator (key type 1): each node answers for its own shard only.
    # DescribeCluster lists both nodes on ports of their own, controller node 3.
    from kafka.admin import KafkaAdminClient
    broker = broker_factory("--shard-ports", "0", "--node-id", "3")
    creator = AdminClient({"bootstrap.servers": broker.bootstrap})
    creator.create_topics([NewTopic("listed", num_partitions=4, replication_factor=1)])["listed"].result(30)
    ids = [f"txn-{i}" for i in range(6)]
    expected_nodes = {t: txn_node(t, 3) for t in ids}
    assert set(expected_nodes.values()) == {3, 4}
    producers = []
    for t in ids:
        p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": t})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce("listed", b"open", partition=0)
        p.flush(30)
        producers.append(p)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        cluster = admin.describe_cluster()
        nodes = {b["broker_id"]: b["port"] for b in cluster["brokers"]}
        assert sorted(nodes) == [3, 4] and cluster["controller_id"] == 3
        assert len({*nodes.values(), broker.port}) == 3
        listed = admin.list_transactions()
        got = {node: sorted(t.transactional_id for t in listing) for node, listing in listed.items()}
        assert got == {n: sorted(t for t in ids if expected_nodes[t] == n) for n in (3, 4)}
        described = admin.describe_transactions(ids)
        assert {t: d.coordinator_id for t, d in described.items()} == expected_nodes
        assert {d.state.value for d in described.values()} == {"Ongoing"}
        dirs = admin.describe_log_dirs(["listed"])
        on_node = {}
        for entry in dirs:
            parts = [p["partition_index"] for d in entry["log_dirs"] for topic in d["topics"]
                     if topic["name"] == "listed" for p in topic["partitions"]]
            on_node[entry["broker"]] = sorted(parts)
        assert on_node == {3: [0, 2], 4: [1, 3]}
    finally:
        admin.close()
        for p in producers:
            p.abort_transaction(30)
