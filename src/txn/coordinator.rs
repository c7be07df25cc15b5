//! The coordinator's state: the `__transaction_state` partitions this instance owns,
//! the transactional ids in each, their pending transitions; completing writes,
//! markers and loading (Kafka's `TransactionStateManager` cache and
//! `appendTransactionToLog` callback, and the completion half of
//! `TransactionMarkerChannelManager`).

use std::collections::HashMap;

use super::metadata::TxnMetadata;
use super::records::TxnRecord;
use super::state::{TxnResult, TxnState};
use super::{partition_for, ProducerIdAndEpoch, TxnConfig, TxnMarkers, TxnWrite, WriteDone};
use crate::error::ResponseError;

/// The transaction coordinator for the `__transaction_state` partitions of one shard.
/// See the module docs for the calling protocol.
///
/// Kafka source: `TransactionCoordinator` + `TransactionStateManager`.
/// Lives on: the shard that owns those partitions only.
#[derive(Debug)]
pub struct TxnCoordinator {
    pub(super) config: TxnConfig,
    /// Owned partitions of `__transaction_state`, by partition index.
    pub(super) partitions: HashMap<i32, TxnPartition>,
}

/// One owned `__transaction_state` partition (Kafka's `TxnMetadataCacheEntry`, and its
/// membership of `loadingPartitions`).
#[derive(Debug)]
pub(super) struct TxnPartition {
    /// The coordinator epoch the partition was loaded at; markers carry it.
    pub coordinator_epoch: i32,
    /// True between `begin_load` and `finish_load`.
    pub loading: bool,
    /// The transactional ids of the partition.
    pub ids: HashMap<String, Entry>,
}

/// One transactional id: its metadata and, while a record is being written or markers
/// are out, the transition that follows.
#[derive(Debug)]
pub(super) struct Entry {
    /// The state as of the last durable record (or the one loaded).
    pub metadata: TxnMetadata,
    /// The prepared transition, if any (Kafka's `pendingState` plus the transit
    /// metadata its callback holds).
    pub pending: Option<Pending>,
    /// A coordinator abort bumped the epoch but its record was not written: the next
    /// fence does not bump again (Kafka's `hasFailedEpochFence`; the bumped epoch was
    /// never given to a client).
    pub has_failed_epoch_fence: bool,
}

impl Entry {
    pub fn new(metadata: TxnMetadata) -> Self {
        Entry { metadata, pending: None, has_failed_epoch_fence: false }
    }
}

/// A prepared transition: the metadata once its record is durable, and why.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    /// The whole metadata after the transition (state Dead: the id is deleted).
    pub target: TxnMetadata,
    /// What completing it answers and does next.
    pub purpose: Purpose,
}

/// Why a transition was prepared: decides the answer of `write_completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    /// InitProducerId into Empty: answer the new producer id and epoch.
    InitProducerId,
    /// AddPartitionsToTxn / AddOffsetsToTxn into Ongoing.
    AddPartitions,
    /// The client's EndTxn into PrepareCommit / PrepareAbort: answer, send markers.
    EndTxn(TxnResult),
    /// The coordinator's abort of an ongoing transaction (Kafka's PrepareEpochFence
    /// then PrepareAbort): send abort markers.
    FenceAbort(FenceCause),
    /// All markers written: into CompleteCommit / CompleteAbort.
    Complete(TxnResult),
    /// Transactional id expiration: the tombstone.
    Expire,
}

/// Who asked the coordinator to abort an ongoing transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FenceCause {
    /// A new producer's InitProducerId: answered CONCURRENT_TRANSACTIONS.
    InitProducerId,
    /// The transaction timeout: nobody is answered.
    Timeout,
}

/// Kafka's mapping of a failed `__transaction_state` append to the error the client
/// sees (`TransactionStateManager.appendTransactionToLog`): replica and timeout errors
/// become COORDINATOR_NOT_AVAILABLE, a lost leadership or a storage error
/// NOT_COORDINATOR, an oversized record UNKNOWN_SERVER_ERROR; others stay.
pub(super) fn coordinator_error_for_append(error: ResponseError) -> ResponseError {
    use ResponseError::*;
    match error {
        UnknownTopicOrPartition
        | NotEnoughReplicas
        | NotEnoughReplicasAfterAppend
        | RequestTimedOut => CoordinatorNotAvailable,
        NotLeaderOrFollower | KafkaStorageError => NotCoordinator,
        MessageTooLarge | RecordListTooLarge => UnknownServerError,
        other => other,
    }
}

