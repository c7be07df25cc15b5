//! The consumer group protocol (KIP-848): ConsumerGroupHeartbeat, ConsumerGroupDescribe,
//! server-side assignment, member-epoch offset commits, persistence.

use std::collections::HashMap;

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::*;
use crate::coordinator::{ConsumerMemberRecord, GroupRecord, GroupState};

const T1: Uuid = Uuid::from_u128(0x1111);
const T2: Uuid = Uuid::from_u128(0x2222);
const T3: Uuid = Uuid::from_u128(0x3333);
const SESSION_MS: i64 = 45_000;

type Parts = Vec<(Uuid, Vec<i32>)>;

fn catalog(topics: &[(&str, Uuid, i32)]) -> HashMap<String, (Uuid, i32)> {
    topics.iter().map(|(n, id, p)| (n.to_string(), (*id, *p))).collect()
}

/// A coordinator that knows topic "t" (id T1, 6 partitions) and "u" (T2, 3).
fn setup() -> H {
    let mut h = H::new();
    let out = h.c.set_topic_metadata(catalog(&[("t", T1, 6), ("u", T2, 3)]), h.now);
    assert!(out.is_empty());
    h
}

fn join_req(
    member: &str,
    topics: &[&str],
    assignor: Option<&str>,
) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid("cg"))
        .with_member_id(s(member))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(REBALANCE)
        .with_subscribed_topic_names(Some(topics.iter().map(|t| TopicName(s(t))).collect()))
        .with_server_assignor(assignor.map(s))
        .with_topic_partitions(Some(vec![]))
}

fn beat_req(member: &str, epoch: i32, owned: Option<Parts>) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid("cg"))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_topic_partitions(owned.map(|o| {
            o.into_iter()
                .map(|(t, ps)| TopicPartitions::default().with_topic_id(t).with_partitions(ps))
                .collect()
        }))
}

/// Send a ConsumerGroupHeartbeat (v1 unless said otherwise); returns the response and
/// the records persisted with it.
fn hb_v(
    h: &mut H,
    version: i16,
    req: ConsumerGroupHeartbeatRequest,
) -> (ConsumerGroupHeartbeatResponse, Vec<GroupRecord>) {
    let (t, out) = h.run(version, |c, t, now| {
        c.consumer_group_heartbeat(t, version, req, "cli", "/10.0.0.9", now)
    });
    assert_eq!(position_of_respond(&out, t), out.len() - 1, "respond after persist");
    match response(&out, t) {
        Some(ResponseKind::ConsumerGroupHeartbeat(r)) => (r.clone(), persisted(&out)),
        other => panic!("unexpected {other:?}"),
    }
}

fn hb(h: &mut H, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse {
    hb_v(h, 1, req).0
}

/// The assignment in a heartbeat response (`None` = not sent).
fn assignment(r: &ConsumerGroupHeartbeatResponse) -> Option<Parts> {
    r.assignment
        .as_ref()
        .map(|a| a.topic_partitions.iter().map(|tp| (tp.topic_id, tp.partitions.clone())).collect())
}

fn describe(h: &mut H, version: i16, groups: &[&str]) -> ConsumerGroupDescribeResponse {
    let req = ConsumerGroupDescribeRequest::default()
        .with_group_ids(groups.iter().map(|g| gid(g)).collect())
        .with_include_authorized_operations(true);
    let (t, out) = h.run(version, |c, t, now| c.consumer_group_describe(t, version, req, now));
    match response(&out, t) {
        Some(ResponseKind::ConsumerGroupDescribe(r)) => r.clone(),
        other => panic!("unexpected {other:?}"),
    }
}

fn target_of(d: &ConsumerGroupDescribeResponse, member: &str) -> Vec<(String, Vec<i32>)> {
    let m = d.groups[0]
        .members
        .iter()
        .find(|m| m.member_id.as_str() == member)
        .expect("member described");
    m.target_assignment
        .topic_partitions
        .iter()
        .map(|tp| (tp.topic_name.0.to_string(), tp.partitions.clone()))
        .collect()
}

/// "a" alone on topic "t": epoch 1, all six partitions.
fn one_member() -> H {
    let mut h = setup();
    let (r, records) = hb_v(&mut h, 1, join_req("a", &["t"], None));
    assert_eq!(r.error_code, 0);
    assert_eq!(r.member_id.as_deref(), Some("a"));
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])]));
    assert_eq!(records.len(), 1);
    assert!(matches!(
        &records[0],
        GroupRecord::ConsumerGroup { group_epoch: 1, assignment_epoch: 1, members, .. }
            if members.len() == 1
    ));
    h
}

