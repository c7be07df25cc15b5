//! JoinGroup / SyncGroup / Heartbeat / session and rebalance timers.

use kafka_protocol::ResponseError;

use super::*;
use crate::coordinator::{GroupRecord, GroupState};

#[test]
fn two_member_join_and_sync_with_parked_follower_sync() {
    let mut h = H::new();
    let a = h.member_id_for("g");
    assert!(a.starts_with("client-"), "{a}");
    let (ta, out) = h.join(5, "g", &a, None);
    assert!(out.is_empty(), "parked in the initial rebalance delay");
    assert_eq!(h.c.group_state("g"), Some(GroupState::PreparingRebalance));
    assert_eq!(h.c.next_deadline(), Some(T0 + 3_000));

    h.now = T0 + 1_000;
    let b = h.member_id_for("g");
    let (tb, out) = h.join(5, "g", &b, None);
    assert!(out.is_empty());

    assert!(h.tick_at(T0 + 2_999).is_empty());
    // B joined during the delay: it is extended by another 3000 ms.
    assert!(h.tick_at(T0 + 3_000).is_empty());
    assert_eq!(h.c.next_deadline(), Some(T0 + 6_000));
    let out = h.tick_at(T0 + 6_000);
    let ja = join_resp(&out, ta).unwrap();
    let jb = join_resp(&out, tb).unwrap();
    assert_eq!(ja.error_code, 0);
    assert_eq!(ja.generation_id, 1);
    assert_eq!(ja.leader.as_str(), a);
    assert_eq!(ja.member_id.as_str(), a);
    assert_eq!(ja.protocol_name.as_deref(), Some("range"));
    let leader_view: Vec<&str> = ja.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(leader_view, vec![a.as_str(), b.as_str()]);
    assert_eq!(ja.members[1].metadata, subscription(&["t1"]));
    assert_eq!(jb.generation_id, 1);
    assert_eq!(jb.leader.as_str(), a);
    assert!(jb.members.is_empty(), "followers do not get the member list");
    assert_eq!(h.c.group_state("g"), Some(GroupState::CompletingRebalance));

    // The follower's SyncGroup waits for the leader, whatever the clock does.
    h.now = T0 + 6_500;
    let (sb, out) = h.sync(5, "g", &b, 1, &[]);
    assert!(out.is_empty());
    assert!(h.tick_at(T0 + 6_000 + REBALANCE as i64 - 1).is_empty());

    // The leader assigns only itself: B gets empty bytes.
    let (sa, out) = h.sync(5, "g", &a, 1, &[(a.as_str(), b"A")]);
    assert!(matches!(&out[0], Output::Persist(GroupRecord::GroupMetadata { generation: 1, .. })));
    assert!(position_of_respond(&out, sb) > 0 && position_of_respond(&out, sa) > 0);
    assert_eq!(sync_resp(&out, sa).unwrap().assignment.as_ref(), b"A");
    let rb = sync_resp(&out, sb).unwrap();
    assert_eq!(rb.error_code, 0);
    assert!(rb.assignment.is_empty());
    assert_eq!(rb.protocol_name.as_deref(), Some("range"));
    assert_eq!(h.c.group_state("g"), Some(GroupState::Stable));
    assert_eq!(h.parked(), 0);
}

#[test]
fn member_id_required_from_v4_but_not_v3() {
    let mut h = H::new();
    let (t, out) = h.join(4, "g4", "", None);
    let r = join_resp(&out, t).unwrap();
    assert_eq!(r.error_code, ResponseError::MemberIdRequired.code());
    assert!(r.member_id.starts_with("client-"));
    assert_eq!(r.generation_id, -1);
    assert_eq!(r.leader.as_str(), "");
    assert!(h.c.group_members("g4").is_empty());
    assert_eq!(h.c.group_state("g4"), Some(GroupState::Empty));

    let (t, out) = h.join(3, "g3", "", None);
    assert!(out.is_empty(), "v3 joins in one round trip (parked)");
    let members = h.c.group_members("g3");
    assert_eq!(members.len(), 1);
    let out = h.tick_at(T0 + 3_000);
    let r = join_resp(&out, t).unwrap();
    assert_eq!(r.error_code, 0);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.member_id.as_str(), members[0]);
    assert_eq!(r.leader.as_str(), members[0]);
    assert_eq!(r.members.len(), 1);
}

