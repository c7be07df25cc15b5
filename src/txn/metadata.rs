//! The state of one transactional id and the transitions between its states (Kafka's
//! `TransactionMetadata` with its `prepare*` methods and `completeTransitionTo`).
//!
//! Kafka prepares a `TxnTransitMetadata` and, once it is written, copies *some* of its
//! fields into the live metadata depending on the target state. Here every `prepare_*`
//! returns the whole [`TxnMetadata`] the id will have once the record is durable, with
//! the fields Kafka's `completeTransitionTo` changes, so that the record written is the
//! state itself and replaying the log rebuilds what was in memory (the one field the
//! log does not hold is `last_producer_epoch`). One difference: after InitProducerId
//! the start timestamp is -1 and the next producer id -1, as the record says, where
//! Kafka keeps the previous transaction's values in memory until a reload clears them
//! (DescribeTransactions and the ListTransactions duration filter see -1 here).

use std::collections::BTreeSet;

use super::state::{TransactionVersion, TxnState};

/// A partition of a transaction: (topic name, partition index).
pub type TopicPartition = (String, i32);

/// "No producer id" (Kafka's `RecordBatch.NO_PRODUCER_ID`).
pub const NO_PRODUCER_ID: i64 = -1;
/// "No producer epoch" (Kafka's `RecordBatch.NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// Whether `epoch` leaves no room for another bump: at or above `i16::MAX - 1`, so that
/// the coordinator can always fence with one more (Kafka's
/// `TransactionMetadata.isEpochExhausted`).
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// A transition that Kafka's `prepareTransitionTo` refuses (it throws
/// `IllegalStateException`): the state machine answers UNKNOWN_SERVER_ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTransition {
    /// The state the id was in.
    pub from: TxnState,
    /// The state it was asked to move to.
    pub to: TxnState,
    /// Why it was refused.
    pub reason: &'static str,
}

/// Everything the coordinator knows about one transactional id. Kafka source:
/// `TransactionMetadata` (without its lock and pending state, which live in the
/// coordinator's entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    /// The producer id in use.
    pub producer_id: i64,
    /// The producer id before the last rotation or epoch bump (KIP-360: a retried
    /// InitProducerId with this id and an exhausted epoch is answered, not fenced);
    /// -1 when none.
    pub previous_producer_id: i64,
    /// The producer id a TV2 EndTxn allocated because the epoch is exhausted; it
    /// replaces `producer_id` (epoch 0) when the transaction completes; -1 when none.
    pub next_producer_id: i64,
    /// The current producer epoch; -1 before the first InitProducerId completes.
    pub producer_epoch: i16,
    /// The epoch before the last bump (KIP-360 retries); -1 when none. Not stored in
    /// the log: -1 after a reload.
    pub last_producer_epoch: i16,
    /// The transaction timeout (ms) from the last InitProducerId.
    pub timeout_ms: i32,
    /// The current state.
    pub state: TxnState,
    /// The partitions in the current transaction (empty outside Ongoing and Prepare*).
    pub partitions: BTreeSet<TopicPartition>,
    /// When the current transaction started (ms since the epoch: its first added
    /// partition); -1 when none.
    pub start_timestamp_ms: i64,
    /// When this metadata last changed (ms since the epoch); transactional id expiration
    /// counts from here.
    pub last_update_timestamp_ms: i64,
    /// The transactions version of the client that made the last transition.
    pub client_transaction_version: TransactionVersion,
}

impl TxnMetadata {
    /// A new id with its first producer id, not yet initialized (epoch -1, Empty), as
    /// InitProducerId creates it before its first record is written.
    pub fn new(producer_id: i64, timeout_ms: i32, now_ms: i64) -> Self {
        TxnMetadata {
            producer_id,
            previous_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_timestamp_ms: -1,
            last_update_timestamp_ms: now_ms,
            client_transaction_version: TransactionVersion::Tv0,
        }
    }

