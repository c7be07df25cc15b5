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
//! group's metadata (a SyncGroup assignment, a KIP-848 epoch) is not yet, so a member
//! that asks again may still see it until a restart (Kafka resets the assignment and
//! rebalances).

use kafka_protocol::messages::ResponseKind;
use kafka_protocol::ResponseError;

use super::ctx::Ctx;
use super::group::Group;
use super::state::GroupState;
use super::{GroupCoordinator, GroupRecord, Output};

/// The error a response gets when its write failed: NOT_COORDINATOR (16), as Kafka.
pub const FAILED_WRITE_ERROR: ResponseError = ResponseError::NotCoordinator;

/// Rewrites `response` to report [`FAILED_WRITE_ERROR`] where it reports success (an
/// error code of 0; other errors, such as OFFSET_METADATA_TOO_LARGE, stay): the
/// top-level code and every per-partition or per-group code of the responses of
/// requests that write group state (OffsetCommit, SyncGroup, JoinGroup, LeaveGroup,
/// DeleteGroups, OffsetDelete, ConsumerGroupHeartbeat). A SyncGroup or
/// ConsumerGroupHeartbeat response that failed loses its assignment. Other responses
/// (reads) are left as they are.
pub fn answer_failed_write(response: &mut ResponseKind) {
    // Sets a success code to the failure; true if it did.
    fn fail(error_code: &mut i16) -> bool {
        let ok = *error_code == 0;
        if ok {
            *error_code = FAILED_WRITE_ERROR.code();
        }
        ok
    }
    match response {
        ResponseKind::OffsetCommit(r) => {
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
    /// The write of `record` failed. For the metadata of a classic group that still
    /// has the generation the record stored and is Stable (its leader's SyncGroup
    /// stored the assignment) or CompletingRebalance: what Kafka does when storing a
    /// SyncGroup assignment fails (`resetAndPropagateAssignmentError`, then
    /// `maybePrepareRebalance`): every member's assignment is cleared, parked SyncGroups
    /// get NOT_COORDINATOR, and the group rebalances, so no member goes on with an
    /// assignment a restart would not know. Other records: nothing (a commit is undone
    /// by [`GroupCoordinator::revert_offset`]). Returns the outputs to carry out.
    pub fn group_write_failed(&mut self, record: &GroupRecord, now_ms: i64) -> Vec<Output> {
        let mut out = Vec::new();
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
