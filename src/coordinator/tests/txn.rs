//! TxnOffsetCommit, pending transactional offsets and transaction markers
//! (`complete_transaction`), their replay, and how OffsetFetch (require_stable),
//! DeleteGroups, OffsetDelete and retention treat them. Expected values follow Kafka's
//! `OffsetMetadataManager` (commitTransactionalOffset, replay,
//! replayEndTransactionMarker, fetchOffsets, deleteAllOffsets, cleanupExpiredOffsets).

use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::ResponseError;

use super::*;
use crate::coordinator::{GroupRecord, GroupState};

/// Every group is in the partition being completed.
fn all(_: &str) -> bool {
    true
}

/// A TxnOffsetCommit of producer `pid` (epoch 1) for `offsets` (metadata "m").
fn txn_req(
    group: &str,
    pid: i64,
    member: &str,
    generation: i32,
    offsets: &[(&str, i32, i64)],
) -> TxnOffsetCommitRequest {
    let mut topics: Vec<TxnOffsetCommitRequestTopic> = Vec::new();
    for (t, p, o) in offsets {
        let part = TxnOffsetCommitRequestPartition::default()
            .with_partition_index(*p)
            .with_committed_offset(*o)
            .with_committed_leader_epoch(3)
            .with_committed_metadata(Some(s("m")));
        match topics.iter_mut().find(|x| x.name.0.as_str() == *t) {
            Some(x) => x.partitions.push(part),
            None => topics.push(
                TxnOffsetCommitRequestTopic::default()
                    .with_name(TopicName(s(t)))
                    .with_partitions(vec![part]),
            ),
        }
    }
    TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(s("tx")))
        .with_group_id(gid(group))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(1)
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_topics(topics)
}

/// Runs a TxnOffsetCommit at `version`; returns its outputs.
fn txn(h: &mut H, version: i16, req: TxnOffsetCommitRequest) -> Vec<Output> {
    h.run(version, |c, t, now| c.txn_offset_commit(t, version, req, now)).1
}

/// [`txn`] of a simple (member-less) v3 commit; returns the partition error codes.
fn txn_simple(h: &mut H, group: &str, pid: i64, offsets: &[(&str, i32, i64)]) -> Vec<i16> {
    codes(&txn(h, 3, txn_req(group, pid, "", -1, offsets)))
}

fn codes(out: &[Output]) -> Vec<i16> {
    match out.last() {
        Some(Output::Respond { response: ResponseKind::TxnOffsetCommit(r), .. }) => {
            r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect()
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// OffsetFetch v7 of `group`'s partitions `ps` of topic "t": (partition, offset, error).
fn fetch(h: &mut H, group: &str, ps: &[i32], require_stable: bool) -> Vec<(i32, i64, i16)> {
    let req = OffsetFetchRequest::default()
        .with_group_id(gid(group))
        .with_require_stable(require_stable)
        .with_topics(Some(vec![
            kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic::default()
                .with_name(TopicName(s("t")))
                .with_partition_indexes(ps.to_vec()),
        ]));
    let (_, out) = h.run(7, |c, t, now| c.offset_fetch(t, 7, req, now));
    let Some(Output::Respond { response: ResponseKind::OffsetFetch(r), .. }) = out.last() else {
        panic!("{out:?}")
    };
    r.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.committed_offset, p.error_code))
        .collect()
}

const UNSTABLE: i16 = 88;

#[test]
fn a_txn_commit_is_one_transactional_write_and_pending_until_its_commit_marker() {
    let mut h = H::new();
    let out = txn(&mut h, 3, txn_req("g", 7, "", -1, &[("t", 0, 10), ("t", 1, 11)]));
    assert_eq!(codes(&out), vec![0, 0]);
    let record = |partition, offset| GroupRecord::Offset {
        group: "g".into(),
        topic: "t".into(),
        partition,
        offset,
        leader_epoch: 3,
        metadata: "m".into(),
        commit_timestamp_ms: T0,
        expire_timestamp_ms: None,
    };
    assert_eq!(
        out[0],
        Output::PersistTransactional {
            producer_id: 7,
            producer_epoch: 1,
            records: vec![record(0, 10), record(1, 11)],
        }
    );
    assert_eq!(out.len(), 2, "the response comes after the write");
    // The unknown group was created, as a simple group.
    assert_eq!(h.c.group_state("g"), Some(GroupState::Empty));
    assert_eq!(h.c.pending_offset(7, "g", "t", 1), Some((11, "m".into())));
    // Invisible to OffsetFetch; unstable when the fetch requires stable offsets.
    assert_eq!(fetch(&mut h, "g", &[0, 1, 2], false), vec![(0, -1, 0), (1, -1, 0), (2, -1, 0)]);
    assert_eq!(
        fetch(&mut h, "g", &[0, 1, 2], true),
        vec![(0, -1, UNSTABLE), (1, -1, UNSTABLE), (2, -1, 0)]
    );
    h.c.complete_transaction(7, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0, 1, 2], true), vec![(0, 10, 0), (1, 11, 0), (2, -1, 0)]);
    assert_eq!(h.c.pending_offset(7, "g", "t", 1), None);
}