    /// Whether the epoch is exhausted (see [`is_epoch_exhausted`]).
    pub fn is_epoch_exhausted(&self) -> bool {
        is_epoch_exhausted(self.producer_epoch)
    }

    /// Whether a transaction is open or being completed (Ongoing, PrepareCommit,
    /// PrepareAbort).
    pub fn has_pending_transaction(&self) -> bool {
        matches!(self.state, TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort)
    }

    /// Check the target of a transition the way Kafka's `prepareTransitionTo` does: the
    /// target state accepts the current one, the producer id is not negative and the
    /// epoch is not negative (except for Dead).
    fn checked(&self, target: TxnMetadata) -> Result<TxnMetadata, InvalidTransition> {
        let refuse = |reason| Err(InvalidTransition { from: self.state, to: target.state, reason });
        if !target.state.accepts_from(self.state) {
            return refuse("the target state does not accept the current one");
        }
        if target.producer_id < 0 {
            return refuse("negative producer id");
        }
        if target.state != TxnState::Dead && target.producer_epoch < 0 {
            return refuse("negative producer epoch");
        }
        Ok(target)
    }

    /// InitProducerId on an id that is not in a transaction: bump the epoch (Kafka's
    /// `prepareIncrementProducerEpoch`), into Empty with the new timeout.
    ///
    /// `expected_epoch` is the epoch in a KIP-360 request: equal to the current epoch (or
    /// no current epoch) bumps it and remembers the old one; equal to the last epoch is a
    /// retry of a bump that succeeded, answered with the current epoch unchanged; any
    /// other epoch is fenced: `Ok(None)`, which the caller answers with PRODUCER_FENCED.
    pub fn prepare_increment_epoch(
        &self,
        timeout_ms: i32,
        expected_epoch: Option<i16>,
        now_ms: i64,
    ) -> Result<Option<TxnMetadata>, InvalidTransition> {
        if self.is_epoch_exhausted() {
            return Err(InvalidTransition {
                from: self.state,
                to: TxnState::Empty,
                reason: "cannot bump an exhausted epoch",
            });
        }
        let bumped = self.producer_epoch + 1;
        let (epoch, last) = match expected_epoch {
            None => (bumped, NO_PRODUCER_EPOCH),
            Some(e) if self.producer_epoch == NO_PRODUCER_EPOCH || e == self.producer_epoch => {
                (bumped, self.producer_epoch)
            }
            Some(e) if e == self.last_producer_epoch => {
                (self.producer_epoch, self.last_producer_epoch)
            }
            Some(_) => return Ok(None),
        };
        self.checked(self.empty_with(self.producer_id, epoch, last, timeout_ms, now_ms)).map(Some)
    }

