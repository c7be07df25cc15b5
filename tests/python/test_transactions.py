"""Transactions (KIP-98) with librdkafka (confluent-kafka): commit and abort as
read_committed and read_uncommitted consumers see them, a consume-transform-produce loop
with send_offsets_to_transaction, a fenced zombie producer, and a transaction the broker
aborts after a kill -9 left it open, and transactions whose markers a kill -9 cut off."""

from __future__ import annotations

import time

from test_scenario import confluent_create_topic


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, group: str) -> list:
    """Every value of `topic` a consumer with `isolation` reads, sorted."""
    from confluent_kafka import Consumer

    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "isolation.level": isolation,
        "enable.partition.eof": True,
        "enable.auto.commit": False,
    })
    c.subscribe([topic])
    out, eofs, deadline = [], set(), time.time() + 30
    while len(eofs) < partitions and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eofs.add(m.partition())
            continue
        out.append(m.value().decode())
    c.close()
    assert len(eofs) == partitions, f"reached the end of {sorted(eofs)} only"
    return sorted(out)


def txn_producer(bootstrap: str, transactional_id: str, **extra):
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(15)
    return p


def test_committed_and_aborted_transactions_as_each_isolation_level_sees_them(broker_factory):
    broker = broker_factory()
    confluent_create_topic(broker.bootstrap, "t", 3)
    p = txn_producer(broker.bootstrap, "tx-visibility")
    p.begin_transaction()
    for i in range(5):
        p.produce("t", key=str(i), value=f"committed-{i}")
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(4):
        p.produce("t", key=str(i), value=f"aborted-{i}")
    p.flush()
    p.abort_transaction(15)
    p.begin_transaction()
    for i in range(3):
        p.produce("t", key=str(i), value=f"second-{i}")
    p.commit_transaction(15)
    committed = [f"committed-{i}" for i in range(5)] + [f"second-{i}" for i in range(3)]
    aborted = [f"aborted-{i}" for i in range(4)]
    assert read_all(broker.bootstrap, "t", 3, "read_committed", "rc") == sorted(committed)
    assert read_all(broker.bootstrap, "t", 3, "read_uncommitted", "ru") == sorted(committed + aborted)
    # The metrics endpoint counts them (markers are written after EndTxn answers: the
    # read_committed consumer above already waited for the last commit's).
    _, _, text = broker.http_get("/metrics")
    lines = set(text.splitlines())
    for line in ['shardlog_transactions_completed_total{result="commit"} 2',
                 'shardlog_transactions_completed_total{result="abort"} 1',
                 "shardlog_transactions_timed_out_total 0"]:
        assert line in lines, f"{line!r} not in /metrics"
    # The same after a restart (the aborted-transaction index and producer state reload).
    broker.restart()
    assert read_all(broker.bootstrap, "t", 3, "read_committed", "rc2") == sorted(committed)


def test_consume_transform_produce_commits_offsets_with_the_output(broker_factory):
    from confluent_kafka import Consumer, Producer, TopicPartition

    broker = broker_factory()
    bs = broker.bootstrap
    confluent_create_topic(bs, "in", 2)
    confluent_create_topic(bs, "out", 2)
    plain = Producer({"bootstrap.servers": bs})
    for i in range(100):
        plain.produce("in", key=str(i), value=str(i))
    plain.flush()
    c = Consumer({
        "bootstrap.servers": bs,
        "group.id": "ctp",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    c.subscribe(["in"])
    p = txn_producer(bs, "ctp-1")
    done, aborted, deadline = 0, 0, time.time() + 60
    while done < 100 and time.time() < deadline:
        msgs = c.consume(20, 1.0)
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce("out", key=m.key(), value=b"x" + m.value())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 15)
        if aborted < 2:
            # Abort: neither the output nor the offsets count; start again from the
            # committed offsets.
            aborted += 1
            p.abort_transaction(15)
            for tp in c.committed(c.assignment(), 15):
                c.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
            continue
        p.commit_transaction(15)
        done += len(msgs)
    assert done == 100
    committed = c.committed([TopicPartition("in", 0), TopicPartition("in", 1)], 15)
    c.close()
    assert sum(t.offset for t in committed) == 100
    out = read_all(bs, "out", 2, "read_committed", "check")
    assert out == sorted(f"x{i}" for i in range(100))


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker_factory):
    from confluent_kafka import KafkaException

    broker = broker_factory()
    confluent_create_topic(broker.bootstrap, "z", 1)
    zombie = txn_producer(broker.bootstrap, "tx-zombie")
    zombie.begin_transaction()
    zombie.produce("z", value="zombie")
    zombie.flush()
    successor = txn_producer(broker.bootstrap, "tx-zombie")  # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce("z", value="successor")
    successor.commit_transaction(15)
    fenced = None
    try:
        zombie.produce("z", value="zombie-2")
        zombie.commit_transaction(15)
    except KafkaException as e:
        fenced = e.args[0]
    assert fenced is not None, "the zombie committed"
    assert fenced.fatal() or fenced.txn_requires_abort(), fenced
    assert read_all(broker.bootstrap, "z", 1, "read_committed", "zc") == ["successor"]
    assert read_all(broker.bootstrap, "z", 1, "read_uncommitted", "zu") == ["successor", "zombie"]


