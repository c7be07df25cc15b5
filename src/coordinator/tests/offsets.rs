//! OffsetCommit / OffsetFetch / OffsetDelete / retention.

use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::ResponseError;

use super::*;
use crate::coordinator::{GroupRecord, GroupState};

fn commit_codes(out: &[Output]) -> Vec<i16> {
    match out.last() {
        Some(Output::Respond { response: ResponseKind::OffsetCommit(r), .. }) => {
            r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect()
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn fetched(r: &OffsetFetchResponse) -> Vec<(String, i32, i64)> {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.partition_index, p.committed_offset))
        })
        .collect()
}

#[test]
fn simple_commit_on_unknown_group_is_accepted() {
    let mut h = H::new();
    let out = h.commit(8, "solo", "", -1, &[("t1", 0, 42), ("t1", 1, 7)]);
    assert_eq!(commit_codes(&out), vec![0, 0]);
    let records = persisted(&out);
    assert_eq!(records.len(), 2);
    assert!(matches!(
        &records[0],
        GroupRecord::Offset {
            group,
            topic,
            partition: 0,
            offset: 42,
            leader_epoch: -1,
            commit_timestamp_ms: T0,
            ..
        } if group == "solo" && topic == "t1"
    ));
    assert!(matches!(out.last(), Some(Output::Respond { .. })), "respond after persist");
    assert_eq!(h.c.group_state("solo"), Some(GroupState::Empty));

    let r = h.fetch("solo", Some(&[("t1", &[0, 1, 2])]));
    assert_eq!(r.error_code, 0);
    assert_eq!(fetched(&r), vec![("t1".into(), 0, 42), ("t1".into(), 1, 7), ("t1".into(), 2, -1)]);
    assert_eq!(r.topics[0].partitions[0].metadata.as_deref(), Some("meta"));
    assert_eq!(r.topics[0].partitions[2].metadata.as_deref(), Some(""));
    let all = h.fetch("solo", None);
    assert_eq!(fetched(&all), vec![("t1".into(), 0, 42), ("t1".into(), 1, 7)]);
    assert!(h.fetch("nobody", None).topics.is_empty());
}

#[test]
fn member_commit_generation_checks() {
    let (mut h, a, _b) = H::stable_group();
    let out = h.commit(8, "g", &a, 0, &[("t1", 0, 5)]);
    assert_eq!(commit_codes(&out), vec![ResponseError::IllegalGeneration.code()]);
    assert!(persisted(&out).is_empty());
    let out = h.commit(8, "g", &a, 1, &[("t1", 0, 5)]);
    assert_eq!(commit_codes(&out), vec![0]);
    let out = h.commit(8, "g", "", -1, &[("t1", 0, 6)]);
    assert_eq!(
        commit_codes(&out),
        vec![ResponseError::UnknownMemberId.code()],
        "only members commit to a non-empty group"
    );
    let out = h.commit(8, "g", "stranger", 1, &[("t1", 0, 6)]);
    assert_eq!(commit_codes(&out), vec![ResponseError::UnknownMemberId.code()]);
    let out = h.commit(8, "unknown", "m", 3, &[("t1", 0, 6)]);
    assert_eq!(commit_codes(&out), vec![ResponseError::IllegalGeneration.code()]);
    assert_eq!(fetched(&h.fetch("g", None)), vec![("t1".into(), 0, 5)]);
}

#[test]
fn commit_during_completing_rebalance_is_rebalance_in_progress() {
    let mut h = H::new();
    let (t, _) = h.join(3, "g", "", None);
    let out = h.tick_at(T0 + 3_000);
    let m = join_resp(&out, t).unwrap().member_id.to_string();
    let out = h.commit(8, "g", &m, 1, &[("t1", 0, 1)]);
    assert_eq!(commit_codes(&out), vec![ResponseError::RebalanceInProgress.code()]);
}

#[test]
fn too_large_metadata_is_rejected_per_partition() {
    let mut h = H::with_config(CoordinatorConfig {
        offset_metadata_max_bytes: 3,
        ..CoordinatorConfig::default()
    });
    let out = h.commit(8, "solo", "", -1, &[("t1", 0, 1)]);
    assert_eq!(commit_codes(&out), vec![ResponseError::OffsetMetadataTooLarge.code()]);
}