#[test]
fn an_abort_marker_drops_the_pending_offsets_and_keeps_the_committed_ones() {
    let mut h = H::new();
    h.commit(8, "g", "", -1, &[("t", 0, 4)]);
    assert_eq!(txn_simple(&mut h, "g", 7, &[("t", 0, 10)]), vec![0]);
    assert_eq!(fetch(&mut h, "g", &[0], false), vec![(0, 4, 0)]);
    assert_eq!(fetch(&mut h, "g", &[0], true), vec![(0, -1, UNSTABLE)]);
    h.c.complete_transaction(7, false, &all);
    assert_eq!(fetch(&mut h, "g", &[0], true), vec![(0, 4, 0)]);
    // A second marker for the same producer finds nothing and changes nothing.
    h.c.complete_transaction(7, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0], true), vec![(0, 4, 0)]);
}

#[test]
fn two_producers_interleaved_end_independently() {
    let mut h = H::new();
    assert_eq!(txn_simple(&mut h, "g", 1, &[("t", 0, 5)]), vec![0]);
    assert_eq!(txn_simple(&mut h, "g", 2, &[("t", 1, 6)]), vec![0]);
    assert_eq!(txn_simple(&mut h, "g", 2, &[("t", 0, 7)]), vec![0]);
    // Producer 1 aborts: partition 0 is still unstable (producer 2 has it pending).
    h.c.complete_transaction(1, false, &all);
    assert_eq!(fetch(&mut h, "g", &[0, 1], true), vec![(0, -1, UNSTABLE), (1, -1, UNSTABLE)]);
    h.c.complete_transaction(2, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0, 1], true), vec![(0, 7, 0), (1, 6, 0)]);
}

#[test]
fn a_committed_transaction_does_not_replace_a_later_plain_commit() {
    let mut h = H::new();
    // Transactional 5, then a plain commit of 9: the later one (9) stays.
    assert_eq!(txn_simple(&mut h, "g", 1, &[("t", 0, 5)]), vec![0]);
    h.commit(8, "g", "", -1, &[("t", 0, 9)]);
    h.c.complete_transaction(1, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0], false), vec![(0, 9, 0)]);
    // A plain commit of 9, then transactional 5: the later one (5) wins.
    h.commit(8, "g", "", -1, &[("t", 1, 9)]);
    assert_eq!(txn_simple(&mut h, "g", 1, &[("t", 1, 5)]), vec![0]);
    h.c.complete_transaction(1, true, &all);
    assert_eq!(fetch(&mut h, "g", &[1], false), vec![(1, 5, 0)]);
}

#[test]
fn a_marker_ends_the_transaction_of_its_partitions_groups_only() {
    let mut h = H::new();
    txn_simple(&mut h, "a", 1, &[("t", 0, 5)]);
    txn_simple(&mut h, "b", 1, &[("t", 0, 6)]);
    h.c.complete_transaction(1, true, &|g: &str| g == "a");
    assert_eq!(fetch(&mut h, "a", &[0], true), vec![(0, 5, 0)]);
    assert_eq!(fetch(&mut h, "b", &[0], true), vec![(0, -1, UNSTABLE)]);
    h.c.complete_transaction(1, true, &|g: &str| g == "b");
    assert_eq!(fetch(&mut h, "b", &[0], true), vec![(0, 6, 0)]);
}