/// "a" and "b" on "t", fully reconciled at group epoch 2: a = 0-2, b = 3-5.
fn two_members() -> H {
    let mut h = one_member();
    // b joins: epoch 2, target a = 0,1,2 / b = 3,4,5; b's partitions are still a's.
    let r = hb(&mut h, join_req("b", &["t"], None));
    assert_eq!((r.error_code, r.member_epoch), (0, 2));
    assert_eq!(assignment(&r), Some(vec![]));
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Reconciling", 2, 2)));

    // a must revoke 3,4,5 first: it stays at epoch 1 and is told its reduced assignment.
    let r = hb(&mut h, beat_req("a", 1, None));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2])]));

    // b still waits (a has not confirmed the revocation).
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!((r.error_code, r.member_epoch, assignment(&r)), (0, 2, None));
    // a reporting it still owns 3 changes nothing.
    let r = hb(&mut h, beat_req("a", 1, Some(vec![(T1, vec![0, 1, 2, 3])])));
    assert_eq!((r.member_epoch, assignment(&r)), (1, None));
    let r = hb(&mut h, beat_req("b", 2, Some(vec![])));
    assert_eq!((r.member_epoch, assignment(&r)), (2, None));

    // a revoked them: it reaches epoch 2 (assignment unchanged, so none sent) ...
    let r = hb(&mut h, beat_req("a", 1, Some(vec![(T1, vec![0, 1, 2])])));
    assert_eq!((r.error_code, r.member_epoch, assignment(&r)), (0, 2, None));
    // ... and b gets 3,4,5.
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!((r.error_code, r.member_epoch), (0, 2));
    assert_eq!(assignment(&r), Some(vec![(T1, vec![3, 4, 5])]));
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Stable", 2, 2)));
    h
}

#[test]
fn one_member_gets_all_partitions() {
    let mut h = one_member();
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Stable", 1, 1)));
    assert_eq!(h.c.group_state("cg"), Some(GroupState::Stable));
    // A plain heartbeat changes nothing: no assignment, nothing persisted.
    let (r, records) = hb_v(&mut h, 1, beat_req("a", 1, None));
    assert_eq!((r.error_code, r.member_epoch, assignment(&r)), (0, 1, None));
    assert!(records.is_empty());
    // A full heartbeat (rebalance timeout, subscription, owned partitions) gets it again.
    let req = beat_req("a", 1, Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])]))
        .with_rebalance_timeout_ms(REBALANCE)
        .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]));
    let r = hb(&mut h, req);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])]));
}

#[test]
fn second_member_gets_partitions_only_after_revocation() {
    let mut h = two_members();
    let d = describe(&mut h, 1, &["cg"]);
    assert_eq!(target_of(&d, "a"), vec![("t".to_string(), vec![0, 1, 2])]);
    assert_eq!(target_of(&d, "b"), vec![("t".to_string(), vec![3, 4, 5])]);
}

#[test]
fn third_member_uniform_is_sticky() {
    let mut h = two_members();
    let r = hb(&mut h, join_req("c", &["t"], None));
    assert_eq!((r.member_epoch, assignment(&r)), (3, Some(vec![])));
    let d = describe(&mut h, 1, &["cg"]);
    // a and b each give up one partition; nothing else moves.
    assert_eq!(target_of(&d, "a"), vec![("t".to_string(), vec![0, 1])]);
    assert_eq!(target_of(&d, "b"), vec![("t".to_string(), vec![3, 4])]);
    assert_eq!(target_of(&d, "c"), vec![("t".to_string(), vec![2, 5])]);
}

#[test]
fn range_assignor_two_topics() {
    let mut h = setup();
    let r = hb(&mut h, join_req("m1", &["t", "u"], Some("range")));
    assert_eq!(r.member_epoch, 1);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5]), (T2, vec![0, 1, 2])]));
    let r = hb(&mut h, join_req("m2", &["u", "t"], Some("range")));
    assert_eq!((r.member_epoch, assignment(&r)), (2, Some(vec![])));
    let d = describe(&mut h, 1, &["cg"]);
    assert_eq!(d.groups[0].assignor_name.as_str(), "range");
    assert_eq!(
        target_of(&d, "m1"),
        vec![("t".to_string(), vec![0, 1, 2]), ("u".to_string(), vec![0, 1])]
    );
    assert_eq!(
        target_of(&d, "m2"),
        vec![("t".to_string(), vec![3, 4, 5]), ("u".to_string(), vec![2])]
    );
    // Reconcile to the end.
    let r = hb(&mut h, beat_req("m1", 1, None));
    assert_eq!(
        (r.member_epoch, assignment(&r)),
        (1, Some(vec![(T1, vec![0, 1, 2]), (T2, vec![0, 1])]))
    );
    let r = hb(&mut h, beat_req("m1", 1, Some(vec![(T1, vec![0, 1, 2]), (T2, vec![0, 1])])));
    assert_eq!(r.member_epoch, 2);
    let r = hb(&mut h, beat_req("m2", 2, Some(vec![])));
    assert_eq!(
        (r.member_epoch, assignment(&r)),
        (2, Some(vec![(T1, vec![3, 4, 5]), (T2, vec![2])]))
    );
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Stable", 2, 2)));
}

#[test]
fn unsupported_assignor_and_invalid_requests() {
    let mut h = setup();
    let r = hb(&mut h, join_req("a", &["t"], Some("sticky")));
    assert_eq!(r.error_code, ResponseError::UnsupportedAssignor.code());
    assert!(r.error_message.is_some());
    assert_eq!(r.member_id, None);
    // v1 requires a client-generated member id.
    let r = hb(&mut h, join_req("", &["t"], None));
    assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
    // Joining needs the rebalance timeout and empty owned partitions.
    let r = hb(&mut h, join_req("a", &["t"], None).with_rebalance_timeout_ms(-1));
    assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
    let r = hb(&mut h, join_req("a", &["t"], None).with_topic_partitions(None));
    assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
    let r = hb(&mut h, beat_req("a", -3, None));
    assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
    // A regex that does not compile (RE2 syntax) is refused; no group is created.
    let r = hb(&mut h, regex_join("a", "t.*("));
    assert_eq!(r.error_code, ResponseError::InvalidRegularExpression.code());
    assert_eq!(
        r.error_message.as_deref().map(|m| m.split(':').next().unwrap().to_string()),
        Some("SubscribedTopicRegex `t.*(` is not a valid regular expression".to_string())
    );
    assert_eq!(h.c.consumer_group_state("cg"), None);
}