def test_a_transaction_left_open_by_a_kill9_is_aborted_after_its_timeout(broker_factory):
    from confluent_kafka import Producer

    broker = broker_factory("--transaction-abort-timed-out-transaction-cleanup-interval-ms", "200")
    confluent_create_topic(broker.bootstrap, "k", 2)
    p = txn_producer(broker.bootstrap, "tx-open", **{"transaction.timeout.ms": 3000})
    p.begin_transaction()
    for i in range(6):
        p.produce("k", key=str(i), value=f"open-{i}")
    p.flush()
    broker.kill9()
    broker.start()
    del p  # the producer is gone with its transaction
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(2):
        plain.produce("k", partition=i, value=f"after-{i}")
    plain.flush()
    # Until the coordinator aborts it, the open transaction holds read_committed back;
    # then everything after it is readable and nothing of it.
    deadline = time.time() + 30
    seen = []
    while time.time() < deadline:
        seen = read_all(broker.bootstrap, "k", 2, "read_committed", f"kc-{time.time()}")
        if seen:
            break
        time.sleep(0.5)
    assert seen == ["after-0", "after-1"]
    everything = read_all(broker.bootstrap, "k", 2, "read_uncommitted", "ku")
    assert everything == sorted(["after-0", "after-1"] + [f"open-{i}" for i in range(6)])


def test_consume_transform_produce_across_a_kill9_has_no_duplicates_and_no_losses(broker_factory):
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    broker = broker_factory()
    bs = broker.bootstrap
    confluent_create_topic(bs, "in9", 2)
    confluent_create_topic(bs, "out9", 2)
    total = 300
    plain = Producer({"bootstrap.servers": bs})
    for i in range(total):
        plain.produce("in9", key=str(i), value=str(i))
    plain.flush()
    c = Consumer({
        "bootstrap.servers": bs,
        "group.id": "ctp9",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    c.subscribe(["in9"])

    def rewind():
        for tp in c.committed(c.assignment(), 30):
            c.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))

    # librdkafka 2.16 "re-bootstraps" when its only broker goes down, and its producer
    # then waits forever on the decommissioned broker handle (seen with debug=broker:
    # "Handle is terminating ... 2 refcnts"): a client-side hang, not the broker's.
    conf = {"transaction.timeout.ms": 10000, "metadata.recovery.strategy": "none"}
    p = txn_producer(bs, "ctp9-1", **conf)
    done, killed, deadline = 0, False, time.time() + 120
    while done < total and time.time() < deadline:
        msgs = [m for m in c.consume(25, 1.0) if not m.error()]
        if not msgs:
            continue
        try:
            p.begin_transaction()
            for m in msgs:
                p.produce("out9", key=m.key(), value=b"x" + m.value())
            p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
            if done >= 100 and not killed:
                # The broker dies with this transaction open; it comes back at once.
                killed = True
                broker.kill9()
                broker.start()
            p.commit_transaction(30)
            done += len(msgs)
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                p.abort_transaction(30)
            else:
                p = txn_producer(bs, "ctp9-1", **conf)
            rewind()
            continue
    assert killed and done == total
    committed = c.committed([TopicPartition("in9", 0), TopicPartition("in9", 1)], 30)
    c.close()
    assert sum(t.offset for t in committed) == total
    out = read_all(bs, "out9", 2, "read_committed", "check9")
    assert out == sorted(f"x{i}" for i in range(total))


def test_transactions_ended_but_not_marked_before_a_kill9_complete_after_the_restart(broker_factory):
    """EndTxn answers once PrepareCommit / PrepareAbort is durable; the markers follow.
    A broker killed in between must send them after the restart, from the transaction
    log alone: the commit (records and its consumer offsets) becomes visible, the abort
    never does."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    # Markers held back for 10 minutes: the kill lands between the Prepare* record and
    # the markers.
    broker = broker_factory("--debug-txn-marker-delay-ms", "600000")
    bs = broker.bootstrap
    confluent_create_topic(bs, "pm", 3)
    confluent_create_topic(bs, "pm-in", 1)
    plain = Producer({"bootstrap.servers": bs})
    for i in range(5):
        plain.produce("pm-in", value=f"in-{i}")
    plain.flush()
    c = Consumer({"bootstrap.servers": bs, "group.id": "pm-g", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("pm-in", 0)])
    got, deadline = [], time.time() + 30
    while len(got) < 5 and time.time() < deadline:
        got += [m for m in c.consume(5, 1.0) if not m.error()]
    assert len(got) == 5

    committer = txn_producer(bs, "pm-commit")
    committer.begin_transaction()
    for i in range(9):
        committer.produce("pm", partition=i % 3, value=f"commit-{i}")
    committer.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
    committer.commit_transaction(30)
    aborter = txn_producer(bs, "pm-abort")
    aborter.begin_transaction()
    for i in range(6):
        aborter.produce("pm", partition=i % 3, value=f"abort-{i}")
    aborter.flush()
    aborter.abort_transaction(30)
    c.close()

    broker.kill9()
    broker.extra_args = []
    broker.start()
    committed = [f"commit-{i}" for i in range(9)]
    seen, deadline = [], time.time() + 30
    while seen != sorted(committed) and time.time() < deadline:
        seen = read_all(bs, "pm", 3, "read_committed", f"pm-rc-{time.time()}")
        time.sleep(0.2)
    assert seen == sorted(committed)
    assert read_all(bs, "pm", 3, "read_uncommitted", "pm-ru") == sorted(
        committed + [f"abort-{i}" for i in range(6)])
    check = Consumer({"bootstrap.servers": bs, "group.id": "pm-g"})
    offsets = check.committed([TopicPartition("pm-in", 0)], 30)
    check.close()
    assert [t.offset for t in offsets] == [5]
