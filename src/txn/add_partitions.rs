//! AddPartitionsToTxn and AddOffsetsToTxn (Kafka's
//! `TransactionCoordinator.handleAddPartitionsToTransaction`), and the verification of
//! KIP-890 part 1 (`handleVerifyPartitionsInTransaction`: AddPartitionsToTxn v4+ with
//! `verify_only`, sent by a partition leader before it accepts a transactional batch).

use std::collections::BTreeSet;

use super::coordinator::Purpose;
use super::metadata::TopicPartition;
use super::state::TxnState;
use super::{Decision, TxnCoordinator, CONSUMER_OFFSETS_TOPIC};
use crate::error::ResponseError;

impl TxnCoordinator {
    /// Add `partitions` to the transaction of `transactional_id` (AddPartitionsToTxn
    /// v0-3 from a client; v4+ batches from a broker without `verify_only`; the handler
    /// has already answered UNKNOWN_TOPIC_OR_PARTITION / OPERATION_NOT_ATTEMPTED for
    /// partitions that do not exist). The answer applies to every partition.
    ///
    /// - INVALID_REQUEST: empty id; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS;
    /// - INVALID_PRODUCER_ID_MAPPING: unknown id or another producer id;
    ///   PRODUCER_FENCED: another epoch;
    /// - CONCURRENT_TRANSACTIONS: a transition is pending, or the id is in
    ///   PrepareCommit / PrepareAbort;
    /// - OK without a write when the transaction is Ongoing and already has them all;
    /// - else writes Ongoing with the partitions added (the transaction starts at
    ///   `now_ms` if it was not open).
    ///
    /// The caller maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for v0-1.
    pub fn add_partitions(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        now_ms: i64,
    ) -> Decision<()> {
        use Decision::Answer;
        if transactional_id.is_empty() {
            return Answer(Err(ResponseError::InvalidRequest));
        }
        let (_, p) = match self.owned_mut(transactional_id) {
            Ok(x) => x,
            Err(e) => return Answer(Err(e)),
        };
        let Some(entry) = p.ids.get(transactional_id) else {
            return Answer(Err(ResponseError::InvalidProducerIdMapping));
        };
        let m = &entry.metadata;
        if m.producer_id != producer_id {
            return Answer(Err(ResponseError::InvalidProducerIdMapping));
        }
        if m.producer_epoch != producer_epoch {
            return Answer(Err(ResponseError::ProducerFenced));
        }
        if entry.pending.is_some()
            || matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort)
        {
            return Answer(Err(ResponseError::ConcurrentTransactions));
        }
        if m.state == TxnState::Ongoing && partitions.is_subset(&m.partitions) {
            return Answer(Ok(()));
        }
        match m.prepare_add_partitions(partitions, now_ms) {
            Ok(target) => {
                Decision::Write(self.prepare(transactional_id, target, Purpose::AddPartitions))
            }
            Err(_) => Answer(Err(ResponseError::UnknownServerError)),
        }
    }

    /// AddOffsetsToTxn: add the group's `__consumer_offsets` partition
    /// (`offsets_partition`, the group's placement) to the transaction, with the answers
    /// of [`Self::add_partitions`] (Kafka's `handleAddOffsetsToTxnRequest`).
    pub fn add_offsets(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        offsets_partition: i32,
        now_ms: i64,
    ) -> Decision<()> {
        let partitions = BTreeSet::from([(CONSUMER_OFFSETS_TOPIC.to_string(), offsets_partition)]);
        self.add_partitions(transactional_id, producer_id, producer_epoch, &partitions, now_ms)
    }

    /// AddPartitionsToTxn v4+ with `verify_only`: is each of `partitions` in the
    /// transaction? Writes nothing and ignores a pending transition (the leader's own
    /// append validates again). `Err` applies to every partition:
    /// INVALID_REQUEST (empty id), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS,
    /// INVALID_PRODUCER_ID_MAPPING (unknown id, other producer id), PRODUCER_FENCED
    /// (other epoch), CONCURRENT_TRANSACTIONS (PrepareCommit / PrepareAbort). `Ok` maps
    /// each partition, in the order given, to `None` (in the transaction) or
    /// TRANSACTION_ABORTABLE (not added: the producer must abort).
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<ResponseError>)>, ResponseError> {
        if transactional_id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        let p = self.owned(transactional_id)?;
        let m =
            &p.ids.get(transactional_id).ok_or(ResponseError::InvalidProducerIdMapping)?.metadata;
        if m.producer_id != producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if m.producer_epoch != producer_epoch {
            return Err(ResponseError::ProducerFenced);
        }
        if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return Err(ResponseError::ConcurrentTransactions);
        }
        Ok(partitions
            .iter()
            .map(|tp| {
                let error =
                    (!m.partitions.contains(tp)).then_some(ResponseError::TransactionAbortable);
                (tp.clone(), error)
            })
            .collect())
    }
}