#[test]
fn txn_commit_validation_follows_kafkas_classic_group_rules() {
    let (mut h, a, _b) = H::stable_group();
    let code = |h: &mut H, v, member: &str, generation| {
        codes(&txn(h, v, txn_req("g", 3, member, generation, &[("t", 0, 1), ("u", 2, 1)])))
    };
    assert_eq!(code(&mut h, 3, &a, 1), vec![0, 0]);
    let illegal = ResponseError::IllegalGeneration.code();
    assert_eq!(code(&mut h, 3, &a, 2), vec![illegal, illegal], "the whole request fails");
    let unknown = ResponseError::UnknownMemberId.code();
    assert_eq!(code(&mut h, 3, "stranger", 1), vec![unknown, unknown]);
    // Without a member: accepted even though the group has members (v0-2 carry none,
    // and v3 may send none).
    assert_eq!(code(&mut h, 3, "", -1), vec![0, 0]);
    assert_eq!(code(&mut h, 0, &a, 5), vec![0, 0], "v0-2 ignore member and generation");
    // An unknown group with a generation: ILLEGAL_GENERATION, and it is not created.
    let out = txn(&mut h, 3, txn_req("nobody", 3, "m", 1, &[("t", 0, 1)]));
    assert_eq!(codes(&out), vec![illegal]);
    assert_eq!(h.c.group_state("nobody"), None);
    // An empty group id, a producer id of -1.
    let out = txn(&mut h, 3, txn_req("", 3, "", -1, &[("t", 0, 1)]));
    assert_eq!(codes(&out), vec![ResponseError::InvalidGroupId.code()]);
    let out = txn(&mut h, 3, txn_req("g", -1, "", -1, &[("t", 0, 1)]));
    assert_eq!(codes(&out), vec![ResponseError::InvalidProducerIdMapping.code()]);
    assert_eq!(out.len(), 1, "nothing written");
}

#[test]
fn txn_commit_is_accepted_while_the_group_completes_its_rebalance() {
    let mut h = H::new();
    let (t, _) = h.join(3, "g", "", None);
    let out = h.tick_at(T0 + 3_000);
    let m = join_resp(&out, t).unwrap().member_id.to_string();
    assert_eq!(h.c.group_state("g"), Some(GroupState::CompletingRebalance));
    assert_eq!(codes(&txn(&mut h, 3, txn_req("g", 3, &m, 1, &[("t", 0, 1)]))), vec![0]);
}

#[test]
fn too_large_metadata_is_refused_per_partition() {
    let mut h = H::with_config(CoordinatorConfig {
        offset_metadata_max_bytes: 0,
        ..CoordinatorConfig::default()
    });
    let out = txn(&mut h, 3, txn_req("g", 3, "", -1, &[("t", 0, 1)]));
    assert_eq!(codes(&out), vec![ResponseError::OffsetMetadataTooLarge.code()]);
    assert_eq!(out.len(), 1, "nothing written");
}

#[test]
fn replay_keeps_a_transactions_offsets_pending_until_its_marker() {
    let mut h = H::new();
    let offset = |partition, offset| GroupRecord::Offset {
        group: "g".into(),
        topic: "t".into(),
        partition,
        offset,
        leader_epoch: -1,
        metadata: String::new(),
        commit_timestamp_ms: T0,
        expire_timestamp_ms: None,
    };
    h.c.set_loading(true, T0);
    // Log: 0 plain commit p0=1; 1-2 txn of producer 5 (p0=2, p1=3); 3 txn of producer 6
    // (p2=4); 4 plain commit p1=9; 5 COMMIT of 5; 6 txn of producer 8 (p3=7), 7 ABORT
    // of 8. Producer 6 has no marker.
    h.c.replay(0, None, offset(0, 1));
    h.c.replay(1, Some(5), offset(0, 2));
    h.c.replay(2, Some(5), offset(1, 3));
    h.c.replay(3, Some(6), offset(2, 4));
    h.c.replay(4, None, offset(1, 9));
    h.c.complete_transaction(5, true, &all);
    h.c.replay(6, Some(8), offset(3, 7));
    h.c.complete_transaction(8, false, &all);
    h.c.set_loading(false, T0);
    // p0: the commit (offset 1) is later than the plain one (0); p1: the plain commit
    // at offset 4 is later than the transactional one at 2; p2: still pending; p3:
    // aborted.
    assert_eq!(
        fetch(&mut h, "g", &[0, 1, 2, 3], false),
        vec![(0, 2, 0), (1, 9, 0), (2, -1, 0), (3, -1, 0)]
    );
    assert_eq!(fetch(&mut h, "g", &[2], true), vec![(2, -1, UNSTABLE)]);
    // A commit after start-up counts as later than every replayed record.
    assert_eq!(txn_simple(&mut h, "g", 6, &[("t", 0, 100)]), vec![0]);
    h.commit(8, "g", "", -1, &[("t", 0, 50)]);
    h.c.complete_transaction(6, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0, 2], false), vec![(0, 50, 0), (2, 4, 0)]);
}