/// A v1 join subscribed by regex only, as the Java consumer's `subscribe(Pattern)` sends it.
fn regex_join(member: &str, regex: &str) -> ConsumerGroupHeartbeatRequest {
    join_req(member, &[], None)
        .with_subscribed_topic_names(None)
        .with_subscribed_topic_regex(Some(s(regex)))
}

#[test]
fn a_regex_subscribes_to_every_topic_whose_whole_name_matches() {
    let mut h = H::new();
    h.c.set_topic_metadata(catalog(&[("t", T1, 6), ("u", T2, 3), ("xt", T3, 1)]), h.now);
    let (r, records) = hb_v(&mut h, 1, regex_join("a", "t|u"));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5]), (T2, vec![0, 1, 2])]));
    // The regex is persisted with the member.
    let [GroupRecord::ConsumerGroup { member_regexes, subscription_metadata, .. }] = &records[..]
    else {
        panic!("{records:?}");
    };
    assert_eq!(member_regexes, &vec![("a".to_string(), "t|u".to_string())]);
    assert_eq!(subscription_metadata.len(), 2);
    let d = describe(&mut h, 1, &["cg"]);
    assert_eq!(d.groups[0].members[0].subscribed_topic_regex.as_deref(), Some("t|u"));
    assert!(d.groups[0].members[0].subscribed_topic_names.is_empty());
}

#[test]
fn a_regex_is_re_resolved_when_topics_are_created_and_deleted() {
    let mut h = H::new();
    h.c.set_topic_metadata(catalog(&[("t", T1, 2)]), h.now);
    // Nothing matches yet: the member still gets epoch 1 (not 0, which would read as
    // joining again) and an empty assignment.
    let r = hb(&mut h, regex_join("a", "orders-.*"));
    assert_eq!((r.error_code, r.member_epoch, assignment(&r)), (0, 1, Some(vec![])));
    let r = hb(&mut h, beat_req("a", 1, Some(vec![])));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
    // A matching topic is created: new group epoch, the member gets its partitions.
    let out = h.c.set_topic_metadata(catalog(&[("t", T1, 2), ("orders-eu", T2, 3)]), h.now);
    assert_eq!(out.len(), 1);
    let r = hb(&mut h, beat_req("a", 1, Some(vec![])));
    assert_eq!((r.member_epoch, assignment(&r)), (2, Some(vec![(T2, vec![0, 1, 2])])));
    // It is deleted: the partitions are revoked first (the member stays at epoch 2
    // until it reports owning none), then the member moves to epoch 3.
    h.c.set_topic_metadata(catalog(&[("t", T1, 2)]), h.now);
    let r = hb(&mut h, beat_req("a", 2, Some(vec![(T2, vec![0, 1, 2])])));
    assert_eq!((r.member_epoch, assignment(&r)), (2, Some(vec![])));
    let r = hb(&mut h, beat_req("a", 2, Some(vec![])));
    assert_eq!(r.member_epoch, 3);
    // A topic whose name only contains a match is not subscribed.
    let out = h.c.set_topic_metadata(catalog(&[("t", T1, 2), ("old-orders-eu", T3, 1)]), h.now);
    assert!(out.is_empty());
}

#[test]
fn names_and_regexes_of_several_members_share_the_group() {
    let mut h = setup();
    let r = hb(&mut h, join_req("a", &["t"], None));
    assert_eq!(r.member_epoch, 1);
    let r = hb(&mut h, regex_join("b", "u"));
    assert_eq!((r.member_epoch, assignment(&r)), (2, Some(vec![(T2, vec![0, 1, 2])])));
    let d = describe(&mut h, 1, &["cg"]);
    assert_eq!(target_of(&d, "a"), vec![("t".to_string(), vec![0, 1, 2, 3, 4, 5])]);
    assert_eq!(target_of(&d, "b"), vec![("u".to_string(), vec![0, 1, 2])]);
    // Switching b from its regex to names (an empty regex clears it).
    let r = hb(
        &mut h,
        beat_req("b", 2, Some(vec![(T2, vec![0, 1, 2])]))
            .with_subscribed_topic_regex(Some(s("")))
            .with_subscribed_topic_names(Some(vec![TopicName(s("t"))])),
    );
    assert_eq!(r.error_code, 0);
    let d = describe(&mut h, 1, &["cg"]);
    assert_eq!(d.groups[0].group_epoch, 3);
    assert_eq!(d.groups[0].members[1].subscribed_topic_regex, None);
    assert_eq!(target_of(&d, "b"), vec![("t".to_string(), vec![3, 4, 5])]);
}