#[test]
fn rebalance_timeout_removes_member_that_does_not_rejoin() {
    let (mut h, a, b) = H::stable_group();
    h.now = T0 + 10_000;
    let (ta, out) = h.join(5, "g", &a, None);
    assert!(out.is_empty(), "a leader rejoin starts a rebalance");
    assert_eq!(h.c.group_state("g"), Some(GroupState::PreparingRebalance));

    h.now = T0 + 15_000;
    assert_eq!(h.heartbeat("g", &b, 1), ResponseError::RebalanceInProgress.code());
    assert_eq!(h.c.next_deadline(), Some(T0 + 10_000 + REBALANCE as i64));
    assert!(h.tick_at(T0 + 29_999).is_empty());

    let out = h.tick_at(T0 + 30_000);
    let r = join_resp(&out, ta).unwrap();
    assert_eq!(r.generation_id, 2);
    assert_eq!(r.leader.as_str(), a);
    assert_eq!(r.members.len(), 1);
    assert_eq!(h.c.group_members("g"), vec![a.clone()]);
    assert_eq!(h.heartbeat("g", &b, 1), ResponseError::UnknownMemberId.code());
}

#[test]
fn session_expiry_removes_member_and_triggers_rebalance() {
    let (mut h, a, b) = H::stable_group();
    h.now = T0 + 20_000;
    assert_eq!(h.heartbeat("g", &a, 1), 0);
    // B's session started when its SyncGroup was answered at T0 + 6000.
    assert_eq!(h.c.next_deadline(), Some(T0 + 6_000 + SESSION as i64));
    assert!(h.tick_at(T0 + 35_999).is_empty());
    assert_eq!(h.c.group_state("g"), Some(GroupState::Stable));

    h.tick_at(T0 + 36_000);
    assert_eq!(h.c.group_state("g"), Some(GroupState::PreparingRebalance));
    assert_eq!(h.c.group_members("g"), vec![a.clone()]);
    assert_eq!(h.heartbeat("g", &a, 1), ResponseError::RebalanceInProgress.code());
    assert_eq!(h.heartbeat("g", &b, 1), ResponseError::UnknownMemberId.code());

    // The only member rejoins: the rebalance completes at once.
    let (t, out) = h.join(5, "g", &a, None);
    let r = join_resp(&out, t).unwrap();
    assert_eq!((r.error_code, r.generation_id), (0, 2));
    assert_eq!(r.members.len(), 1);
}

#[test]
fn heartbeat_errors() {
    let (mut h, a, _b) = H::stable_group();
    assert_eq!(h.heartbeat("g", &a, 1), 0);
    assert_eq!(h.heartbeat("g", &a, 0), ResponseError::IllegalGeneration.code());
    assert_eq!(h.heartbeat("g", "nobody", 1), ResponseError::UnknownMemberId.code());
    assert_eq!(h.heartbeat("other", &a, 1), ResponseError::UnknownMemberId.code());
    assert_eq!(h.heartbeat("", &a, 1), ResponseError::InvalidGroupId.code());
}

#[test]
fn follower_rejoining_stable_group_with_same_metadata_gets_current_generation() {
    let (mut h, a, b) = H::stable_group();
    let (t, out) = h.join(5, "g", &b, None);
    let r = join_resp(&out, t).unwrap();
    assert_eq!((r.error_code, r.generation_id), (0, 1));
    assert_eq!(r.leader.as_str(), a);
    assert_eq!(h.c.group_state("g"), Some(GroupState::Stable));
}

#[test]
fn leader_that_never_syncs_is_removed_after_rebalance_timeout() {
    let mut h = H::new();
    let a = h.member_id_for("g");
    let (_, _) = h.join(5, "g", &a, None);
    let b = h.member_id_for("g");
    let (_, _) = h.join(5, "g", &b, None);
    h.tick_at(T0 + 3_000);
    h.tick_at(T0 + 6_000);
    let (sb, out) = h.sync(5, "g", &b, 1, &[]);
    assert!(out.is_empty());
    let out = h.tick_at(T0 + 6_000 + REBALANCE as i64);
    let r = sync_resp(&out, sb).unwrap();
    assert_eq!(r.error_code, ResponseError::RebalanceInProgress.code());
    assert_eq!(h.c.group_members("g"), vec![b.clone()]);
    assert_eq!(h.c.group_state("g"), Some(GroupState::PreparingRebalance));
}

