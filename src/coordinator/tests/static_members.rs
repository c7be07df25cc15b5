//! Static membership (group.instance.id, KIP-345).

use kafka_protocol::ResponseError;

use super::*;
use crate::coordinator::{GroupRecord, GroupState};

/// Static members "ia" (leader) and "ib" joined with v5, synced: Stable generation 1.
fn static_stable() -> (H, String, String) {
    let mut h = H::new();
    let (ta, out) = h.join(5, "g", "", Some("ia"));
    assert!(out.is_empty(), "static members skip MEMBER_ID_REQUIRED");
    let (tb, _) = h.join(5, "g", "", Some("ib"));
    h.tick_at(T0 + 3_000);
    let out = h.tick_at(T0 + 6_000);
    let a = join_resp(&out, ta).unwrap().member_id.to_string();
    let b = join_resp(&out, tb).unwrap().member_id.to_string();
    assert!(a.starts_with("ia-") && b.starts_with("ib-"));
    h.sync(5, "g", &b, 1, &[]);
    h.sync(5, "g", &a, 1, &[(a.as_str(), b"A"), (b.as_str(), b"B")]);
    assert_eq!(h.c.group_state("g"), Some(GroupState::Stable));
    (h, a, b)
}

#[test]
fn static_member_rejoin_fences_old_id_and_keeps_generation() {
    let (mut h, a, b) = static_stable();
    h.now = T0 + 10_000;
    let (t, out) = h.join(5, "g", "", Some("ib"));
    assert!(
        matches!(&out[0], Output::Persist(GroupRecord::GroupMetadata { generation: 1, .. })),
        "the new member id is persisted before the answer"
    );
    let r = join_resp(&out, t).unwrap();
    let new_b = r.member_id.to_string();
    assert_eq!(r.error_code, 0);
    assert_ne!(new_b, b);
    assert!(new_b.starts_with("ib-"));
    assert_eq!(r.generation_id, 1, "no rebalance");
    assert_eq!(r.leader.as_str(), a);
    assert!(r.members.is_empty());
    assert_eq!(h.c.group_state("g"), Some(GroupState::Stable));

    assert_eq!(h.heartbeat_static("g", &b, "ib", 1), ResponseError::FencedInstanceId.code());
    let (ts, out) = h.sync(5, "g", &new_b, 1, &[]);
    assert_eq!(sync_resp(&out, ts).unwrap().assignment.as_ref(), b"B");
    assert_eq!(h.heartbeat_static("g", &new_b, "ib", 1), 0);
    assert_eq!(h.c.group_generation("g"), Some(1));
}

#[test]
fn static_leader_rejoin_reports_old_leader_before_v9_and_skip_assignment_from_v9() {
    let (mut h, a, _b) = static_stable();
    let (t, out) = h.join(5, "g", "", Some("ia"));
    let r = join_resp(&out, t).unwrap();
    assert_eq!(r.leader.as_str(), a, "old leader id: the client must not reassign");
    assert_ne!(r.member_id.as_str(), a);
    assert!(r.members.is_empty());

    let (t, out) = h.join(9, "g", "", Some("ia"));
    let r = join_resp(&out, t).unwrap();
    assert_eq!(r.leader, r.member_id);
    assert!(r.skip_assignment);
    assert_eq!(r.members.len(), 2);
    assert_eq!(r.generation_id, 1);
}

#[test]
fn static_restart_while_sync_parked_fences_old_id_and_rebalances() {
    let mut h = H::new();
    let (ta, _) = h.join(5, "g", "", Some("ia"));
    let (tb, _) = h.join(5, "g", "", Some("ib"));
    h.tick_at(T0 + 3_000);
    let out = h.tick_at(T0 + 6_000);
    let a = join_resp(&out, ta).unwrap().member_id.to_string();
    let b = join_resp(&out, tb).unwrap().member_id.to_string();
    let (sb, out) = h.sync(5, "g", &b, 1, &[]);
    assert!(out.is_empty());

    // B restarts before the leader's assignment arrived.
    let (tb_new, out) = h.join(5, "g", "", Some("ib"));
    assert_eq!(sync_resp(&out, sb).unwrap().error_code, ResponseError::FencedInstanceId.code());
    assert!(join_resp(&out, tb_new).is_none(), "parked in the new rebalance");
    assert_eq!(h.c.group_state("g"), Some(GroupState::PreparingRebalance));

    // Once the leader rejoins too, generation 2 completes at once.
    let (ta2, out) = h.join(5, "g", &a, Some("ia"));
    let ra = join_resp(&out, ta2).unwrap();
    let rb = join_resp(&out, tb_new).unwrap();
    assert_eq!((ra.generation_id, rb.generation_id), (2, 2));
    assert_eq!(ra.members.len(), 2);
    assert_ne!(rb.member_id.as_str(), b);
}

#[test]
fn absent_static_member_stays_through_rebalance_until_its_session_expires() {
    let (mut h, a, b) = static_stable();
    h.now = T0 + 7_000;
    let (ta, _) = h.join(5, "g", &a, Some("ia"));
    let out = h.tick_at(T0 + 7_000 + REBALANCE as i64);
    let r = join_resp(&out, ta).unwrap();
    assert_eq!(r.generation_id, 2);
    assert_eq!(r.members.len(), 2, "the absent static member keeps its place");
    assert_eq!(h.c.group_members("g"), vec![a, b]);
}
