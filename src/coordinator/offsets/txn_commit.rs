//! TxnOffsetCommit (Kafka's `OffsetMetadataManager.commitTransactionalOffset`,
//! `validateTransactionalOffsetCommit`, `ClassicGroup`/`ConsumerGroup.validateOffsetCommit`
//! with `isTransactional`).

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ResponseKind, TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::super::classic::ClassicGroup;
use super::super::consumer::validate_member_epoch;
use super::super::group::{CommittedOffset, Group, GroupKind};
use super::super::state::GroupState;
use super::super::{GroupCoordinator, Output, RequestToken};
use super::commit::offset_record;
use crate::error::{code, ResponseError};

impl GroupCoordinator {
    /// TxnOffsetCommit, versions 0-4: offsets committed inside the transaction of
    /// producer `producer_id`. They are written as one transactional batch
    /// ([`Output::PersistTransactional`]) and held pending, invisible to OffsetFetch,
    /// until the transaction's marker ([`GroupCoordinator::complete_transaction`]).
    /// Kafka source: `OffsetMetadataManager.commitTransactionalOffset`.
    ///
    /// Accepted from a member of the current generation (v3+ sends the member id,
    /// group instance id and generation; the group's state is not checked and the
    /// member's session is not extended), or without a member (generation < 0, no
    /// member id, no instance id: every version before 3) whatever the group's state.
    /// An unknown group is created (a simple group) for a generation < 0. A consumer
    /// (KIP-848) group checks the member epoch instead of the generation.
    ///
    /// Errors, on every partition (Kafka fails the whole request): INVALID_GROUP_ID
    /// (empty group id), COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING (a
    /// producer id below 0: no transaction can hold it), ILLEGAL_GENERATION (an unknown
    /// group and a generation of 0 or more, a wrong generation, a stale member epoch),
    /// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, FENCED_MEMBER_EPOCH; per partition:
    /// OFFSET_METADATA_TOO_LARGE. Topic existence is checked by the caller; so is the
    /// transaction itself (Kafka 3.6+ verifies with the transaction coordinator that
    /// the producer added the group to its transaction; shardlog has no transaction
    /// coordinator yet). The producer epoch is fenced by the log when the batch is
    /// appended (INVALID_PRODUCER_EPOCH).
    pub fn txn_offset_commit(
        &mut self,
        token: RequestToken,
        version: i16,
        req: TxnOffsetCommitRequest,
        now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        self.touch_retention_timer(now_ms);
        let group_id = req.group_id.0.to_string();
        let producer_id = req.producer_id.0;
        let (member_id, instance, generation) = if version >= 3 {
            (req.member_id.as_str(), req.group_instance_id.as_deref(), req.generation_id)
        } else {
            ("", None, -1)
        };
        let error = self.validate_txn_commit(
            &group_id,
            producer_id,
            member_id,
            instance,
            generation,
            now_ms,
        );
        let max_metadata_bytes = self.config.offset_metadata_max_bytes;
        let mut records = Vec::new();
        let mut r = TxnOffsetCommitResponse::default();
        for t in &req.topics {
            let mut rt = TxnOffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            for p in &t.partitions {
                let metadata = p.committed_metadata.as_deref().unwrap_or("");
                let error = match error {
                    Some(e) => Some(e),
                    None if metadata.len() > max_metadata_bytes => {
                        Some(ResponseError::OffsetMetadataTooLarge)
                    }
                    None => {
                        let c = CommittedOffset {
                            offset: p.committed_offset,
                            leader_epoch: if version >= 2 { p.committed_leader_epoch } else { -1 },
                            metadata: metadata.to_string(),
                            commit_timestamp_ms: now_ms,
                            expire_timestamp_ms: None,
                            log_order: self.take_log_order(),
                            replaced_log_order: None,
                        };
                        records.push(offset_record(&group_id, &t.name.0, p.partition_index, &c));
                        let key = (t.name.0.to_string(), p.partition_index);
                        self.pending.put(producer_id, &group_id, key, c);
                        None
                    }
                };
                let mut rp = TxnOffsetCommitResponsePartition::default();
                rp.partition_index = p.partition_index;
                rp.error_code = code(error);
                rt.partitions.push(rp);
            }
            r.topics.push(rt);
        }
        if !records.is_empty() {
            out.push(Output::PersistTransactional {
                producer_id,
                producer_epoch: req.producer_epoch,
                records,
            });
        }
        self.reschedule(&group_id);
        out.push(Output::Respond { token, response: ResponseKind::TxnOffsetCommit(r) });
        out
    }

    /// Kafka's `validateTransactionalOffsetCommit`: `None` when the offsets may be
    /// stored (an unknown group is created for a generation < 0), else the error.
    fn validate_txn_commit(
        &mut self,
        group_id: &str,
        producer_id: i64,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Option<ResponseError> {
        if let Some(e) = self.validate_group_status(group_id, false) {
            return Some(e);
        }
        if producer_id < 0 {
            return Some(ResponseError::InvalidProducerIdMapping);
        }
        let group = match self.groups.get_mut(group_id) {
            Some(g) => g,
            None if generation >= 0 => return Some(ResponseError::IllegalGeneration),
            None => {
                self.groups.insert(group_id.to_string(), Group::classic(group_id, Some(now)));
                return None;
            }
        };
        match &group.kind {
            GroupKind::Classic(c) => c.validate_txn_commit(member_id, instance, generation),
            // The member epoch (Kafka maps STALE_MEMBER_EPOCH to ILLEGAL_GENERATION here).
            GroupKind::Consumer(cg) => match validate_member_epoch(cg, member_id, generation) {
                Some(ResponseError::StaleMemberEpoch) => Some(ResponseError::IllegalGeneration),
                other => other,
            },
        }
    }
}

impl ClassicGroup {
    /// Kafka's `ClassicGroup.validateOffsetCommit` with `isTransactional`: without a
    /// member (generation < 0, no member id, no instance id) in any state; else a
    /// current member (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) of the current generation
    /// (ILLEGAL_GENERATION). Unlike OffsetCommit, CompletingRebalance is no error.
    fn validate_txn_commit(
        &self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> Option<ResponseError> {
        if generation < 0 && self.is(GroupState::Empty) {
            return None;
        }
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            if let Some(e) = self.validate_current_member(member_id, instance) {
                return Some(e);
            }
            if generation != self.generation {
                return Some(ResponseError::IllegalGeneration);
            }
        }
        None
    }
}