#[test]
fn join_validation_errors() {
    let (mut h, _a, _b) = H::stable_group();
    let mut req = H::join_req("g", "", None, &["t1"]);
    req.protocol_type = s("connect");
    let (t, out) = h.join_with(3, req);
    assert_eq!(
        join_resp(&out, t).unwrap().error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    let mut req = H::join_req("g", "", None, &["t1"]);
    req.session_timeout_ms = 1_000;
    let (t, out) = h.join_with(3, req);
    assert_eq!(join_resp(&out, t).unwrap().error_code, ResponseError::InvalidSessionTimeout.code());
    let (t, out) = h.join(5, "g", "stranger", None);
    assert_eq!(join_resp(&out, t).unwrap().error_code, ResponseError::UnknownMemberId.code());
    let (t, out) = h.join(5, "", "", None);
    assert_eq!(join_resp(&out, t).unwrap().error_code, ResponseError::InvalidGroupId.code());
}

#[test]
fn group_max_size_reached() {
    let mut h =
        H::with_config(CoordinatorConfig { max_group_size: 1, ..CoordinatorConfig::default() });
    let (_, _) = h.join(3, "g", "", None);
    h.tick_at(T0 + 3_000);
    let (t, out) = h.join(3, "g", "", None);
    let r = join_resp(&out, t).unwrap();
    assert_eq!(r.error_code, ResponseError::GroupMaxSizeReached.code());
    assert_eq!(h.c.group_members("g").len(), 1);
}

#[test]
fn loading_coordinator_answers_load_in_progress() {
    let mut h = H::new();
    h.c.set_loading(true, T0);
    let (t, out) = h.join(5, "g", "", None);
    assert_eq!(
        join_resp(&out, t).unwrap().error_code,
        ResponseError::CoordinatorLoadInProgress.code()
    );
    let (t, out) = h.sync(5, "g", "m", 1, &[]);
    assert_eq!(
        sync_resp(&out, t).unwrap().error_code,
        ResponseError::RebalanceInProgress.code(),
        "SyncGroup tells old clients to rejoin instead"
    );
    assert_eq!(h.heartbeat("g", "m", 1), ResponseError::CoordinatorLoadInProgress.code());
    h.c.set_loading(false, T0);
    let (t, out) = h.join(5, "g", "", None);
    assert_eq!(join_resp(&out, t).unwrap().error_code, ResponseError::MemberIdRequired.code());
}

#[test]
fn unused_member_id_expires_after_session_timeout() {
    let mut h = H::new();
    let a = h.member_id_for("g");
    h.tick_at(T0 + SESSION as i64);
    let (t, out) = h.join(5, "g", &a, None);
    assert_eq!(join_resp(&out, t).unwrap().error_code, ResponseError::UnknownMemberId.code());
}

#[test]
fn rejoin_during_completing_rebalance_fails_parked_syncs() {
    let mut h = H::new();
    let a = h.member_id_for("g");
    h.join(5, "g", &a, None);
    let b = h.member_id_for("g");
    h.join(5, "g", &b, None);
    h.tick_at(T0 + 3_000);
    h.tick_at(T0 + 6_000);
    let (sb, out) = h.sync(5, "g", &b, 1, &[]);
    assert!(out.is_empty());
    // A new member arrives before the leader synced: B's parked sync must rejoin.
    let c = h.member_id_for("g");
    let (_, out) = h.join(5, "g", &c, None);
    assert_eq!(sync_resp(&out, sb).unwrap().error_code, ResponseError::RebalanceInProgress.code());
    assert_eq!(h.c.group_state("g"), Some(GroupState::PreparingRebalance));
}

/// The leader's assignment could not be stored (the group metadata write failed): as
/// Kafka, the members' assignments are cleared and the group rebalances, so nobody goes
/// on with an assignment a restart would not know. A record of an older generation
/// changes nothing.
#[test]
fn a_failed_assignment_write_clears_the_assignments_and_rebalances() {
    let (mut h, _a, b) = H::stable_group();
    let record = |generation| {
        let mut r = h_record(&h);
        let GroupRecord::GroupMetadata { generation: g, .. } = &mut r else {
            panic!("not group metadata: {r:?}")
        };
        *g = generation;
        r
    };
    let stale = record(0);
    let current = record(1);
    assert!(h.c.group_write_failed(&stale, h.now).is_empty());
    assert_eq!(h.c.group_state("g"), Some(GroupState::Stable));
    h.c.group_write_failed(&current, h.now);
    assert_eq!(h.c.group_state("g"), Some(GroupState::PreparingRebalance));
    assert_eq!(h.heartbeat("g", &b, 1), ResponseError::RebalanceInProgress.code());
    let GroupRecord::GroupMetadata { members, .. } = h_record(&h) else { unreachable!() };
    assert!(members.iter().all(|m| m.assignment.is_empty()), "assignments cleared");
}

/// The metadata record of group "g" as it would be stored now.
fn h_record(h: &H) -> GroupRecord {
    match h.c.groups.get("g").map(|g| &g.kind) {
        Some(crate::coordinator::group::GroupKind::Classic(c)) => c.metadata_record("g"),
        _ => panic!("no classic group g"),
    }
}
