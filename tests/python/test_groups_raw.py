"""Raw-protocol tests of the classic group coordinator (issue 3): hand-built,
non-flexible JoinGroup / SyncGroup / Heartbeat / LeaveGroup / OffsetCommit /
OffsetFetch / DescribeGroups requests, asserting exact response fields.

Every broker runs with --group-initial-rebalance-delay-ms 0 so the first rebalance of a
new group completes as soon as every known member has joined.
"""

from __future__ import annotations

import pytest

from group_helpers import (FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND, GROUP_SUBSCRIBED_TO_TOPIC, ILLEGAL_GENERATION,
                           INCONSISTENT_GROUP_PROTOCOL, MEMBER_ID_REQUIRED, NON_EMPTY_GROUP, NONE,
                           REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, UNKNOWN_TOPIC_OR_PARTITION, RawConn,
                           consumer_subscription)

FAST = ("--group-initial-rebalance-delay-ms", "0")
PROTOS_A = [("range", b"\x00\x01meta-of-A"), ("roundrobin", b"rr-A")]
PROTOS_B = [("range", b"\x00\x01meta-of-B\xff"), ("roundrobin", b"rr-B")]
PARKED_PROBE_S = 1.0


@pytest.fixture
def fast_broker(broker_factory):
    return broker_factory(*FAST)


def join_alone(conn: RawConn, group: str, protocols=PROTOS_A, version: int = 3, instance=None) -> dict:
    """A first member that joins a new group in one round trip (v3, or v5 static)."""
    j = conn.join(version, group, "", protocols, instance=instance)
    assert j["error"] == NONE, j
    assert j["generation"] == 1, j
    assert j["member_id"] and j["leader"] == j["member_id"], j
    return j


def two_member_generation(fast_broker, group: str):
    """A joins alone (generation 1, synced), then B joins; B's JoinGroup stays parked until
    A rejoins; both then get generation 2 with A as leader. Returns (a, b, a_id, b_id)."""
    a = RawConn(fast_broker.bootstrap, client_id="member-a")
    b = RawConn(fast_broker.bootstrap, client_id="member-b")
    ja = join_alone(a, group)
    a_id = ja["member_id"]
    assert ja["protocol"] == "range" and ja["members"] == [(a_id, None, PROTOS_A[0][1])], ja
    s = a.sync(2, group, 1, a_id, [(a_id, b"gen1-A")])
    assert s == {"throttle": 0, "error": NONE, "assignment": b"gen1-A"}, s

    b.send_join(3, group, "", PROTOS_B)
    assert not b.answered_within(0.5), "B's JoinGroup was answered before A rejoined (A is a known member)"
    assert a.heartbeat(2, group, 1, a_id) == REBALANCE_IN_PROGRESS
    ja2 = a.join(3, group, a_id, PROTOS_A)
    jb = b.recv_join(3)
    b_id = jb["member_id"]
    assert ja2["error"] == NONE and jb["error"] == NONE, (ja2, jb)
    assert b_id and b_id != a_id and b_id.startswith("member-b-"), jb
    assert ja2["generation"] == 2 and jb["generation"] == 2, (ja2, jb)
    assert ja2["leader"] == a_id and jb["leader"] == a_id, (ja2, jb)
    assert ja2["member_id"] == a_id
    assert ja2["protocol"] == "range" and jb["protocol"] == "range"
    # the leader gets every member's metadata for the chosen protocol, a follower none
    assert sorted(ja2["members"]) == sorted([(a_id, None, PROTOS_A[0][1]), (b_id, None, PROTOS_B[0][1])]), ja2
    assert jb["members"] == [], jb
    return a, b, a_id, b_id


# --------------------------------------------------------------------------------------
# (a) MEMBER_ID_REQUIRED by version
# --------------------------------------------------------------------------------------