#[test]
fn a_replayed_offset_tombstone_deletes_the_pending_offsets_of_its_partition() {
    let mut h = H::new();
    txn_simple(&mut h, "g", 5, &[("t", 0, 2), ("t", 1, 3)]);
    h.c.replay(
        9,
        None,
        GroupRecord::OffsetTombstone { group: "g".into(), topic: "t".into(), partition: 0 },
    );
    h.c.complete_transaction(5, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0, 1], false), vec![(0, -1, 0), (1, 3, 0)]);
}

#[test]
fn deleting_a_group_deletes_its_pending_offsets_too() {
    let mut h = H::new();
    h.commit(8, "g", "", -1, &[("t", 0, 1)]);
    txn_simple(&mut h, "g", 3, &[("t", 0, 2), ("t", 1, 3)]);
    let req = DeleteGroupsRequest::default().with_groups_names(vec![gid("g")]);
    let (_, out) = h.run(2, |c, t, now| c.delete_groups(t, 2, req, now));
    let tomb = |partition| GroupRecord::OffsetTombstone {
        group: "g".into(),
        topic: "t".into(),
        partition,
    };
    // The committed offset's tombstone, one for the partition with only a pending
    // offset, then the group's.
    assert_eq!(
        persisted(&out),
        vec![tomb(0), tomb(1), GroupRecord::GroupTombstone { group: "g".into() }]
    );
    assert_eq!(fetch(&mut h, "g", &[0, 1], true), vec![(0, -1, 0), (1, -1, 0)]);
    // The producer's commit then finds nothing to commit.
    h.c.complete_transaction(3, true, &all);
    assert_eq!(h.c.group_state("g"), None);
    assert_eq!(fetch(&mut h, "g", &[0, 1], false), vec![(0, -1, 0), (1, -1, 0)]);
}

#[test]
fn offset_delete_writes_a_tombstone_for_a_pending_only_partition() {
    let mut h = H::new();
    txn_simple(&mut h, "g", 3, &[("t", 0, 2)]);
    let req = OffsetDeleteRequest::default().with_group_id(gid("g")).with_topics(vec![
        OffsetDeleteRequestTopic::default().with_name(TopicName(s("t"))).with_partitions(vec![
            OffsetDeleteRequestPartition::default().with_partition_index(0),
            OffsetDeleteRequestPartition::default().with_partition_index(1),
        ]),
    ]);
    let (_, out) = h.run(0, |c, t, now| c.offset_delete(t, 0, req, now));
    assert_eq!(
        persisted(&out),
        vec![GroupRecord::OffsetTombstone { group: "g".into(), topic: "t".into(), partition: 0 }]
    );
    h.c.complete_transaction(3, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0], false), vec![(0, -1, 0)]);
}

#[test]
fn retention_keeps_offsets_and_the_group_while_a_transaction_is_open() {
    let mut h = H::with_config(CoordinatorConfig {
        offsets_retention_check_interval_ms: 1,
        ..CoordinatorConfig::default()
    });
    h.commit(8, "g", "", -1, &[("t", 0, 1), ("t", 1, 1)]);
    txn_simple(&mut h, "g", 3, &[("t", 0, 2)]);
    let retention = CoordinatorConfig::default().offsets_retention_ms;
    // Partition 1 expires; partition 0 has a pending offset and stays, so does the group.
    let out = h.tick_at(T0 + retention);
    assert_eq!(
        persisted(&out),
        vec![GroupRecord::OffsetTombstone { group: "g".into(), topic: "t".into(), partition: 1 }]
    );
    assert_eq!(fetch(&mut h, "g", &[0], false), vec![(0, 1, 0)]);
    // Aborted: partition 0 expires on the next pass, and the group goes with it.
    h.c.complete_transaction(3, false, &all);
    let out = h.tick_at(T0 + retention + 1);
    assert_eq!(
        persisted(&out),
        vec![
            GroupRecord::OffsetTombstone { group: "g".into(), topic: "t".into(), partition: 0 },
            GroupRecord::GroupTombstone { group: "g".into() },
        ]
    );
}

