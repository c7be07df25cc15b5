//! What a group response says when the group-state write it waited for failed.
//!
//! Kafka's coordinator answers a request whose `__consumer_offsets` append failed with
//! an error instead of the result; the group coordinator of Kafka 3.7+ maps a storage
//! failure (KAFKA_STORAGE_ERROR, NOT_LEADER_OR_FOLLOWER) to NOT_COORDINATOR
//! (`CoordinatorOperationExceptionHelper`). The client then looks the coordinator
//! up again and retries, so it is never told that an offset or an assignment is stored
//! when it is not. [`GroupCoordinator`](super::GroupCoordinator) has already changed
//! its memory by then (it does no I/O): a commit is undone
//! ([`GroupCoordinator::revert_offset`](super::GroupCoordinator::revert_offset)); a
//! classic group whose SyncGroup assignment write failed rebalances (Kafka's
//! `resetAndPropagateAssignmentError`); a KIP-848 group goes back to its last stored
//! record, as Kafka's coordinator runtime reverts to its last committed offset
//! ([`GroupCoordinator::group_write_failed`](super::GroupCoordinator::group_write_failed)).
//! The responses of the group's requests that came in while the failed write was in
//! flight fail too (the group host, `shard/groups.rs`).

use kafka_protocol::messages::ResponseKind;
use kafka_protocol::ResponseError;

use super::consumer::ConsumerGroup;
use super::ctx::Ctx;
use super::group::{Group, GroupKind};
use super::state::GroupState;
use super::{GroupCoordinator, GroupRecord, Output};

/// The error a response gets when its write failed: NOT_COORDINATOR (16), as Kafka.
pub const FAILED_WRITE_ERROR: ResponseError = ResponseError::NotCoordinator;

/// Rewrites `response` to report [`FAILED_WRITE_ERROR`] where it reports success (an
/// error code of 0; other errors, such as OFFSET_METADATA_TOO_LARGE, stay): the
/// top-level code and every per-partition or per-group code of the responses of
/// requests that write group state (OffsetCommit, TxnOffsetCommit, SyncGroup,
/// JoinGroup, LeaveGroup, DeleteGroups, OffsetDelete, ConsumerGroupHeartbeat). A SyncGroup or
/// ConsumerGroupHeartbeat response that failed loses its assignment. Other responses
/// (reads) are left as they are.
pub fn answer_failed_write(response: &mut ResponseKind) {
    answer_failed_write_with(response, FAILED_WRITE_ERROR)
}

/// [`answer_failed_write`] with `error` instead of [`FAILED_WRITE_ERROR`]: for a
/// TxnOffsetCommit whose batch the log refused with INVALID_PRODUCER_EPOCH (Kafka
/// passes that error through, `CoordinatorOperationExceptionHelper`).
pub fn answer_failed_write_with(response: &mut ResponseKind, error: ResponseError) {
    // Sets a success code to the failure; true if it did.
    let fail = |error_code: &mut i16| -> bool {
        let ok = *error_code == 0;
        if ok {
            *error_code = error.code();
        }
        ok
    };
    match response {
        ResponseKind::OffsetCommit(r) => {
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                fail(&mut p.error_code);
            }
        }
        ResponseKind::TxnOffsetCommit(r) => {
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                fail(&mut p.error_code);
            }
        }
        ResponseKind::SyncGroup(r) => {
            let failed = fail(&mut r.error_code);
            if failed {
                r.assignment = Default::default();
            }
        }
        ResponseKind::JoinGroup(r) => {
            let failed = fail(&mut r.error_code);
            if failed {
                r.members.clear();
            }
        }
        ResponseKind::LeaveGroup(r) => {
            fail(&mut r.error_code);
            for m in &mut r.members {
                fail(&mut m.error_code);
            }
        }
        ResponseKind::DeleteGroups(r) => {
            for g in &mut r.results {
                fail(&mut g.error_code);
            }
        }
        ResponseKind::OffsetDelete(r) => {
            fail(&mut r.error_code);
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                fail(&mut p.error_code);
            }
        }
        ResponseKind::ConsumerGroupHeartbeat(r) => {
            let failed = fail(&mut r.error_code);
            if failed {
                r.error_message = Some(kafka_protocol::protocol::StrBytes::from_static_str(
                    "the group state could not be stored",
                ));
                r.assignment = None;
            }
        }
        _ => {}
    }
}

impl GroupCoordinator {
    /// `record` is stored (written and acknowledged by the log, or replayed at start):
    /// a KIP-848 group's record is what a later failed write puts it back to.
    pub fn group_write_succeeded(&mut self, record: &GroupRecord) {
        match record {
            GroupRecord::ConsumerGroup { group, .. } => {
                self.durable_consumer_groups.insert(group.clone(), record.clone());
            }
            GroupRecord::GroupTombstone { group } | GroupRecord::GroupMetadata { group, .. } => {
                self.durable_consumer_groups.remove(group);
            }
            GroupRecord::Offset { .. } | GroupRecord::OffsetTombstone { .. } => {}
        }
    }