#[test]
fn a_member_with_an_empty_subscription_gets_epoch_1_in_a_new_group() {
    let mut h = setup();
    let r = hb(&mut h, join_req("a", &[], None));
    assert_eq!((r.error_code, r.member_epoch, assignment(&r)), (0, 1, Some(vec![])));
    // Its next heartbeat is a plain heartbeat, not a join.
    let r = hb(&mut h, beat_req("a", 1, None));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
}

#[test]
fn v0_join_with_empty_member_id_gets_generated_id() {
    let mut h = setup();
    let (r, _) = hb_v(&mut h, 0, join_req("", &["t"], None));
    assert_eq!(r.error_code, 0);
    let id = r.member_id.as_deref().unwrap().to_string();
    assert_eq!(id, Uuid::from_u64_pair(7, 1).to_string());
    assert_eq!(r.member_epoch, 1);
    let (r, _) = hb_v(&mut h, 0, beat_req(&id, 1, None));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
}

#[test]
fn leave_gives_everything_to_remaining_member() {
    let mut h = two_members();
    let (r, records) = hb_v(&mut h, 1, beat_req("a", -1, None));
    assert_eq!((r.error_code, r.member_epoch), (0, -1));
    assert_eq!(r.member_id.as_deref(), Some("a"));
    assert!(matches!(
        &records[..],
        [GroupRecord::ConsumerGroup { group_epoch: 3, members, .. }]
            if members.len() == 1
    ));
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Reconciling", 3, 3)));
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!(r.member_epoch, 3);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])]));
    // The departed member is unknown now.
    let r = hb(&mut h, beat_req("a", 2, None));
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
    // The last one leaving empties the group; it stays (offsets) and can be deleted.
    hb(&mut h, beat_req("b", -1, None));
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Empty", 4, 4)));
    assert_eq!(h.c.group_state("cg"), Some(GroupState::Empty));
    let (_, out) = h.run(2, |c, t, now| {
        c.delete_groups(
            t,
            2,
            DeleteGroupsRequest::default().with_groups_names(vec![gid("cg")]),
            now,
        )
    });
    assert_eq!(persisted(&out), vec![GroupRecord::GroupTombstone { group: "cg".into() }]);
    assert_eq!(h.c.consumer_group_state("cg"), None);
}

#[test]
fn session_expiry_removes_silent_member() {
    let mut h = two_members();
    // Both last heartbeated at T0; b keeps heartbeating, a goes silent.
    assert_eq!(h.c.next_deadline(), Some(T0 + SESSION_MS));
    h.now = T0 + 30_000;
    hb(&mut h, beat_req("b", 2, None));
    assert!(h.tick_at(T0 + SESSION_MS - 1).is_empty());
    let out = h.tick_at(T0 + SESSION_MS);
    assert!(matches!(
        &out[..],
        [Output::Persist(GroupRecord::ConsumerGroup { group_epoch: 3, members, .. })]
            if members.len() == 1 && members[0].member_id == "b"
    ));
    assert_eq!(h.c.next_deadline(), Some(T0 + 30_000 + SESSION_MS));
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!(r.member_epoch, 3);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])]));
    let r = hb(&mut h, beat_req("a", 2, None));
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
}

#[test]
fn member_not_revoking_in_time_is_fenced() {
    let mut h = one_member();
    hb(&mut h, join_req("b", &["t"], None));
    let r = hb(&mut h, beat_req("a", 1, None));
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2])]));
    // a was told to revoke at T0; rebalance timeout 20 s < session 45 s.
    hb(&mut h, beat_req("b", 2, None));
    assert_eq!(h.c.next_deadline(), Some(T0 + REBALANCE as i64));
    let out = h.tick_at(T0 + REBALANCE as i64);
    assert_eq!(persisted(&out).len(), 1);
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!(r.member_epoch, 3);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])]));
}

#[test]
fn fenced_member_epoch() {
    let mut h = two_members();
    // Ahead of the coordinator.
    let r = hb(&mut h, beat_req("a", 3, None));
    assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
    assert!(r.error_message.is_some());
    // Epoch 0 from a known member is a rejoin (it released everything).
    let r = hb(&mut h, join_req("a", &["t"], None));
    assert_eq!(r.error_code, 0);
    // a rejoined: it released everything and is reconciled again.
    assert_eq!(r.member_epoch, 2);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2])]));

    let r = hb(&mut h, join_req("c", &["t"], None));
    assert_eq!(r.member_epoch, 3);
    // b is at 2 (previous 0): epoch 1 is fenced.
    let r = hb(&mut h, beat_req("b", 1, None));
    assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
    // Move b to epoch 3 (it must give up 5).
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!((r.member_epoch, assignment(&r)), (2, Some(vec![(T1, vec![3, 4])])));
    let r = hb(&mut h, beat_req("b", 2, Some(vec![(T1, vec![3, 4])])));
    assert_eq!(r.member_epoch, 3);
    // Its previous epoch (response lost) is accepted when owning a subset ...
    let r = hb(&mut h, beat_req("b", 2, Some(vec![(T1, vec![3])])));
    assert_eq!((r.error_code, r.member_epoch), (0, 3));
    // ... but not when owning more, or without saying what it owns.
    let r = hb(&mut h, beat_req("b", 2, Some(vec![(T1, vec![3, 5])])));
    assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
    // Unknown member / unknown group.
    let r = hb(&mut h, beat_req("zz", 3, None));
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
    let r = hb(&mut h, beat_req("a", 3, None).with_group_id(gid("nope")));
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
}

