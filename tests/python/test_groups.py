"""Consumer groups with real clients (issue 3): librdkafka (confluent-kafka) and
kafka-python groups with manual commits, static membership, cooperative-sticky
rebalancing, committed offsets across restart / kill -9, and KIP-848
(`group.protocol=consumer`).

Records carry known values (group_helpers.rec_value): every consumed record is checked
against the value its (partition, offset) must hold. Every wait is bounded.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Dict, List, Optional, Set


from group_helpers import (FENCED_INSTANCE_ID, NONE, RawConn, confluent_committed, confluent_high_watermarks,
                           create_topic, describe_group_admin, produce_known, rec_key, rec_value, wait_until)

FAST = ("--group-initial-rebalance-delay-ms", "0")
PARTS = 6


# --------------------------------------------------------------------------------------
# bookkeeping shared by every member of a group
# --------------------------------------------------------------------------------------


class Tracker:
    """Everything the members of one group processed and committed.

    Per partition: every processed offset (duplicates included), the highest offset
    committed successfully by any member, and the "uncommitted window" each member had
    when it lost the partition (processed past its last successful commit). A record is
    processed twice only if a member lost its partition with it inside such a window, so
    duplicates(p) <= sum of windows(p)."""

    def __init__(self, topic: str, partitions: int = PARTS):
        self.topic = topic
        self.parts = partitions
        self.lock = threading.Lock()
        self.processed: Dict[int, List[int]] = {p: [] for p in range(partitions)}
        self.distinct: Dict[int, Set[int]] = {p: set() for p in range(partitions)}
        self.committed: Dict[int, int] = {p: -1 for p in range(partitions)}
        self.windows: Dict[str, Counter] = {}
        self.errors: List[str] = []

    def process(self, member: str, p: int, offset: int, key: Optional[bytes], value: Optional[bytes]) -> None:
        if value != rec_value(self.topic, p, offset) or key != rec_key(p, offset):
            self.error(f"{member}: p{p}@{offset} has key={key!r:.40} value={value!r:.60}")
        with self.lock:
            self.processed[p].append(offset)
            self.distinct[p].add(offset)

    def committed_ok(self, p: int, offset: int) -> None:
        with self.lock:
            self.committed[p] = max(self.committed[p], offset)

    def lost(self, member: str, p: int, window: int) -> None:
        if window > 0:
            with self.lock:
                self.windows.setdefault(member, Counter())[p] += window

    def error(self, msg: str) -> None:
        with self.lock:
            self.errors.append(msg)

    def n_distinct(self) -> int:
        with self.lock:
            return sum(len(s) for s in self.distinct.values())

    def duplicates(self) -> Dict[int, int]:
        with self.lock:
            return {p: len(self.processed[p]) - len(self.distinct[p]) for p in range(self.parts)}

    def window_total(self, p: int) -> int:
        return sum(w[p] for w in self.windows.values())

    def check_complete(self, per_partition: int) -> None:
        assert not self.errors, f"{len(self.errors)} errors, first: {self.errors[:10]}"
        for p in range(self.parts):
            missing = set(range(per_partition)) - self.distinct[p]
            assert not missing, f"p{p}: {len(missing)} records never processed, e.g. {sorted(missing)[:10]}"
            extra = self.distinct[p] - set(range(per_partition))
            assert not extra, f"p{p}: processed offsets beyond the log: {sorted(extra)[:10]}"
        dups = self.duplicates()
        over = {p: (dups[p], self.window_total(p)) for p in range(self.parts) if dups[p] > self.window_total(p)}
        assert not over, (f"duplicates exceed the uncommitted window {{p: (dups, window)}}: {over}; "
                          f"windows per member: {self.windows}")


class Member:
    """One group member consuming on its own thread: process a batch, then commit it
    synchronously; on revocation account the uncommitted window. `stop_abruptly()`
    makes it process one more batch and close without committing it."""

    def __init__(self, name: str, tracker: Tracker):
        self.name = name
        self.tracker = tracker
        self.lock = threading.Lock()
        self.owned: Set[int] = set()
        self.proc_hi: Dict[int, int] = {}    # next offset after the highest processed
        self.commit_hi: Dict[int, int] = {}  # last committed (or first processed) offset
        self.assigned_events: List[Set[int]] = []
        self.revoked_events: List[Set[int]] = []
        self.abrupt = threading.Event()
        self.done = threading.Event()
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "Member":
        self.thread.start()
        return self

    def stop_abruptly(self) -> None:
        self.abrupt.set()

    def stop(self) -> None:
        self.done.set()

    def join(self, timeout: float = 60.0) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.name} did not finish within {timeout}s"

    def owned_now(self) -> Set[int]:
        with self.lock:
            return set(self.owned)

    # -- bookkeeping -------------------------------------------------------------------

    def _assigned(self, parts: Set[int]) -> None:
        with self.lock:
            self.owned |= parts
            self.assigned_events.append(set(parts))
            for p in parts:
                self.proc_hi.pop(p, None)
                self.commit_hi.pop(p, None)

    def _revoked(self, parts: Set[int]) -> None:
        with self.lock:
            self.revoked_events.append(set(parts))
            for p in parts:
                self.owned.discard(p)
                if p in self.proc_hi:
                    self.tracker.lost(self.name, p, self.proc_hi.pop(p) - self.commit_hi.pop(p))

    def _processed(self, p: int, offset: int, key, value) -> None:
        self.tracker.process(self.name, p, offset, key, value)
        with self.lock:
            if p not in self.proc_hi:
                self.commit_hi[p] = offset
            self.proc_hi[p] = max(self.proc_hi.get(p, 0), offset + 1)

    def _commit_positions(self, parts) -> Dict[int, int]:
        with self.lock:
            return {p: self.proc_hi[p] for p in parts if p in self.proc_hi}

    def _committed(self, p: int, offset: int) -> None:
        with self.lock:
            if p in self.commit_hi:
                self.commit_hi[p] = max(self.commit_hi[p], offset)
        self.tracker.committed_ok(p, offset)

    def _run(self):
        try:
            self.run()
        except Exception as e:  # noqa: BLE001
            self.tracker.error(f"{self.name} crashed: {e!r}")
        finally:
            self.finished.set()

    def run(self):
        raise NotImplementedError


class ConfluentMember(Member):
    def __init__(self, name: str, tracker: Tracker, bootstrap: str, group: str, conf: Optional[dict] = None):
        super().__init__(name, tracker)
        self.conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
            "max.poll.interval.ms": 60000,
            "topic.metadata.refresh.interval.ms": 2000,
        }
        self.conf.update(conf or {})
        self.consumer = None
        self.member_ids: List[str] = []

    def _commit(self, c, parts) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        pos = self._commit_positions(parts)
        if not pos:
            return
        try:
            res = c.commit(offsets=[TopicPartition(self.tracker.topic, p, o) for p, o in pos.items()],
                           asynchronous=False)
        except KafkaException as e:
            # e.g. REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION while a rebalance is under way:
            # the records stay in this member's uncommitted window
            self.commit_failures.append(str(e))
            return
        for tp in res or []:
            if tp.error is None:
                self._committed(tp.partition, tp.offset)
            else:
                self.commit_failures.append(str(tp.error))

    def run(self):
        from confluent_kafka import Consumer, KafkaError

        self.commit_failures: List[str] = []
        c = Consumer(self.conf)
        self.consumer = c

        def on_assign(consumer, tps):
            self._assigned({tp.partition for tp in tps})

        def on_revoke(consumer, tps):
            parts = {tp.partition for tp in tps}
            if not self.abrupt.is_set():
                self._commit(consumer, parts)
            self._revoked(parts)

        def on_lost(consumer, tps):
            self._revoked({tp.partition for tp in tps})

        c.subscribe([self.tracker.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        abrupt_deadline = None
        try:
            while not self.done.is_set():
                # read the flag once (see KafkaPythonMember.run)
                abrupt = self.abrupt.is_set()
                if abrupt and abrupt_deadline is None:
                    abrupt_deadline = time.monotonic() + 15
                msgs = c.consume(num_messages=500, timeout=0.2)
                try:
                    mid = c.memberid()
                    if mid and (not self.member_ids or self.member_ids[-1] != mid):
                        self.member_ids.append(mid)
                except RuntimeError:
                    pass
                batch_parts = set()
                for m in msgs:
                    if m.error() is not None:
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            self.tracker.error(f"{self.name}: consume error {m.error()}")
                        continue
                    self._processed(m.partition(), m.offset(), m.key(), m.value())
                    batch_parts.add(m.partition())
                if abrupt and (batch_parts or time.monotonic() > abrupt_deadline):
                    return  # processed (or gave up waiting for) one more batch, never committed
                self._commit(c, batch_parts)
            # orderly end: commit what was processed
            self._commit(c, self.owned_now())
        finally:
            c.close()  # the revoke callback runs here (no commit when abrupt)
            self._revoked(self.owned_now())


class KafkaPythonMember(Member):
    def __init__(self, name: str, tracker: Tracker, bootstrap: str, group: str):
        super().__init__(name, tracker)
        self.bootstrap = bootstrap
        self.group = group
        self.commit_failures: List[str] = []

    def run(self):
        from kafka import KafkaConsumer, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        member = self

        class Listener(ConsumerRebalanceListener):
            # runs on the client's IO loop: it must not block (no commit here); every
            # batch is committed synchronously before the next poll anyway
            def on_partitions_revoked(self, revoked):
                member._revoked({tp.partition for tp in revoked})

            def on_partitions_assigned(self, assigned):
                member._assigned({tp.partition for tp in assigned})

            def on_partitions_lost(self, lost):
                member._revoked({tp.partition for tp in lost})

        c = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=60000,
            metadata_max_age_ms=5000,
            request_timeout_ms=30000,
        )
        # Know the topic's partitions before joining. kafka-python 3.0.12 loses a join when
        # its leader assigned without topic metadata (the metadata-change rejoin clears
        # need_rejoin when the leader re-assigns, and a poll() that times out while that
        # SyncGroup is in flight never completes the join: no assignment, no heartbeats).
        wait_until(lambda: c.partitions_for_topic(self.tracker.topic) == set(range(PARTS)), 20,
                   what=f"{self.name}: metadata for {self.tracker.topic}")
        c.subscribe([self.tracker.topic], listener=Listener())

        def commit(parts):
            pos = self._commit_positions(parts)
            if not pos:
                return
            try:
                c.commit({TopicPartition(self.tracker.topic, p): OffsetAndMetadata(o, "", -1)
                          for p, o in pos.items()})
            except KafkaError as e:
                self.commit_failures.append(repr(e))
                return
            for p, o in pos.items():
                self._committed(p, o)

        abrupt_deadline = None
        try:
            while not self.done.is_set():
                # read the flag once: the test thread may set it at any moment, and a
                # second is_set() could see it with no deadline taken yet
                abrupt = self.abrupt.is_set()
                if abrupt and abrupt_deadline is None:
                    abrupt_deadline = time.monotonic() + 15
                batch = c.poll(timeout_ms=500, max_records=500)
                batch_parts = set()
                for tp, msgs in batch.items():
                    for m in msgs:
                        self._processed(tp.partition, m.offset, m.key, m.value)
                    batch_parts.add(tp.partition)
                if abrupt and (batch_parts or time.monotonic() > abrupt_deadline):
                    return
                commit(batch_parts)
            commit(self.owned_now())
        finally:
            c.close(autocommit=False)
            self._revoked(self.owned_now())


def wait_assignment(members: List[Member], sizes: Optional[List[int]], timeout_s: float = 40.0, what: str = ""):
    """Until the members' assignments are disjoint, cover every partition (and have `sizes`)."""
    def ok():
        errors = members[0].tracker.errors
        assert not errors, f"member errors: {errors[:5]}"
        owned = [m.owned_now() for m in members]
        union = set().union(*owned)
        disjoint = sum(len(o) for o in owned) == len(union)
        good = disjoint and union == set(range(PARTS)) and (sizes is None or sorted(map(len, owned)) == sorted(sizes))
        return owned if good else None
    try:
        return wait_until(ok, timeout_s, what=f"assignment {what}")
    except AssertionError as e:
        raise AssertionError(f"{e}; owned now: {[(m.name, m.owned_now()) for m in members]}") from None


