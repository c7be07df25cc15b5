//! The transaction coordinator (KIP-98, with KIP-360 producer recovery and KIP-890
//! transactions versions), as a pure state machine.
//!
//! [`TxnCoordinator`] follows Apache Kafka's `kafka.coordinator.transaction`
//! (`TransactionCoordinator`, `TransactionMetadata`, `TransactionStateManager`; the 4.0
//! development snapshot of October 2024). It does no I/O, owns no timer and never
//! sleeps: the shard that owns some partitions of `__transaction_state` feeds it
//! requests and the current time (ms since the Unix epoch) and carries out what it
//! decides.
//!
//! # How the caller drives it
//!
//! A request that changes an id returns a [`Decision`]:
//!
//! - [`Decision::Answer`]: answer the client now (Kafka's `Left(error)`, or an OK for a
//!   retry that needs no write).
//! - [`Decision::NeedProducerId`]: the transition needs a fresh producer id (a new
//!   transactional id, an exhausted epoch). Allocate one (in shardlog a control-shard
//!   request), then call the same method again with it; if the allocation fails,
//!   answer the allocation's error. Nothing changed in the meantime.
//! - [`Decision::Write`]: Kafka's two-phase pattern. The transition is *prepared*: the
//!   id has a pending transition, and any other request that would change it gets
//!   CONCURRENT_TRANSACTIONS. Append the [`TxnWrite`]'s record to its
//!   `__transaction_state` partition and make it durable (fdatasync), then call
//!   [`TxnCoordinator::write_completed`] with the append's result: on success the
//!   transition completes, on failure it is dropped (the pending state is cleared;
//!   only a failed CompleteCommit / CompleteAbort stays pending, to be retried). The
//!   [`WriteDone`] says what to answer and, after a PrepareCommit / PrepareAbort,
//!   which [`TxnMarkers`] to send.
//!
//! Markers: send WriteTxnMarkers (commit or abort, the producer id and epoch, the
//! coordinator epoch) to the owner of every partition in [`TxnMarkers::partitions`];
//! once all are written call [`TxnCoordinator::markers_written`], which returns the
//! CompleteCommit / CompleteAbort record to write, and report that write to
//! `write_completed` as any other. While markers are out, the id stays pending.
//!
//! Timers (the caller's): every `transaction.abort.timed.out.transaction.cleanup.interval.ms`
//! (Kafka: 10 s) call [`TxnCoordinator::abort_timed_out_transactions`], every
//! `transaction.remove.expired.transaction.cleanup.interval.ms` (Kafka: 1 h)
//! [`TxnCoordinator::expire_transactional_ids`]; both return writes to carry out the
//! same way.
//!
//! Coordinator epoch: the markers carry the epoch a partition was loaded at
//! ([`TxnCoordinator::begin_load`]); a partition leader refuses markers of an older
//! coordinator epoch than the last it saw for the producer, so the caller must never
//! load a partition at a lower epoch than before (a constant is fine on one broker).
//!
//! Start-up or a new partition: [`TxnCoordinator::begin_load`], every record of the
//! partition in log order to [`TxnCoordinator::load_record`], then
//! [`TxnCoordinator::finish_load`], whose markers (ids left in PrepareCommit /
//! PrepareAbort) must be sent again. Requests for a loading partition get
//! COORDINATOR_LOAD_IN_PROGRESS; for a partition not owned, NOT_COORDINATOR.
//!
//! Lives on: the shard that owns the `__transaction_state` partitions it holds; never
//! shared across cores.
//!
//! # Producer id allocation
//!
//! The caller hands in an already allocated id (`fresh_producer_id`) only after the
//! state machine asked for one with [`Decision::NeedProducerId`]. A closure or trait
//! would have to be synchronous (shardlog's allocator is an asynchronous control-shard
//! request that may fail), and pre-allocating on every call would burn an id per
//! InitProducerId. Asking and being called again keeps the machine pure and every
//! allocation explicit; an id allocated but no longer needed when the call is repeated
//! is simply not used.
//!
//! # Layout
//!
//! - `state.rs`: the eight states, their log ids and names, transition rules;
//!   [`TransactionVersion`], [`TxnResult`];
//! - `metadata.rs`: [`TxnMetadata`] and its `prepare_*` transitions;
//! - `records.rs`: the `__transaction_state` key/value format;
//! - `coordinator.rs`: the per-partition state, writes, markers, loading;
//! - `init_producer_id.rs`, `add_partitions.rs` (and the KIP-890 verification),
//!   `end_txn.rs` (and the coordinator's own aborts), `timeouts.rs`, `describe.rs`
//!   (DescribeTransactions, ListTransactions).

mod add_partitions;
mod coordinator;
mod describe;
mod end_txn;
mod init_producer_id;
mod metadata;
mod records;
mod state;
mod timeouts;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use kafka_protocol::messages::ApiKey;

use crate::error::ResponseError;

pub use coordinator::TxnCoordinator;
pub use describe::{ListFilter, ListedTxn, TxnDescription, TxnListing};
pub use metadata::{
    is_epoch_exhausted, InvalidTransition, TopicPartition, TxnMetadata, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
};
pub use records::{DecodeError, TxnLogPartitions, TxnLogValue, TxnRecord, KEY_VERSION};
pub use state::{TransactionVersion, TxnResult, TxnState, ALL_STATES};