#[test]
fn group_max_size() {
    let mut h =
        H::with_config(CoordinatorConfig { max_group_size: 1, ..CoordinatorConfig::default() });
    h.c.set_topic_metadata(catalog(&[("t", T1, 6)]), h.now);
    assert_eq!(hb(&mut h, join_req("a", &["t"], None)).error_code, 0);
    let r = hb(&mut h, join_req("b", &["t"], None));
    assert_eq!(r.error_code, ResponseError::GroupMaxSizeReached.code());
    // A known member may rejoin.
    assert_eq!(hb(&mut h, join_req("a", &["t"], None)).error_code, 0);
}

#[test]
fn static_member_temporary_leave_and_return() {
    let mut h = setup();
    let r = hb(&mut h, join_req("a", &["t"], None).with_instance_id(Some(s("i-a"))));
    assert_eq!(r.member_epoch, 1);
    let r = hb(&mut h, join_req("b", &["t"], None));
    assert_eq!(r.member_epoch, 2);
    hb(&mut h, beat_req("a", 1, None).with_instance_id(Some(s("i-a"))));
    hb(&mut h, beat_req("a", 1, Some(vec![(T1, vec![0, 1, 2])])).with_instance_id(Some(s("i-a"))));
    hb(&mut h, beat_req("b", 2, None));
    // a leaves temporarily (-2): it keeps 0-2, no epoch bump.
    let r = hb(&mut h, beat_req("a", -2, None).with_instance_id(Some(s("i-a"))));
    assert_eq!((r.error_code, r.member_epoch), (0, -2));
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Reconciling", 2, 2)));
    // Another process with the same instance id while a is active would be refused;
    // now it takes over a's assignment at the current epoch.
    let r = hb(&mut h, join_req("a2", &["t"], None).with_instance_id(Some(s("i-a"))));
    assert_eq!((r.error_code, r.member_epoch), (0, 2));
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2])]));
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Stable", 2, 2)));
    // The old id is fenced; the instance is in use.
    let r = hb(&mut h, beat_req("a", 2, None).with_instance_id(Some(s("i-a"))));
    assert_eq!(r.error_code, ResponseError::FencedInstanceId.code());
    let r = hb(&mut h, join_req("a3", &["t"], None).with_instance_id(Some(s("i-a"))));
    assert_eq!(r.error_code, ResponseError::UnreleasedInstanceId.code());
}

#[test]
fn describe_output() {
    let mut h = two_members();
    for version in [0, 1] {
        let d = describe(&mut h, version, &["cg", "nope"]);
        assert_eq!(d.groups.len(), 2);
        let g = &d.groups[0];
        assert_eq!(g.error_code, 0);
        assert_eq!(g.group_id.0.as_str(), "cg");
        assert_eq!(g.group_state.as_str(), "Stable");
        assert_eq!((g.group_epoch, g.assignment_epoch), (2, 2));
        assert_eq!(g.assignor_name.as_str(), "uniform");
        assert_eq!(g.authorized_operations, (1 << 3) | (1 << 6) | (1 << 8));
        let ids: Vec<&str> = g.members.iter().map(|m| m.member_id.as_str()).collect();
        assert_eq!(ids, vec!["a", "b"]);
        let a = &g.members[0];
        assert_eq!(a.member_epoch, 2);
        assert_eq!(a.client_id.as_str(), "cli");
        assert_eq!(a.client_host.as_str(), "/10.0.0.9");
        assert_eq!(a.instance_id, None);
        assert_eq!(a.subscribed_topic_names, vec![TopicName(s("t"))]);
        assert_eq!(a.assignment.topic_partitions.len(), 1);
        assert_eq!(a.assignment.topic_partitions[0].topic_id, T1);
        assert_eq!(a.assignment.topic_partitions[0].topic_name.0.as_str(), "t");
        assert_eq!(a.assignment.topic_partitions[0].partitions, vec![0, 1, 2]);
        assert_eq!(a.assignment, a.target_assignment);
        assert_eq!(a.member_type, if version >= 1 { 1 } else { -1 });
        assert_eq!(d.groups[1].error_code, ResponseError::GroupIdNotFound.code());
    }
    // A classic group is not a consumer group.
    let (mut h, _, _) = H::stable_group();
    let d = describe(&mut h, 1, &["g"]);
    assert_eq!(d.groups[0].error_code, ResponseError::GroupIdNotFound.code());
    assert_eq!(d.groups[0].error_message.as_deref(), Some("Group g is not a consumer group."));
}