# --------------------------------------------------------------------------------------
# 1 + 2: three members, one stops mid-way, another starts; 60,000 records
# --------------------------------------------------------------------------------------

PER_PARTITION = 10_000


def run_member_churn(broker, make_member, topic: str, group: str):
    create_topic(broker.bootstrap, topic, PARTS)
    tracker = Tracker(topic)
    members = [make_member(f"{group}-m{i}", tracker) for i in range(3)]
    for m in members:
        m.start()
    try:
        wait_assignment(members, [2, 2, 2], what="of the first three members")
        # Two thirds of the records are produced first, and the victim is told to stop once
        # 20,000 have been processed, while the group is still busy. The last third is produced
        # only after that (and after the first part is flushed, so offsets stay the indexes).
        # The victim's next batch is therefore sure to hold records that it processes and never
        # commits: its own backlog, or the last third. With one producer for everything, the
        # victim had at times caught up on its partitions before the stop. No batch then came
        # within its 15 s, and it closed with nothing uncommitted.
        first = PER_PARTITION * 2 // 3
        producer = threading.Thread(target=produce_known, args=(broker.bootstrap, topic, PARTS, first), daemon=True)
        producer.start()
        wait_until(lambda: tracker.n_distinct() >= 20_000 or tracker.errors, 120, what="20,000 records processed")

        victim = members[0]
        victim.stop_abruptly()
        producer.join(120)
        assert not producer.is_alive(), "the first producer did not finish within 120s"
        producer = threading.Thread(target=produce_known,
                                    args=(broker.bootstrap, topic, PARTS, PER_PARTITION - first),
                                    kwargs={"start": first}, daemon=True)
        producer.start()
        wait_until(victim.finished.is_set, 60, what="the stopped member to close")
        victim.join()
        newcomer = make_member(f"{group}-m3", tracker).start()
        members.append(newcomer)
        producer.join(180)
        assert not producer.is_alive(), "producer did not finish within 180s"

        total = PARTS * PER_PARTITION
        wait_until(lambda: tracker.n_distinct() >= total or tracker.errors, 180,
                   what=f"all {total} records processed (have {tracker.n_distinct()})")
        wait_until(lambda: all(v == PER_PARTITION for v in tracker.committed.values()) or tracker.errors, 60,
                   what=f"every partition committed at {PER_PARTITION} ({tracker.committed})")
        # the newcomer took over: the three live members end up with 2 partitions each
        wait_assignment(members[1:], [2, 2, 2], what="of the three live members")
    finally:
        for m in members:
            m.stop()
        for m in members:
            m.join()

    tracker.check_complete(PER_PARTITION)
    victim_window = tracker.windows.get(victim.name, Counter())
    assert sum(victim_window.values()) > 0, \
        f"the stopped member left no uncommitted window (windows {tracker.windows})"
    dups = tracker.duplicates()
    # the stopped member's uncommitted records are re-processed by the next owner
    for p in range(PARTS):
        assert dups[p] <= tracker.window_total(p)
    hwm = confluent_high_watermarks(broker.bootstrap, topic, PARTS)
    assert hwm == {p: PER_PARTITION for p in range(PARTS)}, hwm
    committed = confluent_committed(broker.bootstrap, group, topic, PARTS)
    assert {p: o for p, (o, _meta) in committed.items()} == hwm, committed
    return tracker, members


