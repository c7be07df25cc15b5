//! What a group response says when the group-state write it waited for failed.
//!
//! Kafka's coordinator answers a request whose `__consumer_offsets` append failed with
//! an error instead of the result (GroupMetadataManager's `storeGroup` /
//! `storeOffsets` callbacks map a storage failure, KAFKA_STORAGE_ERROR or
//! NOT_LEADER_OR_FOLLOWER, to NOT_COORDINATOR). The client then looks the coordinator
//! up again and retries, so it is never told that an offset or an assignment is stored
//! when it is not. [`GroupCoordinator`](super::GroupCoordinator) has already changed
//! its memory by then (it does no I/O); what a failed write loses is only what a
//! restart would have replayed.

use kafka_protocol::messages::ResponseKind;
use kafka_protocol::ResponseError;

/// The error a response gets when its write failed: NOT_COORDINATOR (16), as Kafka.
pub const FAILED_WRITE_ERROR: ResponseError = ResponseError::NotCoordinator;

/// Rewrites `response` to report [`FAILED_WRITE_ERROR`]: the top-level error code, and
/// every per-partition or per-group code, of the responses of requests that write
/// group state (OffsetCommit, SyncGroup, JoinGroup, LeaveGroup, DeleteGroups,
/// OffsetDelete, ConsumerGroupHeartbeat). A SyncGroup response loses its assignment
/// and a ConsumerGroupHeartbeat response its assignment, so nothing unstored reaches
/// the client. Other responses (reads) are left as they are.
pub fn answer_failed_write(response: &mut ResponseKind) {
    let code = FAILED_WRITE_ERROR.code();
    match response {
        ResponseKind::OffsetCommit(r) => {
            for t in &mut r.topics {
                for p in &mut t.partitions {
                    p.error_code = code;
                }
            }
        }
        ResponseKind::SyncGroup(r) => {
            r.error_code = code;
            r.assignment = Default::default();
        }
        ResponseKind::JoinGroup(r) => {
            r.error_code = code;
            r.members.clear();
        }
        ResponseKind::LeaveGroup(r) => {
            r.error_code = code;
            for m in &mut r.members {
                m.error_code = code;
            }
        }
        ResponseKind::DeleteGroups(r) => {
            for g in &mut r.results {
                g.error_code = code;
            }
        }
        ResponseKind::OffsetDelete(r) => {
            r.error_code = code;
            for t in &mut r.topics {
                for p in &mut t.partitions {
                    p.error_code = code;
                }
            }
        }
        ResponseKind::ConsumerGroupHeartbeat(r) => {
            r.error_code = code;
            r.error_message = Some(kafka_protocol::protocol::StrBytes::from_static_str(
                "the group state could not be stored",
            ));
            r.assignment = None;
        }
        _ => {}
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
        let topic =
            OffsetCommitResponseTopic::default().with_partitions(vec![partition(0), partition(1)]);
        let mut r = ResponseKind::OffsetCommit(
            OffsetCommitResponse::default().with_topics(vec![topic.clone(), topic]),
        );
        answer_failed_write(&mut r);
        let ResponseKind::OffsetCommit(r) = r else { unreachable!() };
        let codes: Vec<i16> =
            r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect();
        assert_eq!(codes, vec![16, 16, 16, 16]);
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