#[test]
fn protocols_do_not_mix() {
    // Classic JoinGroup on a consumer group with members.
    let mut h = one_member();
    let (t, out) = h.join(5, "cg", "", None);
    assert_eq!(
        join_resp(&out, t).unwrap().error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    // Consumer heartbeat on a classic group with members.
    let (mut h, _, _) = H::stable_group();
    let r = hb(&mut h, join_req("x", &["t"], None).with_group_id(gid("g")));
    assert_eq!(r.error_code, ResponseError::GroupIdNotFound.code());
    // An empty classic group (simple commits) becomes a consumer group, offsets kept.
    let mut h = setup();
    h.commit(8, "cg", "", -1, &[("t", 0, 42)]);
    assert_eq!(hb(&mut h, join_req("a", &["t"], None)).error_code, 0);
    assert_eq!(h.fetch("cg", Some(&[("t", &[0])])).topics[0].partitions[0].committed_offset, 42);
}

fn commit_code(out: &[Output]) -> i16 {
    match out.last() {
        Some(Output::Respond { response: ResponseKind::OffsetCommit(r), .. }) => {
            r.topics[0].partitions[0].error_code
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn fetch_v9(h: &mut H, member: Option<&str>, epoch: i32) -> OffsetFetchResponseGroup {
    let req = OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(gid("cg"))
        .with_member_id(member.map(s))
        .with_member_epoch(epoch)
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(TopicName(s("t")))
            .with_partition_indexes(vec![0])]))]);
    let (t, out) = h.run(9, |c, t, now| c.offset_fetch(t, 9, req, now));
    match response(&out, t) {
        Some(ResponseKind::OffsetFetch(r)) => r.groups[0].clone(),
        other => panic!("unexpected {other:?}"),
    }
}

use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;

#[test]
fn offset_commit_with_member_epoch() {
    let mut h = two_members();
    let out = h.commit(9, "cg", "a", 2, &[("t", 0, 10)]);
    assert_eq!(commit_code(&out), 0);
    assert_eq!(persisted(&out).len(), 1);
    assert_eq!(
        commit_code(&h.commit(9, "cg", "a", 1, &[("t", 0, 11)])),
        ResponseError::StaleMemberEpoch.code()
    );
    assert_eq!(
        commit_code(&h.commit(9, "cg", "a", 3, &[("t", 0, 11)])),
        ResponseError::FencedMemberEpoch.code()
    );
    assert_eq!(
        commit_code(&h.commit(9, "cg", "zz", 2, &[("t", 0, 11)])),
        ResponseError::UnknownMemberId.code()
    );
    assert_eq!(
        commit_code(&h.commit(8, "cg", "a", 2, &[("t", 0, 11)])),
        ResponseError::UnsupportedVersion.code()
    );
    // Not a simple commit while the group has members.
    assert_eq!(
        commit_code(&h.commit(9, "cg", "", -1, &[("t", 0, 11)])),
        ResponseError::UnknownMemberId.code()
    );

    // OffsetFetch v9 checks the member epoch; without member (admin) it just reads.
    let g = fetch_v9(&mut h, Some("a"), 2);
    assert_eq!((g.error_code, g.topics[0].partitions[0].committed_offset), (0, 10));
    assert_eq!(fetch_v9(&mut h, Some("a"), 1).error_code, ResponseError::StaleMemberEpoch.code());
    assert_eq!(fetch_v9(&mut h, Some("zz"), 2).error_code, ResponseError::UnknownMemberId.code());
    let g = fetch_v9(&mut h, None, -1);
    assert_eq!((g.error_code, g.topics[0].partitions[0].committed_offset), (0, 10));

    // Once everyone left, simple commits are accepted again.
    hb(&mut h, beat_req("a", -1, None));
    hb(&mut h, beat_req("b", -1, None));
    assert_eq!(commit_code(&h.commit(9, "cg", "", -1, &[("t", 0, 12)])), 0);
}

#[test]
fn list_and_describe_groups_show_consumer_groups() {
    let mut h = two_members();
    h.commit(8, "simple", "", -1, &[("t", 0, 1)]);
    let list =
        |h: &mut H, types: &[&str], states: &[&str]| -> Vec<(String, String, String, String)> {
            let req = ListGroupsRequest::default()
                .with_types_filter(types.iter().map(|t| s(t)).collect())
                .with_states_filter(states.iter().map(|t| s(t)).collect());
            let (t, out) = h.run(5, |c, t, now| c.list_groups(t, 5, req, now));
            let Some(ResponseKind::ListGroups(r)) = response(&out, t) else { panic!() };
            r.groups
                .iter()
                .map(|g| {
                    (
                        g.group_id.0.to_string(),
                        g.protocol_type.to_string(),
                        g.group_state.to_string(),
                        g.group_type.to_string(),
                    )
                })
                .collect()
        };
    let cg =
        ("cg".to_string(), "consumer".to_string(), "Stable".to_string(), "consumer".to_string());
    let simple = ("simple".to_string(), "".to_string(), "Empty".to_string(), "classic".to_string());
    assert_eq!(list(&mut h, &[], &[]), vec![cg.clone(), simple.clone()]);
    assert_eq!(list(&mut h, &["Consumer"], &[]), vec![cg.clone()]);
    assert_eq!(list(&mut h, &["classic"], &[]), vec![simple.clone()]);
    assert_eq!(list(&mut h, &[], &["stable"]), vec![cg.clone()]);

    let req = DescribeGroupsRequest::default().with_groups(vec![gid("cg")]);
    let (t, out) = h.run(5, |c, t, now| c.describe_groups(t, 5, req, now));
    let Some(ResponseKind::DescribeGroups(r)) = response(&out, t) else { panic!() };
    let g = &r.groups[0];
    assert_eq!(
        (g.error_code, g.group_state.as_str(), g.protocol_type.as_str(), g.protocol_data.as_str()),
        (0, "Stable", "consumer", "uniform")
    );
    assert_eq!(g.members.len(), 2);
    let mut buf = g.members[1].member_assignment.clone();
    assert_eq!(bytes::Buf::get_i16(&mut buf), 0);
    let a =
        <ConsumerProtocolAssignment as kafka_protocol::protocol::Decodable>::decode(&mut buf, 0)
            .unwrap();
    assert_eq!(a.assigned_partitions.len(), 1);
    assert_eq!(a.assigned_partitions[0].topic.0.as_str(), "t");
    assert_eq!(a.assigned_partitions[0].partitions, vec![3, 4, 5]);
}