impl TxnCoordinator {
    /// A coordinator that owns no partition yet.
    pub fn new(config: TxnConfig) -> Self {
        TxnCoordinator { config, partitions: HashMap::new() }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// The `__transaction_state` partition of `transactional_id` (see [`partition_for`]).
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        partition_for(transactional_id, self.config.num_partitions)
    }

    /// The metadata of `transactional_id` as of its last durable record, if this
    /// coordinator holds it (loading partitions included).
    pub fn metadata(&self, transactional_id: &str) -> Option<&TxnMetadata> {
        self.entry(transactional_id).map(|e| &e.metadata)
    }

    /// The state `transactional_id` is moving to, while a record is being written or
    /// its markers are out.
    pub fn pending_state(&self, transactional_id: &str) -> Option<TxnState> {
        self.entry(transactional_id).and_then(|e| e.pending.as_ref()).map(|p| p.target.state)
    }

    /// Whether `partition` is owned and being loaded.
    pub fn is_loading(&self, partition: i32) -> bool {
        self.partitions.get(&partition).is_some_and(|p| p.loading)
    }

    fn entry(&self, transactional_id: &str) -> Option<&Entry> {
        let p = self.partitions.get(&self.partition_for(transactional_id))?;
        p.ids.get(transactional_id)
    }

    /// The partition of `transactional_id` if it is owned and loaded: else
    /// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS (Kafka's
    /// `getAndMaybeAddTransactionState`).
    pub(super) fn owned_mut(
        &mut self,
        transactional_id: &str,
    ) -> Result<(i32, &mut TxnPartition), ResponseError> {
        let index = self.partition_for(transactional_id);
        match self.partitions.get_mut(&index) {
            None => Err(ResponseError::NotCoordinator),
            Some(p) if p.loading => Err(ResponseError::CoordinatorLoadInProgress),
            Some(p) => Ok((index, p)),
        }
    }

    /// Read-only [`Self::owned_mut`].
    pub(super) fn owned(&self, transactional_id: &str) -> Result<&TxnPartition, ResponseError> {
        match self.partitions.get(&self.partition_for(transactional_id)) {
            None => Err(ResponseError::NotCoordinator),
            Some(p) if p.loading => Err(ResponseError::CoordinatorLoadInProgress),
            Some(p) => Ok(p),
        }
    }

    /// The record that stores `target` for `transactional_id` (a tombstone for Dead),
    /// in the value version of the broker's transaction version.
    pub(super) fn record_for(&self, transactional_id: &str, target: &TxnMetadata) -> TxnRecord {
        if target.state == TxnState::Dead {
            TxnRecord::tombstone(transactional_id)
        } else {
            let version = self.config.transaction_version.log_value_version();
            TxnRecord::of(transactional_id, target, version)
        }
    }

    /// Prepare `target` for `transactional_id` (which must exist in its owned partition)
    /// and return the write that makes it durable.
    pub(super) fn prepare(
        &mut self,
        transactional_id: &str,
        target: TxnMetadata,
        purpose: Purpose,
    ) -> TxnWrite {
        let record = self.record_for(transactional_id, &target);
        let index = self.partition_for(transactional_id);
        let p = self.partitions.get_mut(&index).expect("prepare on an owned partition");
        let entry = p.ids.get_mut(transactional_id).expect("prepare on a known id");
        entry.pending = Some(Pending { target, purpose });
        TxnWrite { partition: index, coordinator_epoch: p.coordinator_epoch, record }
    }