#[test]
fn offset_fetch_v8_answers_several_groups() {
    let mut h = H::new();
    h.commit(8, "g1", "", -1, &[("t1", 0, 10)]);
    h.commit(8, "g2", "", -1, &[("t2", 3, 20)]);
    let req = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default().with_group_id(gid("g1")).with_topics(None),
        OffsetFetchRequestGroup::default().with_group_id(gid("g2")).with_topics(Some(vec![
            OffsetFetchRequestTopics::default()
                .with_name(TopicName(s("t2")))
                .with_partition_indexes(vec![3, 4]),
        ])),
    ]);
    let out = h.c.offset_fetch(900, 8, req, h.now);
    let Some(Output::Respond { response: ResponseKind::OffsetFetch(r), .. }) = out.first() else {
        panic!("{out:?}")
    };
    let mut b = BytesMut::new();
    r.encode(&mut b, 8).unwrap();
    assert_eq!(r.groups.len(), 2);
    assert_eq!(r.groups[0].topics[0].partitions[0].committed_offset, 10);
    let g2: Vec<i64> =
        r.groups[1].topics[0].partitions.iter().map(|p| p.committed_offset).collect();
    assert_eq!(g2, vec![20, -1]);
}

#[test]
fn offset_fetch_v1_reports_load_in_progress_per_partition() {
    let mut h = H::new();
    h.c.set_loading(true, T0);
    let req = OffsetFetchRequest::default().with_group_id(gid("g")).with_topics(Some(vec![
        OffsetFetchRequestTopic::default()
            .with_name(TopicName(s("t")))
            .with_partition_indexes(vec![0]),
    ]));
    let out = h.c.offset_fetch(1, 1, req, T0);
    let Some(Output::Respond { response: ResponseKind::OffsetFetch(r), .. }) = out.first() else {
        panic!("{out:?}")
    };
    let mut b = BytesMut::new();
    r.encode(&mut b, 1).unwrap();
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        ResponseError::CoordinatorLoadInProgress.code()
    );
}

#[test]
fn simple_consumer_offsets_expire_after_retention() {
    // Check every millisecond so that expiry is observable to the millisecond.
    let mut h = H::with_config(CoordinatorConfig {
        offsets_retention_check_interval_ms: 1,
        ..CoordinatorConfig::default()
    });
    h.commit(8, "solo", "", -1, &[("t1", 0, 42)]);
    let retention = CoordinatorConfig::default().offsets_retention_ms;
    assert!(h.tick_at(T0 + 600_000).is_empty());
    assert!(h.tick_at(T0 + retention - 1).is_empty());
    assert_eq!(fetched(&h.fetch("solo", None)).len(), 1);
    let out = h.tick_at(T0 + retention);
    assert_eq!(
        persisted(&out),
        vec![
            GroupRecord::OffsetTombstone { group: "solo".into(), topic: "t1".into(), partition: 0 },
            GroupRecord::GroupTombstone { group: "solo".into() },
        ]
    );
    assert_eq!(h.c.group_state("solo"), None);
}

#[test]
fn empty_consumer_group_offsets_expire_retention_after_group_emptied() {
    let (mut h, a, b) = H::stable_group_with(CoordinatorConfig {
        offsets_retention_check_interval_ms: 1,
        ..CoordinatorConfig::default()
    });
    h.commit(8, "g", &a, 1, &[("t1", 0, 5)]);
    // Both members leave at T0 + 100000: the group becomes Empty then.
    h.now = T0 + 100_000;
    for m in [&a, &b] {
        let req = LeaveGroupRequest::default().with_group_id(gid("g")).with_member_id(s(m));
        let out = h.c.leave_group(1_000 + h.now as u64, 0, req, h.now);
        assert!(matches!(out.last(), Some(Output::Respond { .. })));
    }
    assert_eq!(h.c.group_state("g"), Some(GroupState::Empty));
    let retention = CoordinatorConfig::default().offsets_retention_ms;
    h.tick_at(T0 + retention + 1);
    assert_eq!(fetched(&h.fetch("g", None)).len(), 1, "retention counts from emptying");
    let out = h.tick_at(T0 + 100_000 + retention);
    assert_eq!(persisted(&out).len(), 2);
    assert_eq!(h.c.group_state("g"), None);
}