def test_confluent_group_member_churn_manual_commits(broker_factory):
    broker = broker_factory(*FAST)
    run_member_churn(
        broker, lambda name, t: ConfluentMember(name, t, broker.bootstrap, "cg-churn"), "churn-confluent", "cg-churn")


def test_kafka_python_group_member_churn_manual_commits(broker_factory):
    broker = broker_factory(*FAST)
    run_member_churn(
        broker, lambda name, t: KafkaPythonMember(name, t, broker.bootstrap, "kp-churn"), "churn-kafka-python",
        "kp-churn")


# --------------------------------------------------------------------------------------
# 3: static membership
# --------------------------------------------------------------------------------------


def probe_generation(bootstrap: str, group: str, member_id: str, instance: str, max_gen: int = 30) -> int:
    """The group's generation, found with raw Heartbeat v3 on behalf of a live member
    (error 0 only for the current generation). Asserts exactly one generation answers 0."""
    with RawConn(bootstrap, client_id="gen-probe") as c:
        ok = [g for g in range(1, max_gen + 1) if c.heartbeat(3, group, g, member_id, instance=instance) == NONE]
    assert len(ok) == 1, f"generations answering Heartbeat with error 0: {ok}"
    return ok[0]


def test_confluent_static_member_restart_keeps_assignment_and_generation(broker_factory):
    broker = broker_factory(*FAST)
    topic, group = "static-t", "cg-static"
    create_topic(broker.bootstrap, topic, PARTS)
    tracker = Tracker(topic)

    def member(name, instance):
        return ConfluentMember(name, tracker, broker.bootstrap, group,
                               {"group.instance.id": instance, "session.timeout.ms": 30000})

    a = member("static-a", "inst-a").start()
    b = member("static-b", "inst-b").start()
    a2 = None
    try:
        wait_assignment([a, b], [3, 3], what="of two static members")
        # settle: both have a member id and the group is Stable
        wait_until(lambda: a.member_ids and b.member_ids, 20, what="member ids")

        def stable():
            d = describe_group_admin(broker.bootstrap, group)
            return d if str(d.state).endswith("STABLE") and len(d.members) == 2 else None
        wait_until(stable, 20, what="group Stable with 2 members")
        gen = probe_generation(broker.bootstrap, group, b.member_ids[-1], "inst-b")
        a_assignment = a.owned_now()
        a_old_id = a.member_ids[-1]
        b_assigns, b_revokes = len(b.assigned_events), len(b.revoked_events)

        a.stop()  # close(): a static member does not leave the group
        a.join()
        a2 = member("static-a-restarted", "inst-a").start()
        wait_until(lambda: a2.owned_now(), 25, what="the restarted static member's assignment")
        wait_until(lambda: a2.member_ids, 10, what="restarted member id")

        assert a2.owned_now() == a_assignment, (a2.owned_now(), a_assignment)
        assert a2.member_ids[-1] != a_old_id
        assert probe_generation(broker.bootstrap, group, b.member_ids[-1], "inst-b") == gen
        assert probe_generation(broker.bootstrap, group, a2.member_ids[-1], "inst-a") == gen
        with RawConn(broker.bootstrap) as c:
            assert c.heartbeat(3, group, gen, a_old_id, instance="inst-a") == FENCED_INSTANCE_ID
        # the other member saw no rebalance at all
        assert (len(b.assigned_events), len(b.revoked_events)) == (b_assigns, b_revokes), \
            (b.assigned_events, b.revoked_events)
        assert b.owned_now() == set(range(PARTS)) - a_assignment

        d = describe_group_admin(broker.bootstrap, group)
        assert str(d.state).endswith("STABLE"), d.state
        assert str(d.type).endswith("CLASSIC"), d.type
        by_instance = {m.group_instance_id: m for m in d.members}
        assert set(by_instance) == {"inst-a", "inst-b"}, by_instance
        assert by_instance["inst-a"].member_id == a2.member_ids[-1]
        assert {tp.partition for tp in by_instance["inst-a"].assignment.topic_partitions} == a_assignment
        assert {tp.partition for tp in by_instance["inst-b"].assignment.topic_partitions} == \
            set(range(PARTS)) - a_assignment
        assert not tracker.errors, tracker.errors
    finally:
        for m in (a, b, a2):
            if m is not None:
                m.stop()
        for m in (a, b, a2):
            if m is not None:
                m.join()