    /// The append of `write` finished with `result` (the append's own error, e.g.
    /// KAFKA_STORAGE_ERROR, which is answered as Kafka maps it: NOT_ENOUGH_REPLICAS,
    /// REQUEST_TIMED_OUT and the like COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER
    /// and KAFKA_STORAGE_ERROR NOT_COORDINATOR, MESSAGE_TOO_LARGE UNKNOWN_SERVER_ERROR). Completes
    /// or drops the pending transition and says what to answer (Kafka's
    /// `appendTransactionToLog` callback and the callbacks of the handlers).
    ///
    /// After a PrepareCommit / PrepareAbort the id stays pending (CompleteCommit /
    /// CompleteAbort, stamped `now_ms`) while the returned markers are sent. A failed
    /// CompleteCommit / CompleteAbort write keeps that pending transition: call
    /// [`Self::markers_written`] again to retry it. A write this coordinator does not
    /// wait for (its partition was unloaded or reloaded since, or it is not the record
    /// of the id's pending transition, e.g. reported twice) changes nothing and answers
    /// NOT_COORDINATOR.
    pub fn write_completed(
        &mut self,
        write: &TxnWrite,
        result: Result<(), ResponseError>,
        now_ms: i64,
    ) -> WriteDone {
        let not_coordinator =
            WriteDone { answer: Err(ResponseError::NotCoordinator), markers: None };
        let id = write.record.transactional_id.as_str();
        let awaited = self
            .partitions
            .get(&write.partition)
            .and_then(|p| p.ids.get(id))
            .and_then(|e| e.pending.as_ref())
            .is_some_and(|pending| self.record_for(id, &pending.target) == write.record);
        if !awaited {
            return not_coordinator;
        }
        let Some(p) = self.partitions.get_mut(&write.partition) else {
            return not_coordinator;
        };
        if p.loading || p.coordinator_epoch != write.coordinator_epoch {
            return not_coordinator;
        }
        let coordinator_epoch = p.coordinator_epoch;
        let Some(entry) = p.ids.get_mut(id) else {
            return not_coordinator;
        };
        let Some(pending) = entry.pending.take() else {
            return not_coordinator;
        };
        if let Err(e) = result {
            match pending.purpose {
                Purpose::FenceAbort(_) => entry.has_failed_epoch_fence = true,
                Purpose::Complete(_) => entry.pending = Some(pending),
                _ => {}
            }
            return WriteDone { answer: Err(coordinator_error_for_append(e)), markers: None };
        }
        let target = pending.target;
        let done = ProducerIdAndEpoch {
            producer_id: target.producer_id,
            producer_epoch: target.producer_epoch,
        };
        let txn_result = match pending.purpose {
            Purpose::Expire => {
                p.ids.remove(id);
                return WriteDone { answer: Ok(done), markers: None };
            }
            Purpose::InitProducerId | Purpose::AddPartitions | Purpose::Complete(_) => {
                entry.metadata = target;
                return WriteDone { answer: Ok(done), markers: None };
            }
            Purpose::EndTxn(r) => r,
            Purpose::FenceAbort(_) => TxnResult::Abort,
        };
        entry.metadata = target;
        let complete = match entry.metadata.prepare_complete(now_ms) {
            Ok(c) => c,
            Err(_) => {
                return WriteDone { answer: Err(ResponseError::UnknownServerError), markers: None }
            }
        };
        entry.has_failed_epoch_fence = false;
        let answer = match pending.purpose {
            // EndTxn v5+ answers the producer id and epoch the client continues with:
            // after a TV2 bump the bumped epoch, after an exhausted epoch the next
            // producer id at epoch 0.
            Purpose::EndTxn(_) => Ok(ProducerIdAndEpoch {
                producer_id: complete.producer_id,
                producer_epoch: complete.producer_epoch,
            }),
            Purpose::FenceAbort(FenceCause::InitProducerId) => {
                Err(ResponseError::ConcurrentTransactions)
            }
            _ => Ok(done),
        };
        let markers =
            markers_of(id, write.partition, coordinator_epoch, &entry.metadata, txn_result);
        entry.pending = Some(Pending { target: complete, purpose: Purpose::Complete(txn_result) });
        WriteDone { answer, markers: Some(markers) }
    }