#[test]
fn offset_delete_refuses_subscribed_topics_of_active_consumer_group() {
    let (mut h, a, _b) = H::stable_group();
    h.commit(8, "g", &a, 1, &[("t1", 0, 5), ("t2", 0, 9)]);
    let topic = |name: &str| {
        OffsetDeleteRequestTopic::default()
            .with_name(TopicName(s(name)))
            .with_partitions(vec![OffsetDeleteRequestPartition::default().with_partition_index(0)])
    };
    let req = OffsetDeleteRequest::default()
        .with_group_id(gid("g"))
        .with_topics(vec![topic("t1"), topic("t2")]);
    let out = h.c.offset_delete(5, 0, req, h.now);
    assert_eq!(
        persisted(&out),
        vec![GroupRecord::OffsetTombstone { group: "g".into(), topic: "t2".into(), partition: 0 }]
    );
    let Some(Output::Respond { response: ResponseKind::OffsetDelete(r), .. }) = out.last() else {
        panic!("{out:?}")
    };
    assert_eq!(r.error_code, 0);
    assert_eq!(r.topics[0].partitions[0].error_code, ResponseError::GroupSubscribedToTopic.code());
    assert_eq!(r.topics[1].partitions[0].error_code, 0);
    assert_eq!(fetched(&h.fetch("g", None)), vec![("t1".into(), 0, 5)]);

    let req =
        OffsetDeleteRequest::default().with_group_id(gid("none")).with_topics(vec![topic("t1")]);
    let out = h.c.offset_delete(6, 0, req, h.now);
    let Some(Output::Respond { response: ResponseKind::OffsetDelete(r), .. }) = out.last() else {
        panic!("{out:?}")
    };
    assert_eq!(r.error_code, ResponseError::GroupIdNotFound.code());
}

#[test]
fn offsets_of_a_deleted_or_recreated_topic_are_deleted() {
    use std::collections::HashMap;
    let (t1, t2, t3) =
        (uuid::Uuid::from_u128(1), uuid::Uuid::from_u128(2), uuid::Uuid::from_u128(3));
    let catalog = |topics: &[(&str, uuid::Uuid)]| -> HashMap<String, (uuid::Uuid, i32)> {
        topics.iter().map(|(n, id)| (n.to_string(), (*id, 2))).collect()
    };
    let mut h = H::new();
    assert!(h.c.set_topic_metadata(catalog(&[("t", t1), ("u", t2), ("v", t3)]), h.now).is_empty());
    h.commit(8, "g", "", -1, &[("t", 0, 5), ("t", 1, 6), ("u", 0, 7), ("v", 1, 9)]);
    h.commit(8, "h", "", -1, &[("u", 1, 3)]);
    // "t" deleted and created again (new id), "u" deleted, "v" unchanged.
    let out = h.c.set_topic_metadata(catalog(&[("t", uuid::Uuid::from_u128(4)), ("v", t3)]), h.now);
    let tomb = |g: &str, t: &str, p: i32| GroupRecord::OffsetTombstone {
        group: g.into(),
        topic: t.into(),
        partition: p,
    };
    assert_eq!(
        persisted(&out),
        vec![tomb("g", "t", 0), tomb("g", "t", 1), tomb("g", "u", 0), tomb("h", "u", 1)]
    );
    assert_eq!(fetched(&h.fetch("g", None)), vec![("v".into(), 1, 9)]);
    assert!(fetched(&h.fetch("h", None)).is_empty());
    // Both groups are still there (Empty) until DeleteGroups or the periodic cleanup.
    assert_eq!(h.c.group_state("h"), Some(GroupState::Empty));
    // The same catalog again deletes nothing.
    let out = h.c.set_topic_metadata(catalog(&[("t", uuid::Uuid::from_u128(4)), ("v", t3)]), h.now);
    assert!(persisted(&out).is_empty());
}

/// A commit whose write failed is undone: the offset in memory goes back to the one
/// before it (or away, if there was none), unless a later commit replaced it.
#[test]
fn revert_offset_puts_back_what_the_failed_commit_replaced() {
    let mut h = H::new();
    let before_any = h.c.offset_as_record("g", "t", 0);
    let first = persisted(&h.commit(8, "g", "", -1, &[("t", 0, 5)]));
    let five = h.c.offset_as_record("g", "t", 0);
    let failed = persisted(&h.commit(8, "g", "", -1, &[("t", 0, 6)]));
    assert!(h.c.revert_offset(&failed[0], five.clone()));
    assert_eq!(fetched(&h.fetch("g", None)), vec![("t".to_string(), 0, 5)]);

    // A later commit (7) replaced the failed one (8): nothing is undone.
    let failed = persisted(&h.commit(8, "g", "", -1, &[("t", 0, 8)]));
    h.commit(8, "g", "", -1, &[("t", 0, 7)]);
    assert!(!h.c.revert_offset(&failed[0], five));
    assert_eq!(fetched(&h.fetch("g", None)), vec![("t".to_string(), 0, 7)]);

    // The very first commit undone: no offset is left.
    assert!(matches!(before_any, GroupRecord::OffsetTombstone { .. }));
    h.commit(8, "g", "", -1, &[("t", 0, 5)]);
    let again = persisted(&h.commit(8, "g", "", -1, &[("t", 0, 9)]));
    assert!(!h.c.revert_offset(&first[0], before_any.clone()), "not the offset in memory");
    assert!(h.c.revert_offset(&again[0], before_any));
    assert_eq!(fetched(&h.fetch("g", None)), vec![]);
}