def test_join_v4_empty_member_id_gets_member_id_required(fast_broker):
    with RawConn(fast_broker.bootstrap, client_id="cli-v4") as c:
        j = c.join(4, "g-v4", "", PROTOS_A)
        assert j["error"] == MEMBER_ID_REQUIRED, j
        mid = j["member_id"]
        assert mid.startswith("cli-v4-") and len(mid) > len("cli-v4-"), j
        assert j["generation"] == -1 and j["leader"] == "" and j["members"] == [], j
        # the group has no member yet
        d = c.describe_group("g-v4")
        assert d["error"] == NONE and d["members"] == [], d

        # a second empty-id JoinGroup gets a different id
        j2 = c.join(4, "g-v4", "", PROTOS_A)
        assert j2["error"] == MEMBER_ID_REQUIRED and j2["member_id"] != mid, j2

        # joining with the generated id completes in one more round trip
        j3 = c.join(4, "g-v4", mid, PROTOS_A)
        assert j3["error"] == NONE, j3
        assert j3["member_id"] == mid and j3["leader"] == mid and j3["generation"] == 1, j3
        assert j3["protocol"] == "range" and j3["members"] == [(mid, None, PROTOS_A[0][1])], j3
        d = c.describe_group("g-v4")
        assert d["state"] == "CompletingRebalance" and d["protocol_type"] == "consumer", d
        assert [m["member_id"] for m in d["members"]] == [mid], d
        s = c.sync(2, "g-v4", 1, mid, [(mid, b"only-me")])
        assert s["error"] == NONE and s["assignment"] == b"only-me", s
        d = c.describe_group("g-v4")
        assert d["state"] == "Stable" and d["protocol"] == "range", d
        assert d["members"][0]["assignment"] == b"only-me" and d["members"][0]["client_id"] == "cli-v4", d
        assert c.heartbeat(2, "g-v4", 1, mid) == NONE


def test_join_v3_empty_member_id_joins_in_one_round_trip(fast_broker):
    with RawConn(fast_broker.bootstrap, client_id="cli-v3") as c:
        j = c.join(3, "g-v3", "", PROTOS_A)
        assert j["error"] == NONE, j
        mid = j["member_id"]
        assert mid.startswith("cli-v3-"), j
        assert j["generation"] == 1 and j["leader"] == mid and j["protocol"] == "range", j
        assert j["members"] == [(mid, None, PROTOS_A[0][1])], j
        s = c.sync(2, "g-v3", 1, mid, [(mid, b"\x00\x00v3")])
        assert s["error"] == NONE and s["assignment"] == b"\x00\x00v3", s
        assert c.heartbeat(2, "g-v3", 1, mid) == NONE


def test_join_v1_and_v2_join_in_one_round_trip(fast_broker):
    for v in (1, 2):
        with RawConn(fast_broker.bootstrap, client_id=f"cli-v{v}") as c:
            j = c.join(v, f"g-old-v{v}", "", PROTOS_A)
            assert j["error"] == NONE and j["generation"] == 1 and j["leader"] == j["member_id"] != "", (v, j)


# --------------------------------------------------------------------------------------
# (b) parked SyncGroup; members left out of the assignment get empty bytes
# --------------------------------------------------------------------------------------