    /// The write of `record` failed. For the metadata of a classic group that still
    /// has the generation the record stored and is Stable (its leader's SyncGroup
    /// stored the assignment) or CompletingRebalance: what Kafka does when storing a
    /// SyncGroup assignment fails (`resetAndPropagateAssignmentError`, then
    /// `maybePrepareRebalance`): every member's assignment is cleared, parked SyncGroups
    /// get NOT_COORDINATOR, and the group rebalances, so no member goes on with an
    /// assignment a restart would not know. Other records: nothing (a commit is undone
    /// by [`GroupCoordinator::revert_offset`]).
    ///
    /// A KIP-848 group's record, or a tombstone of a KIP-848 group: the group goes back
    /// to its last stored record (Kafka's coordinator runtime reverts its in-memory
    /// state to the last committed offset), as a restart would load it: members keep
    /// the epochs and assignments stored, their session timers start again at
    /// `now_ms`, and a member told something newer (its response failed too) is
    /// fenced on its next heartbeat and rejoins. A group with no stored record goes
    /// (its committed offsets stay). Returns the outputs to carry out.
    pub fn group_write_failed(&mut self, record: &GroupRecord, now_ms: i64) -> Vec<Output> {
        let mut out = Vec::new();
        if let GroupRecord::ConsumerGroup { group, .. } | GroupRecord::GroupTombstone { group } =
            record
        {
            let consumer = self
                .groups
                .get(group.as_str())
                .is_some_and(|g| matches!(g.kind, GroupKind::Consumer(_)));
            if consumer || matches!(record, GroupRecord::ConsumerGroup { .. }) {
                self.restore_consumer_group(group, now_ms);
                return out;
            }
        }
        let GroupRecord::GroupMetadata { group, generation, .. } = record else { return out };
        let Some(g) = self.groups.get_mut(group.as_str()).and_then(Group::as_classic_mut) else {
            return out;
        };
        let affected = g.generation == *generation
            && matches!(g.state, GroupState::Stable | GroupState::CompletingRebalance);
        if affected {
            let mut ctx = Ctx { cfg: &self.config, group_id: group, now: now_ms, out: &mut out };
            g.reset_and_propagate_assignment_error(FAILED_WRITE_ERROR, &mut ctx);
            g.maybe_prepare_rebalance(&mut ctx);
        }
        self.reschedule(group);
        out
    }

    /// Puts KIP-848 group `group` back to its last stored record; see
    /// [`GroupCoordinator::group_write_failed`].
    fn restore_consumer_group(&mut self, group: &str, now_ms: i64) {
        let stored = self.durable_consumer_groups.get(group).cloned();
        match stored.and_then(ConsumerGroup::from_record) {
            Some(mut cg) => {
                cg.arm_timers(self.config.consumer_session_timeout_ms as i64, now_ms);
                self.replace_kind(group, GroupKind::Consumer(cg));
            }
            None => {
                if let Some(old) = self.remove_group(group) {
                    if !old.offsets.is_empty() {
                        let mut g = Group::classic(group, None);
                        g.offsets = old.offsets;
                        self.groups.insert(group.to_string(), g);
                    }
                }
            }
        }
        self.reschedule(group);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::offset_commit_response::{
        OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    };
    use kafka_protocol::messages::{HeartbeatResponse, OffsetCommitResponse, SyncGroupResponse};

    #[test]
    fn offset_commit_every_partition_gets_not_coordinator() {
        let partition = |i| OffsetCommitResponsePartition::default().with_partition_index(i);
        // Partition 1 failed on its own (OFFSET_METADATA_TOO_LARGE, 12): it keeps its code.
        let topic = OffsetCommitResponseTopic::default()
            .with_partitions(vec![partition(0), partition(1).with_error_code(12)]);
        let mut r = ResponseKind::OffsetCommit(
            OffsetCommitResponse::default().with_topics(vec![topic.clone(), topic]),
        );
        answer_failed_write(&mut r);
        let ResponseKind::OffsetCommit(r) = r else { unreachable!() };
        let codes: Vec<i16> =
            r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect();
        assert_eq!(codes, vec![16, 12, 16, 12]);
    }

    #[test]
    fn sync_group_loses_its_assignment() {
        let mut r = ResponseKind::SyncGroup(
            SyncGroupResponse::default().with_assignment(bytes::Bytes::from_static(b"abc")),
        );
        answer_failed_write(&mut r);
        let ResponseKind::SyncGroup(r) = r else { unreachable!() };
        assert_eq!((r.error_code, r.assignment.len()), (16, 0));
    }

    #[test]
    fn reads_are_left_alone() {
        let mut r = ResponseKind::Heartbeat(HeartbeatResponse::default());
        answer_failed_write(&mut r);
        assert_eq!(r, ResponseKind::Heartbeat(HeartbeatResponse::default()));
    }
}