# --------------------------------------------------------------------------------------
# 4: cooperative-sticky
# --------------------------------------------------------------------------------------


def test_confluent_cooperative_sticky_incremental_rebalance(broker_factory):
    broker = broker_factory(*FAST)
    topic, group = "coop-t", "cg-coop"
    per_phase = 2000
    create_topic(broker.bootstrap, topic, PARTS)
    tracker = Tracker(topic)

    def member(name):
        return ConfluentMember(name, tracker, broker.bootstrap, group,
                               {"partition.assignment.strategy": "cooperative-sticky"})

    m0, m1 = member("coop-0").start(), member("coop-1").start()
    m2 = None
    try:
        wait_assignment([m0, m1], [3, 3], what="of two cooperative members")
        produce_known(broker.bootstrap, topic, PARTS, per_phase)
        wait_until(lambda: tracker.n_distinct() >= PARTS * per_phase or tracker.errors, 60, what="phase 1 consumed")
        before = {m.name: m.owned_now() for m in (m0, m1)}
        revokes_before = {m.name: len(m.revoked_events) for m in (m0, m1)}

        m2 = member("coop-2").start()
        owned = wait_assignment([m0, m1, m2], [2, 2, 2], what="of three cooperative members")
        produce_known(broker.bootstrap, topic, PARTS, per_phase, start=per_phase)
        wait_until(lambda: tracker.n_distinct() >= 2 * PARTS * per_phase or tracker.errors, 60,
                   what="phase 2 consumed")
        wait_until(lambda: all(v == 2 * per_phase for v in tracker.committed.values()) or tracker.errors, 30,
                   what=f"every partition committed ({tracker.committed})")

        # incremental: the old members kept what they had except what moved to the newcomer
        moved = set()
        for m, now in zip((m0, m1), owned[:2]):
            assert now <= before[m.name], (m.name, before[m.name], now)
            revoked = set().union(*m.revoked_events[revokes_before[m.name]:])
            assert revoked == before[m.name] - now and len(revoked) == 1, (m.name, m.revoked_events)
            moved |= revoked
        assert moved == owned[2], (moved, owned[2])
        # cooperative: the newcomer first gets nothing, then exactly the moved partitions (never revoked)
        assert set().union(*m2.assigned_events) == owned[2] and m2.revoked_events == [], \
            (m2.assigned_events, m2.revoked_events)
    finally:
        for m in (m0, m1, m2):
            if m is not None:
                m.stop()
        for m in (m0, m1, m2):
            if m is not None:
                m.join()
    tracker.check_complete(2 * per_phase)
    committed = confluent_committed(broker.bootstrap, group, topic, PARTS)
    assert {p: o for p, (o, _m) in committed.items()} == {p: 2 * per_phase for p in range(PARTS)}, committed