#[test]
fn topic_metadata_change_bumps_group_epoch() {
    let mut h = two_members();
    // Unrelated topic: nothing happens.
    let out = h.c.set_topic_metadata(
        catalog(&[("t", T1, 6), ("u", T2, 3), ("v", Uuid::from_u128(9), 1)]),
        h.now,
    );
    assert!(out.is_empty());
    // "t" grows to 8 partitions: epoch 3, the new partitions go out.
    let out = h.c.set_topic_metadata(catalog(&[("t", T1, 8), ("u", T2, 3)]), h.now);
    assert!(matches!(
        &out[..],
        [Output::Persist(GroupRecord::ConsumerGroup { group_epoch: 3, .. })]
    ));
    let r = hb(&mut h, beat_req("a", 2, None));
    assert_eq!((r.member_epoch, assignment(&r)), (3, Some(vec![(T1, vec![0, 1, 2, 6])])));
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!((r.member_epoch, assignment(&r)), (3, Some(vec![(T1, vec![3, 4, 5, 7])])));
    // "t" deleted: everything is revoked.
    h.c.set_topic_metadata(catalog(&[("u", T2, 3)]), h.now);
    let r = hb(&mut h, beat_req("a", 3, None));
    assert_eq!((r.member_epoch, assignment(&r)), (3, Some(vec![])));
    let r = hb(&mut h, beat_req("a", 3, Some(vec![])));
    assert_eq!(r.member_epoch, 4);
}

#[test]
fn consumer_group_record_round_trips() {
    let r = GroupRecord::ConsumerGroup {
        group: "cg".into(),
        group_epoch: 7,
        assignment_epoch: 6,
        current_state_timestamp_ms: Some(T0),
        subscription_metadata: vec![("t".into(), T1, 6), ("u".into(), T2, 3)],
        members: vec![
            ConsumerMemberRecord {
                member_id: "a".into(),
                instance_id: Some("i".into()),
                rack_id: Some("r1".into()),
                client_id: "cli".into(),
                client_host: "/h".into(),
                rebalance_timeout_ms: REBALANCE,
                subscribed_topic_names: vec!["t".into(), "u".into()],
                server_assignor: Some("range".into()),
                member_epoch: 6,
                previous_member_epoch: 5,
                state: 1,
                assigned: vec![(T1, vec![0, 1]), (T2, vec![2])],
                pending_revocation: vec![(T1, vec![2])],
                target: vec![(T1, vec![0, 1])],
            },
            ConsumerMemberRecord {
                member_id: "b".into(),
                instance_id: None,
                rack_id: None,
                client_id: "".into(),
                client_host: "".into(),
                rebalance_timeout_ms: -1,
                subscribed_topic_names: vec![],
                server_assignor: None,
                member_epoch: -2,
                previous_member_epoch: -1,
                state: 0,
                assigned: vec![],
                pending_revocation: vec![],
                target: vec![],
            },
        ],
        member_regexes: vec![("b".into(), "orders-.*".into())],
    };
    let (k, v) = r.encode();
    assert_eq!(GroupRecord::decode(&k, Some(&v)).unwrap(), r);
    assert_eq!(r.group(), "cg");
    // shardlog's own key type (outside Kafka's, so Kafka's formatters skip it); a null
    // value under it is a group tombstone too.
    assert_eq!(k, b"\x7f\xff\x00\x02cg");
    assert_eq!(
        GroupRecord::decode(&k, None).unwrap(),
        GroupRecord::GroupTombstone { group: "cg".into() }
    );
    // A record written before regexes existed ends after the members: it decodes
    // with none. The regex list is a u32 count, then (u32 length + bytes) twice.
    let old_len = v.len() - (4 + 4 + 1 + 4 + "orders-.*".len());
    let GroupRecord::ConsumerGroup { member_regexes, .. } =
        GroupRecord::decode(&k, Some(&v[..old_len])).unwrap()
    else {
        panic!("not a consumer group");
    };
    assert!(member_regexes.is_empty());
    // Every other truncation is an error, never a panic.
    for n in (0..v.len()).filter(|n| *n != old_len) {
        assert!(GroupRecord::decode(&k, Some(&v[..n])).is_err(), "{n}");
    }
}

