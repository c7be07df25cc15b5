//! LeaveGroup, ListGroups, DescribeGroups, DeleteGroups.

use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::ResponseError;

use super::*;
use crate::coordinator::{GroupRecord, GroupState};

fn only_response(out: &[Output]) -> &ResponseKind {
    match out.last() {
        Some(Output::Respond { response, .. }) => response,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn batched_leave_v3_removes_members_and_empties_group() {
    let (mut h, a, b) = H::stable_group();
    let req = LeaveGroupRequest::default().with_group_id(gid("g")).with_members(vec![
        MemberIdentity::default().with_member_id(s(&a)),
        MemberIdentity::default().with_member_id(s("stranger")),
        MemberIdentity::default().with_member_id(s(&b)),
    ]);
    let out = h.c.leave_group(1, 3, req, h.now);
    assert!(
        matches!(
            &out[0],
            Output::Persist(GroupRecord::GroupMetadata { generation: 2, members, .. })
                if members.is_empty()
        ),
        "{out:?}"
    );
    let ResponseKind::LeaveGroup(r) = only_response(&out) else { panic!() };
    let codes: Vec<i16> = r.members.iter().map(|m| m.error_code).collect();
    assert_eq!(codes, vec![0, ResponseError::UnknownMemberId.code(), 0]);
    assert_eq!(h.c.group_state("g"), Some(GroupState::Empty));
    assert_eq!(h.c.group_generation("g"), Some(2));
}

#[test]
fn leave_v0_reports_member_error_at_top_level() {
    let (mut h, _a, _b) = H::stable_group();
    let req = LeaveGroupRequest::default().with_group_id(gid("g")).with_member_id(s("stranger"));
    let out = h.c.leave_group(1, 0, req, h.now);
    let ResponseKind::LeaveGroup(r) = only_response(&out) else { panic!() };
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
    let mut buf = BytesMut::new();
    only_response(&out).encode(&mut buf, 0).unwrap();
}

#[test]
fn leave_of_follower_answers_leaders_parked_join() {
    let (mut h, a, b) = H::stable_group();
    let (ta, out) = h.join(5, "g", &a, None);
    assert!(out.is_empty());
    let req = LeaveGroupRequest::default().with_group_id(gid("g")).with_member_id(s(&b));
    let out = h.c.leave_group(99, 1, req, h.now);
    let r = join_resp(&out, ta).unwrap();
    assert_eq!((r.error_code, r.generation_id, r.members.len()), (0, 2, 1));
}

#[test]
fn list_groups_with_state_filter() {
    let (mut h, _a, _b) = H::stable_group();
    h.commit(8, "solo", "", -1, &[("t", 0, 1)]);
    let all = h.c.list_groups(1, 4, ListGroupsRequest::default(), h.now);
    let ResponseKind::ListGroups(r) = only_response(&all) else { panic!() };
    let listed: Vec<(&str, &str, &str)> = r
        .groups
        .iter()
        .map(|g| (g.group_id.0.as_str(), g.protocol_type.as_str(), g.group_state.as_str()))
        .collect();
    assert_eq!(listed, vec![("g", "consumer", "Stable"), ("solo", "", "Empty")]);
    let req = ListGroupsRequest::default().with_states_filter(vec![s("empty")]);
    let out = h.c.list_groups(2, 4, req, h.now);
    let ResponseKind::ListGroups(r) = only_response(&out) else { panic!() };
    assert_eq!(r.groups.len(), 1);
    assert_eq!(r.groups[0].group_id.0.as_str(), "solo");
    let mut buf = BytesMut::new();
    only_response(&out).encode(&mut buf, 4).unwrap();
}

#[test]
fn describe_stable_group_and_unknown_group() {
    let (mut h, a, b) = H::stable_group();
    let req = DescribeGroupsRequest::default().with_groups(vec![gid("g"), gid("nope")]);
    let out = h.c.describe_groups(1, 5, req, h.now);
    let resp = only_response(&out);
    let mut buf = BytesMut::new();
    resp.encode(&mut buf, 5).unwrap();
    let ResponseKind::DescribeGroups(r) = resp else { panic!() };
    let g = &r.groups[0];
    assert_eq!(
        (g.error_code, g.group_state.as_str(), g.protocol_type.as_str(), g.protocol_data.as_str()),
        (0, "Stable", "consumer", "range")
    );
    let members: Vec<(&str, &[u8])> =
        g.members.iter().map(|m| (m.member_id.as_str(), m.member_assignment.as_ref())).collect();
    assert_eq!(members, vec![(a.as_str(), &b"A"[..]), (b.as_str(), &b"B"[..])]);
    assert_eq!(g.members[0].client_host.as_str(), "/10.0.0.1");
    assert_eq!((r.groups[1].error_code, r.groups[1].group_state.as_str()), (0, "Dead"));

    let req = DescribeGroupsRequest::default().with_groups(vec![gid("nope")]);
    let out = h.c.describe_groups(2, 6, req, h.now);
    let ResponseKind::DescribeGroups(r) = only_response(&out) else { panic!() };
    assert_eq!(r.groups[0].error_code, ResponseError::GroupIdNotFound.code());
}

#[test]
fn delete_groups_only_deletes_empty_groups() {
    let (mut h, _a, _b) = H::stable_group();
    h.commit(8, "solo", "", -1, &[("t", 0, 1)]);
    let req =
        DeleteGroupsRequest::default().with_groups_names(vec![gid("g"), gid("solo"), gid("nope")]);
    let out = h.c.delete_groups(1, 2, req, h.now);
    assert_eq!(
        persisted(&out),
        vec![
            GroupRecord::OffsetTombstone { group: "solo".into(), topic: "t".into(), partition: 0 },
            GroupRecord::GroupTombstone { group: "solo".into() },
        ]
    );
    let ResponseKind::DeleteGroups(r) = only_response(&out) else { panic!() };
    let codes: Vec<i16> = r.results.iter().map(|x| x.error_code).collect();
    assert_eq!(
        codes,
        vec![ResponseError::NonEmptyGroup.code(), 0, ResponseError::GroupIdNotFound.code()]
    );
    assert_eq!(h.c.group_state("solo"), None);
    assert_eq!(h.c.group_state("g"), Some(GroupState::Stable));
}

#[test]
fn deleting_the_last_offset_keeps_the_group_until_deleted_or_cleaned_up() {
    use kafka_protocol::messages::offset_delete_request::{
        OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    };
    use kafka_protocol::messages::{OffsetDeleteRequest, TopicName};
    let mut h = H::new();
    let delete_offset = |h: &mut H, group: &str| {
        let req = OffsetDeleteRequest::default().with_group_id(gid(group)).with_topics(vec![
            OffsetDeleteRequestTopic::default().with_name(TopicName(s("t"))).with_partitions(vec![
                OffsetDeleteRequestPartition::default().with_partition_index(0),
            ]),
        ]);
        let out = h.c.offset_delete(1, 0, req, h.now);
        let ResponseKind::OffsetDelete(r) = only_response(&out) else { panic!("{out:?}") };
        assert_eq!((r.error_code, r.topics[0].partitions[0].error_code), (0, 0));
        persisted(&out)
    };
    h.commit(8, "solo", "", -1, &[("t", 0, 1)]);
    assert_eq!(
        delete_offset(&mut h, "solo"),
        vec![GroupRecord::OffsetTombstone {
            group: "solo".into(),
            topic: "t".into(),
            partition: 0
        }]
    );
    // Still there, Empty, and DeleteGroups deletes it (was GROUP_ID_NOT_FOUND).
    assert_eq!(h.c.group_state("solo"), Some(GroupState::Empty));
    let req = DeleteGroupsRequest::default().with_groups_names(vec![gid("solo")]);
    let out = h.c.delete_groups(2, 2, req, h.now);
    let ResponseKind::DeleteGroups(r) = only_response(&out) else { panic!() };
    assert_eq!(r.results[0].error_code, 0);
    assert_eq!(persisted(&out), vec![GroupRecord::GroupTombstone { group: "solo".into() }]);
    assert_eq!(h.c.group_state("solo"), None);

    // Left alone, the empty group goes at the next periodic cleanup.
    h.commit(8, "left", "", -1, &[("t", 0, 1)]);
    delete_offset(&mut h, "left");
    let interval = CoordinatorConfig::default().offsets_retention_check_interval_ms;
    let out = h.tick_at(h.now + interval + 1);
    assert_eq!(persisted(&out), vec![GroupRecord::GroupTombstone { group: "left".into() }]);
    assert_eq!(h.c.group_state("left"), None);
}
