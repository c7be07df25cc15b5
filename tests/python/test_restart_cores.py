"""A broker restarted with another `--cores` spreads its topics' partitions over the new
shards (they used to stay where they were placed: a topic created under `--cores 1` kept
every partition on shard 0 after a restart with `--cores 2`), and every record stays
readable after each move."""
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from test_metrics import scrape

TOPIC = "spread"
PER_PARTITION = 100


def partitions_per_shard(broker) -> dict:
    s = scrape(broker)
    return {dict(ls)["shard"]: int(v) for (n, ls), v in s.items() if n == "shardlog_partitions"}


def read_all(bootstrap: str) -> dict:
    """Every value of each partition, read from offset 0 to the high watermark."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(4)])
        got = {p: [] for p in range(4)}
        for _ in range(600):
            if sum(len(v) for v in got.values()) == 4 * PER_PARTITION:
                break
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got[m.partition()].append(m.value())
        return got
    finally:
        c.close()


def test_a_restart_with_more_or_fewer_cores_places_the_partitions_again(broker_factory):
    broker = broker_factory(cores=1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=4, replication_factor=1)])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(PER_PARTITION):
        for part in range(4):
            p.produce(TOPIC, f"{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0
    want = {part: [f"{part}-{i}".encode() for i in range(PER_PARTITION)] for part in range(4)}
    assert partitions_per_shard(broker) == {"0": 4}

    for cores, placed in [(2, {"0": 2, "1": 2}), (1, {"0": 4}), (2, {"0": 2, "1": 2})]:
        broker.stop()
        broker.cores = cores
        broker.start()
        assert partitions_per_shard(broker) == placed, cores
        assert read_all(broker.bootstrap) == want, cores