    /// Every marker of `markers` is written: the CompleteCommit / CompleteAbort record
    /// to write (report it to [`Self::write_completed`]). `None` when the transaction
    /// is no longer this coordinator's to complete (partition unloaded or reloaded, id
    /// gone, no completion pending): drop the markers' completion.
    pub fn markers_written(&mut self, markers: &TxnMarkers) -> Option<TxnWrite> {
        let p = self.partitions.get(&markers.partition)?;
        if p.loading || p.coordinator_epoch != markers.coordinator_epoch {
            return None;
        }
        let pending = p.ids.get(&markers.transactional_id)?.pending.as_ref()?;
        if !matches!(pending.purpose, Purpose::Complete(_)) {
            return None;
        }
        Some(TxnWrite {
            partition: markers.partition,
            coordinator_epoch: p.coordinator_epoch,
            record: self.record_for(&markers.transactional_id, &pending.target),
        })
    }

    /// Start owning `partition` at `coordinator_epoch` and load it: its previous state,
    /// if any, is dropped and its requests get COORDINATOR_LOAD_IN_PROGRESS until
    /// [`Self::finish_load`] (Kafka's `loadTransactionsForTxnTopicPartition`).
    pub fn begin_load(&mut self, partition: i32, coordinator_epoch: i32) {
        self.partitions.insert(
            partition,
            TxnPartition { coordinator_epoch, loading: true, ids: HashMap::new() },
        );
    }

    /// Replay one record of a loading partition, in log order: the last record of an id
    /// wins, a tombstone deletes it (Kafka's `loadTransactionMetadata`). Records of a
    /// partition that is not loading are ignored. A record whose key version is not 0
    /// should be skipped by the caller ([`super::DecodeError::UnknownKeyVersion`]).
    pub fn load_record(&mut self, partition: i32, record: TxnRecord) {
        let Some(p) = self.partitions.get_mut(&partition).filter(|p| p.loading) else {
            return;
        };
        match record.value {
            None => {
                p.ids.remove(&record.transactional_id);
            }
            Some(v) => {
                p.ids.insert(record.transactional_id, Entry::new(v.to_metadata()));
            }
        }
    }

    /// End the load of `partition`: it serves requests from now on. Every id loaded in
    /// PrepareCommit / PrepareAbort gets its completion prepared (stamped `now_ms`) and
    /// its markers returned, in transactional id order: send them, then
    /// [`Self::markers_written`] as after an EndTxn (Kafka's
    /// `transactionsPendingForCompletion`).
    pub fn finish_load(&mut self, partition: i32, now_ms: i64) -> Vec<TxnMarkers> {
        let Some(p) = self.partitions.get_mut(&partition).filter(|p| p.loading) else {
            return Vec::new();
        };
        p.loading = false;
        let mut ids: Vec<&String> = p.ids.keys().collect();
        ids.sort();
        let ids: Vec<String> = ids.into_iter().cloned().collect();
        let mut out = Vec::new();
        for id in ids {
            let Some(entry) = p.ids.get_mut(&id) else { continue };
            let result = match entry.metadata.state {
                TxnState::PrepareCommit => TxnResult::Commit,
                TxnState::PrepareAbort => TxnResult::Abort,
                _ => continue,
            };
            let Ok(complete) = entry.metadata.prepare_complete(now_ms) else {
                continue;
            };
            out.push(markers_of(&id, partition, p.coordinator_epoch, &entry.metadata, result));
            entry.pending = Some(Pending { target: complete, purpose: Purpose::Complete(result) });
        }
        out
    }

    /// Stop owning `partition` (Kafka's `onResignation`): its ids are forgotten; writes
    /// and markers still in flight for it are answered NOT_COORDINATOR / dropped.
    pub fn unload(&mut self, partition: i32) {
        self.partitions.remove(&partition);
    }
}

/// The markers of the transaction `m` is preparing to complete.
fn markers_of(
    transactional_id: &str,
    partition: i32,
    coordinator_epoch: i32,
    m: &TxnMetadata,
    result: TxnResult,
) -> TxnMarkers {
    TxnMarkers {
        transactional_id: transactional_id.to_string(),
        partition,
        coordinator_epoch,
        producer_id: m.producer_id,
        producer_epoch: m.producer_epoch,
        result,
        partitions: m.partitions.clone(),
    }
}