    /// InitProducerId when the epoch is exhausted: a new producer id at epoch 0 (Kafka's
    /// `prepareProducerIdRotation`). `record_last_epoch` (the request carried the current
    /// producer id and epoch) keeps the old epoch as the last epoch, so that a retry is
    /// recognised.
    pub fn prepare_producer_id_rotation(
        &self,
        new_producer_id: i64,
        timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<TxnMetadata, InvalidTransition> {
        if self.has_pending_transaction() {
            return Err(InvalidTransition {
                from: self.state,
                to: TxnState::Empty,
                reason: "cannot rotate the producer id during a transaction",
            });
        }
        let last = if record_last_epoch { self.producer_epoch } else { NO_PRODUCER_EPOCH };
        self.checked(self.empty_with(new_producer_id, 0, last, timeout_ms, now_ms))
    }

    /// The Empty state after InitProducerId: Kafka's `completeTransitionTo(Empty)` takes
    /// the producer id, epochs and timeout, and the old producer id becomes the previous
    /// one. The start timestamp is -1 and the client version TV0, as in the record.
    fn empty_with(
        &self,
        producer_id: i64,
        epoch: i16,
        last_epoch: i16,
        timeout_ms: i32,
        now_ms: i64,
    ) -> TxnMetadata {
        TxnMetadata {
            producer_id,
            previous_producer_id: self.producer_id,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: epoch,
            last_producer_epoch: last_epoch,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_timestamp_ms: -1,
            last_update_timestamp_ms: now_ms,
            client_transaction_version: TransactionVersion::Tv0,
        }
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: into Ongoing with `added` joined to the
    /// partitions; a transaction that was not open starts at `now_ms` (Kafka's
    /// `prepareAddPartitions`). The client version becomes TV0, as Kafka's
    /// `prepareTransitionTo` defaults it.
    pub fn prepare_add_partitions(
        &self,
        added: &BTreeSet<TopicPartition>,
        now_ms: i64,
    ) -> Result<TxnMetadata, InvalidTransition> {
        let start = match self.state {
            TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit => now_ms,
            _ => self.start_timestamp_ms,
        };
        let mut partitions = self.partitions.clone();
        partitions.extend(added.iter().cloned());
        self.checked(TxnMetadata {
            state: TxnState::Ongoing,
            partitions,
            start_timestamp_ms: start,
            last_update_timestamp_ms: now_ms,
            client_transaction_version: TransactionVersion::Tv0,
            ..self.clone()
        })
    }

    /// EndTxn (or the coordinator's own abort): into PrepareCommit / PrepareAbort
    /// (Kafka's `prepareAbortOrCommit`). A TV2 client bumps the epoch (the old one
    /// becomes the last epoch) and may carry the next producer id (allocated because the
    /// epoch is exhausted, -1 otherwise).
    pub fn prepare_abort_or_commit(
        &self,
        state: TxnState,
        client_version: TransactionVersion,
        next_producer_id: i64,
        now_ms: i64,
    ) -> Result<TxnMetadata, InvalidTransition> {
        let mut target = TxnMetadata {
            state,
            last_update_timestamp_ms: now_ms,
            client_transaction_version: client_version,
            ..self.clone()
        };
        if client_version.supports_epoch_bump() {
            let Some(bumped) = self.producer_epoch.checked_add(1) else {
                return Err(InvalidTransition {
                    from: self.state,
                    to: state,
                    reason: "the epoch bump would overflow",
                });
            };
            target.producer_epoch = bumped;
            target.last_producer_epoch = self.producer_epoch;
            target.next_producer_id = next_producer_id;
        }
        self.checked(target)
    }

    /// Once every marker is written: into CompleteCommit / CompleteAbort with no
    /// partitions (Kafka's `prepareComplete`). A TV2 transaction whose EndTxn allocated a
    /// next producer id switches to it at epoch 0, and the old id becomes the previous.
    pub fn prepare_complete(&self, now_ms: i64) -> Result<TxnMetadata, InvalidTransition> {
        let state = if self.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        let mut target = TxnMetadata {
            state,
            partitions: BTreeSet::new(),
            last_update_timestamp_ms: now_ms,
            ..self.clone()
        };
        if self.client_transaction_version.supports_epoch_bump() {
            let rotate = self.next_producer_id != NO_PRODUCER_ID;
            target.producer_id = if rotate { self.next_producer_id } else { self.producer_id };
            target.producer_epoch = if rotate { 0 } else { self.producer_epoch };
            target.previous_producer_id = self.producer_id;
            target.next_producer_id = NO_PRODUCER_ID;
            target.last_producer_epoch = self.producer_epoch;
        }
        self.checked(target)
    }

    /// Transactional id expiration: into Dead, the state of an id whose tombstone is
    /// being written (Kafka's `prepareDead`).
    pub fn prepare_dead(&self) -> Result<TxnMetadata, InvalidTransition> {
        self.checked(TxnMetadata {
            state: TxnState::Dead,
            partitions: BTreeSet::new(),
            ..self.clone()
        })
    }
}
