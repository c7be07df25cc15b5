//! OffsetCommit (Kafka's `GroupCoordinator.handleCommitOffsets`,
//! `GroupMetadata`/`ConsumerGroup.validateOffsetCommit`).

use std::collections::hash_map::Entry;

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, ResponseKind};

use super::super::classic::ClassicGroup;
use super::super::consumer::validate_member_epoch;
use super::super::group::{CommittedOffset, Group, GroupKind};
use super::super::records::GroupRecord;
use super::super::state::GroupState;
use super::super::{GroupCoordinator, Output, RequestToken};
use crate::error::{code, ResponseError};

impl GroupCoordinator {
    /// OffsetCommit, versions 2-9. Kafka source: `GroupCoordinator.handleCommitOffsets`.
    ///
    /// For a consumer-protocol (KIP-848) group, `generation_id_or_member_epoch` is the
    /// member's epoch: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (ahead of the
    /// coordinator's), STALE_MEMBER_EPOCH (behind), UNSUPPORTED_VERSION (a member
    /// committing with v8 or older); a negative epoch is accepted while the group has no
    /// members.
    ///
    /// Accepted from a member of the current generation (Stable or PreparingRebalance;
    /// restarts its session timer), or as a simple commit (generation < 0, empty member
    /// id, no instance id) on an Empty or unknown group (created on the fly, as for
    /// `assign()` users). Each stored offset yields a [`Output::Persist`] before the
    /// response. v2-4 `retention_time_ms` (other than -1) sets an explicit expiry.
    ///
    /// Per-partition errors (an empty group id is allowed): COORDINATOR_LOAD_IN_PROGRESS,
    /// ILLEGAL_GENERATION (wrong generation, or an unknown group and a generation of 0
    /// or more), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS
    /// (CompletingRebalance), OFFSET_METADATA_TOO_LARGE. Topic existence is not checked
    /// here (the caller knows the catalog).
    pub fn offset_commit(
        &mut self,
        token: RequestToken,
        version: i16,
        req: OffsetCommitRequest,
        now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        self.touch_retention_timer(now_ms);
        let group_id = req.group_id.0.to_string();
        let instance =
            if version >= 7 { req.group_instance_id.as_ref().map(|s| s.to_string()) } else { None };
        let expire = if (2..=4).contains(&version) && req.retention_time_ms != -1 {
            Some(now_ms + req.retention_time_ms)
        } else {
            None
        };
        let max_metadata_bytes = self.config.offset_metadata_max_bytes;
        let first_log_order = self.next_log_order;
        let mut written = 0;
        let mut group = self.validate_commit(
            version,
            &group_id,
            &req.member_id,
            instance.as_deref(),
            req.generation_id_or_member_epoch,
            now_ms,
        );
        let mut r = OffsetCommitResponse::default();
        for t in &req.topics {
            let mut rt = OffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            for p in &t.partitions {
                let metadata = p.committed_metadata.as_deref().unwrap_or("");
                let error = match &mut group {
                    Err(e) => Some(*e),
                    Ok(_) if metadata.len() > max_metadata_bytes => {
                        Some(ResponseError::OffsetMetadataTooLarge)
                    }
                    Ok(g) => {
                        let key = (t.name.0.to_string(), p.partition_index);
                        let c = CommittedOffset {
                            offset: p.committed_offset,
                            leader_epoch: if version >= 6 { p.committed_leader_epoch } else { -1 },
                            metadata: metadata.to_string(),
                            commit_timestamp_ms: now_ms,
                            expire_timestamp_ms: expire,
                            log_order: first_log_order + written,
                            replaced_log_order: g.offsets.get(&key).map(|c| c.log_order),
                        };
                        written += 1;
                        out.push(Output::Persist(offset_record(
                            &group_id,
                            &t.name.0,
                            p.partition_index,
                            &c,
                        )));
                        g.offsets.insert(key, c);
                        None
                    }
                };
                let mut rp = OffsetCommitResponsePartition::default();
                rp.partition_index = p.partition_index;
                rp.error_code = code(error);
                rt.partitions.push(rp);
            }
            r.topics.push(rt);
        }
        self.next_log_order += written;
        self.reschedule(&group_id);
        out.push(Output::Respond { token, response: ResponseKind::OffsetCommit(r) });
        out
    }

    /// Kafka's `handleCommitOffsets` + `validateOffsetCommit`: the group to store the
    /// offsets in (an unknown group is created for a simple commit), or why not.
    fn validate_commit(
        &mut self,
        version: i16,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Result<&mut Group, ResponseError> {
        if let Some(e) = self.validate_group_status(group_id, true) {
            return Err(e);
        }
        let group = match self.groups.entry(group_id.to_string()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(_) if generation >= 0 => return Err(ResponseError::IllegalGeneration),
            Entry::Vacant(e) => e.insert(Group::classic(group_id, Some(now))),
        };
        let error = match &mut group.kind {
            GroupKind::Classic(c) => c.validate_commit(member_id, instance, generation, now),
            GroupKind::Consumer(cg) => {
                // `generation` is the member epoch (Kafka's
                // `ConsumerGroup.validateOffsetCommit`); members must use v9+.
                let simple = generation < 0 && cg.members.is_empty();
                if !simple && version < 9 && cg.members.contains_key(member_id) {
                    Some(ResponseError::UnsupportedVersion)
                } else {
                    validate_member_epoch(cg, member_id, generation)
                }
            }
        };
        match error {
            Some(e) => Err(e),
            None => Ok(group),
        }
    }
}

impl ClassicGroup {
    /// Kafka's `GroupMetadata` checks of an offset commit (`validateOffsetCommit`): a
    /// member of the current generation (its session timer restarts), or a simple
    /// commit (generation < 0, no member id, no instance id) to an Empty group.
    /// Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
    /// REBALANCE_IN_PROGRESS (CompletingRebalance).
    fn validate_commit(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Option<ResponseError> {
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            if let Some(e) = self.validate_current_member(member_id, instance) {
                return Some(e);
            }
            if generation != self.generation {
                return Some(ResponseError::IllegalGeneration);
            }
        } else if !self.is(GroupState::Empty) {
            // Only members may commit to a group with members.
            return Some(ResponseError::UnknownMemberId);
        }
        match self.state {
            GroupState::Empty => None,
            GroupState::Stable | GroupState::PreparingRebalance => {
                if let Some(m) = self.members.get_mut(member_id) {
                    m.heartbeat_deadline = Some(now + m.session_timeout_ms as i64);
                }
                None
            }
            GroupState::CompletingRebalance => Some(ResponseError::RebalanceInProgress),
            GroupState::Dead => Some(ResponseError::CoordinatorNotAvailable), // never held
        }
    }
}

/// The durable record of one committed offset.
pub(super) fn offset_record(
    group: &str,
    topic: &str,
    partition: i32,
    c: &CommittedOffset,
) -> GroupRecord {
    GroupRecord::Offset {
        group: group.to_string(),
        topic: topic.to_string(),
        partition,
        offset: c.offset,
        leader_epoch: c.leader_epoch,
        metadata: c.metadata.clone(),
        commit_timestamp_ms: c.commit_timestamp_ms,
        expire_timestamp_ms: c.expire_timestamp_ms,
    }
}