#[test]
fn all_offsets_expired_keep_the_group_while_a_transaction_is_open() {
    let mut h = H::with_config(CoordinatorConfig {
        offsets_retention_check_interval_ms: 1,
        ..CoordinatorConfig::default()
    });
    h.commit(8, "g", "", -1, &[("t", 1, 1)]);
    txn_simple(&mut h, "g", 3, &[("t", 0, 2)]);
    let retention = CoordinatorConfig::default().offsets_retention_ms;
    let out = h.tick_at(T0 + retention);
    assert_eq!(
        persisted(&out),
        vec![GroupRecord::OffsetTombstone { group: "g".into(), topic: "t".into(), partition: 1 }]
    );
    assert_eq!(h.c.group_state("g"), Some(GroupState::Empty));
    h.c.complete_transaction(3, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0], false), vec![(0, 2, 0)]);
}

#[test]
fn a_failed_transactional_write_takes_its_pending_offsets_back() {
    let mut h = H::new();
    let out = txn(&mut h, 3, txn_req("g", 3, "", -1, &[("t", 0, 2)]));
    let Output::PersistTransactional { producer_id, records, .. } = &out[0] else {
        panic!("{out:?}")
    };
    h.c.transactional_write_failed(*producer_id, records);
    assert_eq!(h.c.pending_offset(3, "g", "t", 0), None);
    assert_eq!(fetch(&mut h, "g", &[0], true), vec![(0, -1, 0)]);
}

#[test]
fn a_reverted_commit_keeps_its_place_in_log_order() {
    let mut h = H::new();
    // Plain 1, transactional 2, plain 3 whose write fails: 1 is back, and the
    // transaction's 2, later in the log than 1, wins at the commit marker.
    h.commit(8, "g", "", -1, &[("t", 0, 1)]);
    let one = h.c.offset_as_record("g", "t", 0);
    txn_simple(&mut h, "g", 3, &[("t", 0, 2)]);
    let failed = persisted(&h.commit(8, "g", "", -1, &[("t", 0, 3)]));
    assert!(h.c.revert_offset(&failed[0], one));
    assert_eq!(fetch(&mut h, "g", &[0], false), vec![(0, 1, 0)]);
    h.c.complete_transaction(3, true, &all);
    assert_eq!(fetch(&mut h, "g", &[0], false), vec![(0, 2, 0)]);
}

#[test]
fn a_consumer_group_member_commits_with_its_member_epoch() {
    let mut h = H::new();
    let join = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid("cg"))
        .with_member_id(s("a"))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(REBALANCE)
        .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]))
        .with_topic_partitions(Some(vec![]));
    let (_, out) = h.run(1, |c, t, now| c.consumer_group_heartbeat(t, 1, join, "cli", "/h", now));
    let Some(Output::Respond { response: ResponseKind::ConsumerGroupHeartbeat(r), .. }) =
        out.last()
    else {
        panic!("{out:?}")
    };
    assert_eq!((r.error_code, r.member_epoch), (0, 1));
    let code = |h: &mut H, v, member: &str, epoch| {
        codes(&txn(h, v, txn_req("cg", 3, member, epoch, &[("t", 0, 1)])))
    };
    assert_eq!(code(&mut h, 3, "a", 1), vec![0]);
    // A stale epoch is ILLEGAL_GENERATION for a transactional commit (Kafka maps
    // STALE_MEMBER_EPOCH so); a newer one is FENCED_MEMBER_EPOCH.
    assert_eq!(code(&mut h, 3, "a", 0), vec![ResponseError::IllegalGeneration.code()]);
    assert_eq!(code(&mut h, 3, "a", 2), vec![ResponseError::FencedMemberEpoch.code()]);
    assert_eq!(code(&mut h, 3, "b", 1), vec![ResponseError::UnknownMemberId.code()]);
    // Without a member id (v0-2), a group with members refuses it.
    assert_eq!(code(&mut h, 2, "a", 1), vec![ResponseError::UnknownMemberId.code()]);
}