def test_follower_sync_is_parked_until_leader_syncs(fast_broker):
    group = "g-parked"
    a, b, a_id, b_id = two_member_generation(fast_broker, group)
    try:
        b.send_sync(2, group, 2, b_id, [])
        assert not b.answered_within(PARKED_PROBE_S), "follower SyncGroup answered before the leader's SyncGroup"
        with RawConn(fast_broker.bootstrap) as probe:
            d = probe.describe_group(group)
            assert d["state"] == "CompletingRebalance", d
        assert not b.answered_within(0.2)

        assign_a = b"\x00\x03A-partitions:0,1,2"
        assign_b = b"\x00\x03B-partitions:3,4,5\x00\xff"
        sa = a.sync(2, group, 2, a_id, [(a_id, assign_a), (b_id, assign_b)])
        assert sa == {"throttle": 0, "error": NONE, "assignment": assign_a}, sa
        assert b.answered_within(10.0), "follower SyncGroup not answered after the leader's SyncGroup"
        sb = b.recv_sync()
        assert sb == {"throttle": 0, "error": NONE, "assignment": assign_b}, sb

        with RawConn(fast_broker.bootstrap) as probe:
            d = probe.describe_group(group)
        assert d["state"] == "Stable" and d["protocol"] == "range", d
        assert {m["member_id"]: m["assignment"] for m in d["members"]} == {a_id: assign_a, b_id: assign_b}, d
        assert {m["member_id"]: m["metadata"] for m in d["members"]} == {
            a_id: PROTOS_A[0][1], b_id: PROTOS_B[0][1]}, d
        assert a.heartbeat(2, group, 2, a_id) == NONE
        assert b.heartbeat(2, group, 2, b_id) == NONE
        # a late SyncGroup of a Stable group returns the stored assignment
        assert b.sync(2, group, 2, b_id, []) == {"throttle": 0, "error": NONE, "assignment": assign_b}
    finally:
        a.close()
        b.close()


def test_member_left_out_of_assignment_gets_empty_bytes(fast_broker):
    group = "g-leftout"
    a, b, a_id, b_id = two_member_generation(fast_broker, group)
    try:
        # follower parked first, then the leader assigns only itself
        b.send_sync(1, group, 2, b_id, [])
        assert not b.answered_within(PARKED_PROBE_S), "follower SyncGroup answered before the leader's SyncGroup"
        sa = a.sync(2, group, 2, a_id, [(a_id, b"all-for-A")])
        assert sa["error"] == NONE and sa["assignment"] == b"all-for-A", sa
        sb = b.recv_sync()
        assert sb["error"] == NONE and sb["assignment"] == b"", sb
        # and when asked again (Stable group)
        sb2 = b.sync(2, group, 2, b_id, [])
        assert sb2["error"] == NONE and sb2["assignment"] == b"", sb2
    finally:
        a.close()
        b.close()


def test_leave_group_triggers_rebalance(fast_broker):
    group = "g-leave"
    a, b, a_id, b_id = two_member_generation(fast_broker, group)
    try:
        assert a.sync(2, group, 2, a_id, [(a_id, b"x"), (b_id, b"y")])["error"] == NONE
        assert b.sync(2, group, 2, b_id, [])["assignment"] == b"y"
        assert b.leave(group, b_id) == NONE
        assert a.heartbeat(2, group, 2, a_id) == REBALANCE_IN_PROGRESS
        j = a.join(3, group, a_id, PROTOS_A)
        assert j["error"] == NONE and j["generation"] == 3 and j["leader"] == a_id, j
        assert j["members"] == [(a_id, None, PROTOS_A[0][1])], j
        # the departed member is unknown now
        assert b.heartbeat(2, group, 3, b_id) == UNKNOWN_MEMBER_ID
    finally:
        a.close()
        b.close()


# --------------------------------------------------------------------------------------
# (c) simple (non-member) commits
# --------------------------------------------------------------------------------------


def test_simple_commit_on_unknown_group_and_fetch(fast_broker):
    with RawConn(fast_broker.bootstrap) as c:
        assert c.create_topic("simple-t", 3) == NONE
        errs = c.offset_commit(2, "g-simple", -1, "", {"simple-t": [(0, 42, "meta-0"), (2, 7, None)]})
        assert errs == {("simple-t", 0): NONE, ("simple-t", 2): NONE}, errs

        err, got = c.offset_fetch("g-simple", {"simple-t": [0, 1, 2]})
        assert err == NONE
        assert got[("simple-t", 0)] == (42, -1, "meta-0", NONE), got
        assert got[("simple-t", 1)][0] == -1 and got[("simple-t", 1)][3] == NONE, got
        assert got[("simple-t", 2)][0] == 7 and got[("simple-t", 2)][3] == NONE, got
        assert got[("simple-t", 2)][2] in ("", None), got

        # v5 commit (no retention field) overwrites; null topics = every committed partition
        errs = c.offset_commit(5, "g-simple", -1, "", {"simple-t": [(0, 43, "meta-0b")]})
        assert errs == {("simple-t", 0): NONE}, errs
        err, got = c.offset_fetch("g-simple", None)
        assert err == NONE
        assert {k: v[0] for k, v in got.items()} == {("simple-t", 0): 43, ("simple-t", 2): 7}, got
        assert got[("simple-t", 0)][2] == "meta-0b"

        d = c.describe_group("g-simple")
        assert d["error"] == NONE and d["state"] == "Empty" and d["members"] == [], d