/// The internal topic whose partition AddOffsetsToTxn adds (with the group's partition).
pub const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The transaction coordinator's settings. Kafka names and defaults in the field docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions`: how many partitions `__transaction_state`
    /// has (placement of transactional ids). Default 50.
    pub num_partitions: i32,
    /// `transaction.max.timeout.ms`: the largest transaction timeout InitProducerId
    /// accepts (ms). Default 900000 (15 minutes).
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: an id idle this long (ms) in Empty,
    /// CompleteCommit or CompleteAbort is deleted. Default 604800000 (7 days).
    pub transactional_id_expiration_ms: i64,
    /// The broker's finalized `transaction.version`: the value version written (0
    /// below TV1, 1 from TV1) and the version the coordinator's own aborts use.
    /// Default TV0 (what shardlog advertises today).
    pub transaction_version: TransactionVersion,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            num_partitions: 50,
            max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            transaction_version: TransactionVersion::Tv0,
        }
    }
}

/// The `__transaction_state` partition of `transactional_id`: Kafka's
/// `abs(transactionalId.hashCode) % transaction.state.log.num.partitions`, with Java's
/// `String.hashCode` and `Utils.abs` (`i32::MIN` counts as 0).
pub fn partition_for(transactional_id: &str, num_partitions: i32) -> i32 {
    let hash = crate::shard::groups::java_string_hash(transactional_id);
    let positive = if hash == i32::MIN { 0 } else { hash.unsigned_abs() };
    (positive % num_partitions.max(1) as u32) as i32
}

/// A producer id and epoch: what InitProducerId and EndTxn v5+ answer, and what a
/// KIP-360 InitProducerId carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerIdAndEpoch {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
}

impl ProducerIdAndEpoch {
    /// The answer of a failed InitProducerId or EndTxn: -1 / -1.
    pub const NONE: ProducerIdAndEpoch =
        ProducerIdAndEpoch { producer_id: NO_PRODUCER_ID, producer_epoch: NO_PRODUCER_EPOCH };

    /// The id and epoch an InitProducerId request carries (KIP-360, v3+): -1 / -1 is
    /// none; only one of them -1 is INVALID_REQUEST (Kafka's
    /// `KafkaApis.handleInitProducerIdRequest`).
    pub fn from_request(
        producer_id: i64,
        producer_epoch: i16,
    ) -> Result<Option<Self>, ResponseError> {
        match (producer_id, producer_epoch) {
            (NO_PRODUCER_ID, NO_PRODUCER_EPOCH) => Ok(None),
            (NO_PRODUCER_ID, _) | (_, NO_PRODUCER_EPOCH) => Err(ResponseError::InvalidRequest),
            _ => Ok(Some(ProducerIdAndEpoch { producer_id, producer_epoch })),
        }
    }
}

/// What the caller does with a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision<T> {
    /// Answer the client now with this.
    Answer(Result<T, ResponseError>),
    /// Allocate a producer id and call again with it (see the module docs).
    NeedProducerId,
    /// Write this record durably, then call [`TxnCoordinator::write_completed`]; its
    /// [`WriteDone`] holds the answer.
    Write(TxnWrite),
}

/// A record the coordinator needs durable before it goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnWrite {
    /// The `__transaction_state` partition to append to.
    pub partition: i32,
    /// The coordinator epoch of that partition when the write was decided (a write
    /// reported after the partition was reloaded is answered NOT_COORDINATOR).
    pub coordinator_epoch: i32,
    /// The record (key and value; a `None` value is appended as a null value).
    pub record: TxnRecord,
}

/// The end of a write: what to answer and what to do next.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteDone {
    /// The answer to the request that caused the write, if a client waits for one:
    /// InitProducerId: the producer id and epoch, or the error (an InitProducerId that
    /// had to abort an ongoing transaction gets CONCURRENT_TRANSACTIONS once the abort
    /// is logged, so that the client retries); AddPartitionsToTxn / AddOffsetsToTxn:
    /// `Ok` (ignore the value) or the error; EndTxn: the producer id and epoch to
    /// answer (v5+ carries them) or the error (answered with -1 / -1). For the
    /// coordinator's own writes (timeouts, completions, expirations) nobody waits.
    pub answer: Result<ProducerIdAndEpoch, ResponseError>,
    /// After a PrepareCommit / PrepareAbort record: the markers to send now.
    pub markers: Option<TxnMarkers>,
}

/// The WriteTxnMarkers work of one transaction: a marker of kind `result` for
/// `producer_id` / `producer_epoch` at `coordinator_epoch` in every partition of
/// `partitions`. Kafka source: `TransactionMarkerChannelManager.addTxnMarkersToSend`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarkers {
    /// The transactional id.
    pub transactional_id: String,
    /// Its `__transaction_state` partition.
    pub partition: i32,
    /// The coordinator epoch the markers carry (the partition's).
    pub coordinator_epoch: i32,
    /// The producer id the markers carry.
    pub producer_id: i64,
    /// The producer epoch the markers carry (after a TV2 bump, the bumped one).
    pub producer_epoch: i16,
    /// Commit or abort.
    pub result: TxnResult,
    /// The partitions that get a marker (may be empty: complete at once).
    pub partitions: BTreeSet<TopicPartition>,
}

/// The error a request of `api` at `api_version` answers for `error`: clients older
/// than PRODUCER_FENCED (InitProducerId before v4, AddPartitionsToTxn, AddOffsetsToTxn
/// and EndTxn before v2) get INVALID_PRODUCER_EPOCH instead (Kafka's `KafkaApis`).
pub fn error_for_version(api: ApiKey, api_version: i16, error: ResponseError) -> ResponseError {
    let first_with_fenced = match api {
        ApiKey::InitProducerId => 4,
        ApiKey::AddPartitionsToTxn | ApiKey::AddOffsetsToTxn | ApiKey::EndTxn => 2,
        _ => 0,
    };
    if error == ResponseError::ProducerFenced && api_version < first_with_fenced {
        ResponseError::InvalidProducerEpoch
    } else {
        error
    }
}