# --------------------------------------------------------------------------------------
# 5: committed offsets survive SIGTERM restart and kill -9
# --------------------------------------------------------------------------------------


def confluent_commit(bootstrap: str, group: str, topic: str, offsets: Dict[int, tuple]) -> None:
    """Simple (non-member) synchronous commit: {partition: (offset, metadata)}."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = [TopicPartition(topic, p, o) if meta is None else TopicPartition(topic, p, o, metadata=meta)
               for p, (o, meta) in offsets.items()]
        res = c.commit(offsets=tps, asynchronous=False)
        assert all(tp.error is None for tp in res), res
    finally:
        c.close()


def test_committed_offsets_survive_restart_and_kill9(broker_factory):
    broker = broker_factory(*FAST)
    topic = "durable-offsets-t"
    create_topic(broker.bootstrap, topic, 3)
    produce_known(broker.bootstrap, topic, 3, 100)

    # a real group: subscribe, consume everything, commit synchronously
    tracker = Tracker(topic, partitions=3)
    m = ConfluentMember("durable-member", tracker, broker.bootstrap, "cg-durable-member").start()
    try:
        wait_until(lambda: all(tracker.committed[p] == 100 for p in range(3)) or tracker.errors, 60,
                   what=f"member group committed 100 everywhere ({tracker.committed})")
    finally:
        m.stop()
        m.join()
    assert not tracker.errors, tracker.errors

    # simple commits, partition 0 rewritten many times (the last one must win)
    for i in (20, 40, 60):
        confluent_commit(broker.bootstrap, "cg-durable-simple", topic, {0: (i, f"p0-commit-{i}")})
    confluent_commit(broker.bootstrap, "cg-durable-simple", topic, {1: (20, "m1"), 2: (100, None)})
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cg-durable-simple",
                  "enable.auto.commit": False})
    try:
        for i in range(61, 161):
            c.commit(offsets=[TopicPartition(topic, 0, i, metadata=f"p0-commit-{i}")], asynchronous=False)
    finally:
        c.close()

    expected_member = {p: 100 for p in range(3)}
    expected_simple = {0: (160, "p0-commit-160"), 1: (20, "m1"), 2: (100, None)}

    def check(when: str, simple):
        got = confluent_committed(broker.bootstrap, "cg-durable-member", topic, 3)
        assert {p: o for p, (o, _m) in got.items()} == expected_member, (when, got)
        got = confluent_committed(broker.bootstrap, "cg-durable-simple", topic, 3)
        got = {p: (o, meta or None) for p, (o, meta) in got.items()}
        assert got == simple, (when, got)

    check("before restart", expected_simple)
    broker.restart()
    check("after SIGTERM restart", expected_simple)

    confluent_commit(broker.bootstrap, "cg-durable-simple", topic, {1: (77, "after-restart"), 2: (5, "rewound")})
    expected_after = {0: (160, "p0-commit-160"), 1: (77, "after-restart"), 2: (5, "rewound")}
    assert broker.kill9() == -9
    broker.start()
    check("after kill -9", expected_after)
    broker.restart()
    check("after kill -9 and another restart", expected_after)


# --------------------------------------------------------------------------------------
# 6: KIP-848 (group.protocol=consumer)
# --------------------------------------------------------------------------------------


def test_confluent_kip848_consumer_protocol(broker_factory):
    broker = broker_factory(*FAST)
    topic, group = "kip848-t", "cg-kip848"
    per_partition = 3000
    create_topic(broker.bootstrap, topic, PARTS)
    tracker = Tracker(topic)

    def member(name):
        m = ConfluentMember(name, tracker, broker.bootstrap, group)
        for k in ("session.timeout.ms", "heartbeat.interval.ms"):  # not allowed with group.protocol=consumer
            m.conf.pop(k)
        m.conf["group.protocol"] = "consumer"
        return m

    m0, m1 = member("kip848-0").start(), member("kip848-1").start()
    try:
        # the server-side (uniform) assignor settles on 3 + 3
        wait_assignment([m0, m1], [3, 3], what="KIP-848 members settled")
        produce_known(broker.bootstrap, topic, PARTS, per_partition)
        wait_until(lambda: tracker.n_distinct() >= PARTS * per_partition or tracker.errors, 90,
                   what=f"all records consumed (have {tracker.n_distinct()})")
        wait_assignment([m0, m1], [3, 3], what="KIP-848 members still settled")
        wait_until(lambda: all(v == per_partition for v in tracker.committed.values()) or tracker.errors, 30,
                   what=f"every partition committed ({tracker.committed})")
        d = describe_group_admin(broker.bootstrap, group)
        assert str(d.type).endswith("CONSUMER"), d.type
        assert str(d.state).endswith("STABLE"), d.state
        assert len(d.members) == 2, d.members
        desc = {m.member_id: {tp.partition for tp in m.assignment.topic_partitions} for m in d.members}
        assert sorted(map(sorted, desc.values())) == sorted(map(sorted, (m0.owned_now(), m1.owned_now()))), desc
    finally:
        m0.stop()
        m1.stop()
        m0.join()
        m1.join()
    tracker.check_complete(per_partition)
    committed = confluent_committed(broker.bootstrap, group, topic, PARTS)
    assert {p: o for p, (o, _m) in committed.items()} == {p: per_partition for p in range(PARTS)}, committed


def test_committed_offsets_do_not_outlive_their_topic(broker):
    """Kafka deletes a deleted topic's committed offsets: a topic deleted and created
    again starts without them (before: offset 5 came back, lag -3, the consumer skipped
    data), also after a restart."""
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def create():
        for f in admin.create_topics([NewTopic("ot", 1, 1)]).values():
            f.result(10)

    def committed():
        c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-ot",
                         "enable.auto.commit": False})
        try:
            return [tp.offset for tp in c.committed([ck.TopicPartition("ot", 0)], 10)]
        finally:
            c.close()

    create()
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-ot",
                     "enable.auto.commit": False})
    c.commit(offsets=[ck.TopicPartition("ot", 0, 5)], asynchronous=False)
    c.close()
    assert committed() == [5]
    for f in admin.delete_topics(["ot"]).values():
        f.result(10)
    create()
    assert committed() == [ck.OFFSET_INVALID]
    broker.restart()
    assert committed() == [ck.OFFSET_INVALID]