def test_simple_commit_rejected_when_group_has_members(fast_broker):
    with RawConn(fast_broker.bootstrap) as c:
        assert c.create_topic("busy-t", 1) == NONE
        j = join_alone(c, "g-busy")
        assert c.sync(2, "g-busy", 1, j["member_id"], [(j["member_id"], b"a")])["error"] == NONE
        errs = c.offset_commit(2, "g-busy", -1, "", {"busy-t": [(0, 5, None)]})
        assert errs == {("busy-t", 0): UNKNOWN_MEMBER_ID}, errs
        errs = c.offset_commit(5, "g-busy", 1, j["member_id"], {"busy-t": [(0, 6, "m")]})
        assert errs == {("busy-t", 0): NONE}, errs
        err, got = c.offset_fetch("g-busy", {"busy-t": [0]})
        assert err == NONE and got[("busy-t", 0)] == (6, -1, "m", NONE), got


# --------------------------------------------------------------------------------------
# (d) static membership: fencing of the replaced member id
# --------------------------------------------------------------------------------------


def test_static_member_rejoin_fences_old_member_id(fast_broker):
    group, inst = "g-static", "inst-1"
    with RawConn(fast_broker.bootstrap, client_id="static-cli") as c:
        j = c.join(5, group, "", PROTOS_A, instance=inst, session_ms=30000)
        # static members get an id without the MEMBER_ID_REQUIRED round trip
        assert j["error"] == NONE, j
        old = j["member_id"]
        assert old.startswith(inst + "-"), j
        assert j["generation"] == 1 and j["leader"] == old, j
        assert j["members"] == [(old, inst, PROTOS_A[0][1])], j
        s = c.sync(3, group, 1, old, [(old, b"static-assignment")], instance=inst)
        assert s["error"] == NONE and s["assignment"] == b"static-assignment", s
        assert c.heartbeat(3, group, 1, old, instance=inst) == NONE

        # the same instance rejoins with an empty member id (e.g. after a restart)
        j2 = c.join(5, group, "", PROTOS_A, instance=inst, session_ms=30000)
        assert j2["error"] == NONE, j2
        new = j2["member_id"]
        assert new != old and new.startswith(inst + "-"), j2
        # no rebalance: same generation; the rejoined member is not made to re-assign
        assert j2["generation"] == 1, j2
        assert j2["members"] == [] and j2["leader"] != new, j2

        d = c.describe_group(group)
        assert d["state"] == "Stable", d
        assert [(m["member_id"], m["instance"]) for m in d["members"]] == [(new, inst)], d

        assert c.heartbeat(3, group, 1, old, instance=inst) == FENCED_INSTANCE_ID
        s = c.sync(3, group, 1, old, [], instance=inst)
        assert s["error"] == FENCED_INSTANCE_ID, s
        s = c.sync(3, group, 1, new, [], instance=inst)
        assert s["error"] == NONE and s["assignment"] == b"static-assignment", s
        assert c.heartbeat(3, group, 1, new, instance=inst) == NONE
        assert c.offset_commit(7, group, 1, old, {"t-none": []}, instance=inst) == {}


# --------------------------------------------------------------------------------------
# (e) Heartbeat / OffsetCommit member and generation validation
# --------------------------------------------------------------------------------------