#[test]
fn restart_restores_group_and_offsets() {
    let mut h = two_members();
    h.commit(9, "cg", "a", 2, &[("t", 0, 10), ("t", 3, 30)]);
    // A member mid-revocation when the broker stops.
    hb(&mut h, join_req("c", &["t"], None));
    hb(&mut h, beat_req("a", 2, None));
    let before = describe(&mut h, 1, &["cg"]);

    let mut h2 = H::new();
    h2.c.set_loading(true, T0);
    let r = hb(&mut h2, beat_req("a", 2, None));
    assert_eq!(r.error_code, ResponseError::CoordinatorLoadInProgress.code());
    // Replay the log through encode/decode.
    for rec in &h.log {
        let (k, v) = rec.encode();
        let value = if rec.is_tombstone() { None } else { Some(&v[..]) };
        h2.c.load(GroupRecord::decode(&k, value).unwrap());
    }
    h2.now = T0 + 1_000;
    h2.c.set_loading(false, h2.now);
    h2.c.set_topic_metadata(catalog(&[("t", T1, 6), ("u", T2, 3)]), h2.now);
    assert_eq!(describe(&mut h2, 1, &["cg"]), before);
    assert_eq!(h2.c.consumer_group_state("cg"), Some(("Reconciling", 3, 3)));
    let f = h2.fetch("cg", None);
    assert_eq!(f.topics[0].partitions.len(), 2);
    assert_eq!(f.topics[0].partitions[1].committed_offset, 30);
    // Members carry on with their epochs: a finishes revoking 2, c gets it.
    h2.now = T0 + 2_000;
    let r = hb(&mut h2, beat_req("a", 2, Some(vec![(T1, vec![0, 1])])));
    assert_eq!((r.error_code, r.member_epoch), (0, 3));
    let r = hb(&mut h2, beat_req("c", 3, None));
    assert_eq!((r.error_code, r.member_epoch, assignment(&r)), (0, 3, Some(vec![(T1, vec![2])])));
    // Sessions were re-armed at load time: b, silent, expires then.
    let out = h2.tick_at(T0 + 1_000 + SESSION_MS);
    assert!(
        matches!(
            &persisted(&out)[..],
            [GroupRecord::ConsumerGroup { group_epoch: 4, members, .. }]
                if members.len() == 2
        ),
        "{out:?}"
    );
    assert_eq!(
        hb(&mut h2, beat_req("b", 2, None)).error_code,
        ResponseError::UnknownMemberId.code()
    );
}

#[test]
fn static_member_not_returning_expires() {
    let mut h = setup();
    hb(&mut h, join_req("a", &["t"], None).with_instance_id(Some(s("i-a"))));
    hb(&mut h, join_req("b", &["t"], None));
    h.now = T0 + 10_000;
    let r = hb(&mut h, beat_req("a", -2, None).with_instance_id(Some(s("i-a"))));
    assert_eq!((r.error_code, r.member_epoch), (0, -2));
    // b's session (last heartbeat T0) ends first; keep it alive.
    h.now = T0 + 40_000;
    hb(&mut h, beat_req("b", 2, None));
    assert_eq!(h.c.next_deadline(), Some(T0 + 10_000 + SESSION_MS));
    let out = h.tick_at(T0 + 10_000 + SESSION_MS);
    assert!(matches!(
        &persisted(&out)[..],
        [GroupRecord::ConsumerGroup { group_epoch: 3, members, .. }]
            if members.len() == 1
    ));
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!(r.member_epoch, 3);
    assert_eq!(assignment(&r), Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])]));
}

/// A KIP-848 group whose record write fails goes back to its last stored record, as a
/// restart would load it (Kafka's coordinator runtime reverts to the last committed
/// offset); a group whose first record failed is gone.
#[test]
fn a_failed_consumer_group_write_puts_the_group_back_to_its_last_stored_record() {
    let mut h = setup();
    let (r, records) = hb_v(&mut h, 1, join_req("a", &["t"], None));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
    assert_eq!(records.len(), 1);
    h.c.group_write_succeeded(&records[0]);
    // b joins; the write of the record that says so fails.
    let (r, records) = hb_v(&mut h, 1, join_req("b", &["t"], None));
    assert_eq!((r.error_code, r.member_epoch), (0, 2));
    assert_eq!(records.len(), 1);
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Reconciling", 2, 2)));
    assert_eq!(h.c.group_write_failed(&records[0], h.now), vec![]);
    assert_eq!(h.c.consumer_group_state("cg"), Some(("Stable", 1, 1)));
    // b is unknown again (it rejoins); a is where the stored record left it.
    let r = hb(&mut h, beat_req("b", 2, None));
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
    let r = hb(&mut h, beat_req("a", 1, Some(vec![(T1, vec![0, 1, 2, 3, 4, 5])])));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
    // A group whose first record failed is gone.
    let (r, records) = hb_v(&mut h, 1, join_req("x", &["t"], None).with_group_id(gid("new")));
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
    assert_eq!(h.c.group_write_failed(&records[0], h.now), vec![]);
    assert_eq!(h.c.consumer_group_state("new"), None);
    // A stored tombstone forgets the record: a failed write after it leaves no group.
    h.c.group_write_succeeded(&GroupRecord::GroupTombstone { group: "cg".into() });
    let (_, records) = hb_v(&mut h, 1, join_req("b", &["t"], None));
    assert_eq!(h.c.group_write_failed(&records[0], h.now), vec![]);
    assert_eq!(h.c.consumer_group_state("cg"), None);
}