def test_heartbeat_unknown_member_and_illegal_generation(fast_broker):
    group = "g-hb"
    with RawConn(fast_broker.bootstrap) as c:
        assert c.heartbeat(2, "g-hb-no-such-group", 1, "nobody") == UNKNOWN_MEMBER_ID
        j = join_alone(c, group)
        mid = j["member_id"]
        assert c.sync(2, group, 1, mid, [(mid, b"a")])["error"] == NONE
        assert c.heartbeat(2, group, 1, mid) == NONE
        assert c.heartbeat(2, group, 1, "nobody") == UNKNOWN_MEMBER_ID
        assert c.heartbeat(2, group, 1, mid + "x") == UNKNOWN_MEMBER_ID
        assert c.heartbeat(2, group, 2, mid) == ILLEGAL_GENERATION
        assert c.heartbeat(2, group, 0, mid) == ILLEGAL_GENERATION
        assert c.heartbeat(1, group, 7, mid) == ILLEGAL_GENERATION
        assert c.heartbeat(2, group, 1, mid) == NONE

        assert c.create_topic("hb-t", 1) == NONE
        assert c.offset_commit(5, group, 2, mid, {"hb-t": [(0, 1, None)]}) == {("hb-t", 0): ILLEGAL_GENERATION}
        assert c.offset_commit(5, group, 1, "nobody", {"hb-t": [(0, 1, None)]}) == {("hb-t", 0): UNKNOWN_MEMBER_ID}
        assert c.offset_commit(5, group, 1, mid, {"hb-t": [(0, 1, None)]}) == {("hb-t", 0): NONE}


def test_commit_during_completing_rebalance_is_rejected(fast_broker):
    with RawConn(fast_broker.bootstrap) as c:
        assert c.create_topic("cr-t", 1) == NONE
        j = join_alone(c, "g-cr")  # CompletingRebalance until the leader syncs
        errs = c.offset_commit(5, "g-cr", 1, j["member_id"], {"cr-t": [(0, 3, None)]})
        assert errs == {("cr-t", 0): REBALANCE_IN_PROGRESS}, errs
        # (a Heartbeat is accepted in CompletingRebalance, as in Kafka 2.x+)
        assert c.heartbeat(2, "g-cr", 1, j["member_id"]) == NONE
        mid = j["member_id"]
        assert c.sync(2, "g-cr", 1, mid, [(mid, b"a")])["error"] == NONE
        assert c.offset_commit(5, "g-cr", 1, mid, {"cr-t": [(0, 3, None)]}) == {("cr-t", 0): NONE}


# --------------------------------------------------------------------------------------
# (f) OffsetCommit to unknown topics / partitions
# --------------------------------------------------------------------------------------


def test_offset_commit_unknown_topic_or_partition(fast_broker):
    with RawConn(fast_broker.bootstrap) as c:
        assert c.create_topic("known-t", 2) == NONE
        errs = c.offset_commit(2, "g-unknown-topic", -1, "", {
            "no-such-topic": [(0, 5, None)],
            "known-t": [(0, 5, "five"), (1, 6, None), (2, 7, None)],
        })
        assert errs == {
            ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION,
            ("known-t", 0): NONE,
            ("known-t", 1): NONE,
            ("known-t", 2): UNKNOWN_TOPIC_OR_PARTITION,
        }, errs
        errs = c.offset_commit(5, "g-unknown-topic", -1, "", {"no-such-topic-2": [(3, 1, None)]})
        assert errs == {("no-such-topic-2", 3): UNKNOWN_TOPIC_OR_PARTITION}, errs
        err, got = c.offset_fetch("g-unknown-topic", None)
        assert err == NONE
        assert {k: (v[0], v[3]) for k, v in got.items()} == {("known-t", 0): (5, NONE), ("known-t", 1): (6, NONE)}, got


# --------------------------------------------------------------------------------------
# INCONSISTENT_GROUP_PROTOCOL, OffsetDelete, DeleteGroups, ListGroups
# --------------------------------------------------------------------------------------


def test_inconsistent_group_protocol(fast_broker):
    with RawConn(fast_broker.bootstrap) as a, RawConn(fast_broker.bootstrap) as b:
        ja = join_alone(a, "g-incons")
        assert a.sync(2, "g-incons", 1, ja["member_id"], [(ja["member_id"], b"x")])["error"] == NONE
        j = b.join(3, "g-incons", "", PROTOS_B, protocol_type="connect")
        assert j["error"] == INCONSISTENT_GROUP_PROTOCOL, j
        j = b.join(3, "g-incons", "", [("cooperative-sticky", b"cs")])
        assert j["error"] == INCONSISTENT_GROUP_PROTOCOL, j
        # the group is untouched
        assert a.heartbeat(2, "g-incons", 1, ja["member_id"]) == NONE


def test_offset_delete_delete_groups_list_groups(fast_broker):
    group = "g-od"
    with RawConn(fast_broker.bootstrap) as c:
        assert c.create_topic("od-t", 2) == NONE
        assert c.create_topic("od-other", 1) == NONE
        sub = consumer_subscription(["od-t"])
        j = c.join(3, group, "", [("range", sub)])
        assert j["error"] == NONE and j["generation"] == 1, j
        mid = j["member_id"]
        assert c.sync(2, group, 1, mid, [(mid, b"")])["error"] == NONE
        assert c.offset_commit(5, group, 1, mid, {"od-t": [(0, 10, None)], "od-other": [(0, 20, None)]}) == {
            ("od-t", 0): NONE, ("od-other", 0): NONE}
        assert c.offset_commit(2, "g-od-simple", -1, "", {"od-t": [(1, 5, None)]}) == {("od-t", 1): NONE}

        groups = c.list_groups()
        assert groups.get(group) == "consumer" and groups.get("g-od-simple") == "", groups

        # a Stable group subscribed to od-t keeps that offset; od-other is deletable
        err, res = c.offset_delete(group, {"od-t": [0], "od-other": [0]})
        assert err == NONE and res == {("od-t", 0): GROUP_SUBSCRIBED_TO_TOPIC, ("od-other", 0): NONE}, (err, res)
        err, got = c.offset_fetch(group, None)
        assert err == NONE and {k: v[0] for k, v in got.items()} == {("od-t", 0): 10}, got
        err, res = c.offset_delete("g-od-never-existed", {"od-t": [0]})
        assert err == GROUP_ID_NOT_FOUND, (err, res)

        assert c.delete_groups([group, "g-od-never-existed"]) == {
            group: NON_EMPTY_GROUP, "g-od-never-existed": GROUP_ID_NOT_FOUND}

        assert c.leave(group, mid) == NONE
        assert c.describe_group(group)["state"] == "Empty"
        err, res = c.offset_delete(group, {"od-t": [0]})
        assert err == NONE and res == {("od-t", 0): NONE}, (err, res)
        err, got = c.offset_fetch(group, {"od-t": [0]})
        assert err == NONE and got[("od-t", 0)][0] == -1, got

        # as in Kafka 4.x, an Empty group whose last offset was deleted stays (until the
        # periodic cleanup) and DeleteGroups deletes it, like an Empty group with offsets
        assert c.describe_group(group)["state"] == "Empty"
        assert group in c.list_groups()
        assert c.delete_groups([group, "g-od-simple"]) == {group: NONE, "g-od-simple": NONE}
        groups = c.list_groups()
        assert group not in groups and "g-od-simple" not in groups, groups
        err, got = c.offset_fetch("g-od-simple", {"od-t": [1]})
        assert err == NONE and got[("od-t", 1)][0] == -1, got


# --------------------------------------------------------------------------------------
# FindCoordinator
# --------------------------------------------------------------------------------------


def test_find_coordinator_returns_this_broker(fast_broker):
    with RawConn(fast_broker.bootstrap) as c:
        for key, kt in (("any-group", 0), ("another-group-xyz", 0), ("txn-id-1", 1)):
            f = c.find_coordinator(key, kt)
            assert f["error"] == NONE, f
            assert (f["host"], f["port"]) == (fast_broker.host, fast_broker.port), f
            assert f["node_id"] == 0, f
