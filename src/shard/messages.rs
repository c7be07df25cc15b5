//! The typed messages shards send each other over glommio's channel mesh. Each
//! request carries a oneshot sender for its reply; no closures ever cross cores.
//!
//! Three kinds, each with its own routing (see [`ShardMessage`]):
//! - [`DataRequest`]: to a partition's owner or a group's coordinating shard;
//! - [`ControlRequest`]: to the control shard ([`CONTROL_SHARD`]) only;
//! - [`CatalogChanged`]: from the control shard to every other shard.
//!
//! Error replies are [`ResponseError`]s (or [`CatalogError`]s, which map to them),
//! never raw codes; a group request's reply is the coordinator's whole response.

use std::sync::Arc;

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::messages::{ResponseKind, TopicName};

use super::groups::GroupCall;
use crate::error::{KafkaResult, ResponseError};
use crate::metadata::{Catalog, CatalogError, TopicMeta};

/// Index of a shard (0..nr_shards), equal to its position in the channel mesh.
pub type ShardId = usize;

/// The shard that owns the authoritative catalog and the producer-id allocator.
pub const CONTROL_SHARD: ShardId = 0;

/// Where a reply goes: back to the requesting shard's waiting task.
pub type Reply<T> = oneshot::Sender<T>;

/// Result of an append on the owning shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// Offset given to the first record of the batch.
    pub base_offset: i64,
    /// Broker time written into the batch under LogAppendTime, else -1 (ms).
    pub log_append_time: i64,
    /// The partition's log start offset after the append (inclusive).
    pub log_start_offset: i64,
}

/// One partition's record batches in a [`DataRequest::AppendMany`], in request order.
#[derive(Debug)]
pub struct PartitionBatches {
    pub topic: TopicName,
    pub partition: i32,
    /// Validated record batches (magic 2, CRC checked), in the order they arrived.
    pub batches: Vec<Bytes>,
}

/// One partition's read in a [`DataRequest::ReadMany`].
#[derive(Debug, Clone)]
pub struct ReadSpec {
    pub topic: TopicName,
    pub partition: i32,
    /// Inclusive: the first offset wanted (the batch holding it is returned whole).
    pub offset: i64,
    /// About how many bytes of whole batches to return (the first batch is returned
    /// even when larger).
    pub max_bytes: usize,
}

/// What one partition read returned on its owning shard.
#[derive(Debug, Clone, Default)]
pub struct PartitionRead {
    /// `None`, or OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION,
    /// NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR, UNKNOWN_SERVER_ERROR.
    pub error: Option<ResponseError>,
    /// Exclusive: the next offset to be written; -1 when unknown or the read failed.
    pub high_watermark: i64,
    /// Inclusive: the first offset still in the log; -1 when unknown or the read failed.
    pub log_start_offset: i64,
    /// Exclusive: the last stable offset (KIP-98); -1 when unknown or the read failed.
    pub last_stable_offset: i64,
    /// Whole record batches, verbatim from the log (maybe empty).
    pub records: Bytes,
    /// read_committed: the aborted transactions overlapping the read, in marker order;
    /// None for read_uncommitted (the Fetch response's null array).
    pub aborted: Option<Vec<crate::log::txn_index::AbortedTxn>>,
}

impl PartitionRead {
    /// A read that failed before reaching a log.
    pub fn failed(error: ResponseError) -> PartitionRead {
        PartitionRead {
            error: Some(error),
            high_watermark: -1,
            log_start_offset: -1,
            last_stable_offset: -1,
            ..Default::default()
        }
    }
}

/// A ListOffsets answer for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    /// `None`, or UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
    /// KAFKA_STORAGE_ERROR.
    pub error: Option<ResponseError>,
    /// -1 when none matched.
    pub offset: i64,
    /// -1 unless looked up by timestamp (ms).
    pub timestamp: i64,
}

impl ListedOffset {
    /// An answer with no offset: `error`, or none matched (`None`).
    pub fn none(error: Option<ResponseError>) -> ListedOffset {
        ListedOffset { error, offset: -1, timestamp: -1 }
    }
}

/// One partition in a [`DataRequest::DescribeLogDir`] answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirPartition {
    pub topic: String,
    pub partition: i32,
    /// Bytes of record batches stored ([`crate::log::PartitionLog::size_bytes`]).
    pub size_bytes: i64,
    /// High watermark minus log end offset, floored at 0 (Kafka's `offsetLag` of a
    /// current, not future, replica): 0 unless writes are in flight.
    pub offset_lag: i64,
}

/// What a config change in [`ControlRequest::AlterConfigs`] applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigTarget {
    /// A topic's overrides.
    Topic(String),
    /// This node's dynamic broker configs (resource name = its node id).
    Broker,
    /// The cluster-wide dynamic broker defaults (resource name "").
    BrokerDefault,
}

/// One producer in a [`DataRequest::DescribeProducers`] answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Sequence of the last record of its last batch; -1 if none.
    pub last_sequence: i32,
    /// Max timestamp of its last batch, ms; -1 if unknown.
    pub last_timestamp: i64,
    /// Coordinator epoch of its last transaction marker here; -1 if none.
    pub coordinator_epoch: i32,
    /// First offset of its ongoing transaction here; -1 if none.
    pub current_txn_start_offset: i64,
}

/// A topic to create, as CreateTopics asked for it (already resolved to a count).
#[derive(Debug, Clone)]
pub struct NewTopic {
    pub name: String,
    pub partitions: i32,
    pub configs: std::collections::BTreeMap<String, String>,
    /// The shard of each partition, from a manual assignment naming shard nodes
    /// (`--shard-ports`); `None`: placed by load ([`crate::metadata::Catalog::create_topic`]).
    pub shards: Option<Vec<usize>>,
}

/// One transaction marker to append (Kafka's `WriteTxnMarkersRequest` entry, for one
/// partition).
#[derive(Debug, Clone)]
pub struct TxnMarkerWrite {
    pub topic: TopicName,
    pub partition: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub marker: crate::protocol::control::EndTxnMarker,
}

/// Data plane: to a partition's owning shard, or to a group's coordinating shard.
#[derive(Debug)]
pub enum DataRequest {
    /// Append a COMMIT or ABORT control batch to each listed partition this shard owns
    /// (a transaction coordinator ending a transaction, KIP-98), durably as any append.
    /// One result per marker, in order: UNKNOWN_TOPIC_OR_PARTITION,
    /// NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
    /// KAFKA_STORAGE_ERROR.
    WriteTxnMarkers { markers: Vec<TxnMarkerWrite>, reply: Reply<Vec<KafkaResult<()>>> },
    /// Append one record batch (its base offset is assigned on arrival).
    Append {
        topic: TopicName,
        partition: i32,
        batch: Bytes,
        /// Broker time of the Produce request (ms), for LogAppendTime.
        now_ms: i64,
        reply: Reply<KafkaResult<Appended>>,
    },
    /// Append every batch of every listed partition (the part of one Produce request
    /// that the receiving shard owns). Each batch's base offset is assigned on arrival,
    /// in list order. The reply holds one result per listed partition, in list order:
    /// the first batch's [`Appended`], or the partition's first error
    /// (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, OUT_OF_ORDER_SEQUENCE_NUMBER,
    /// INVALID_PRODUCER_EPOCH, KAFKA_STORAGE_ERROR); it is sent once every append is
    /// written.
    AppendMany {
        partitions: Vec<PartitionBatches>,
        /// Broker time of the Produce request (ms), for LogAppendTime.
        now_ms: i64,
        reply: Reply<Vec<KafkaResult<Appended>>>,
    },
    /// Reads every listed partition of this shard (a Fetch's share of the shard: one
    /// message per owning shard, not per partition), all at once; the reply holds one
    /// [`PartitionRead`] per entry of `partitions`, in its order. Up to the last stable
    /// offset, with the aborted transactions, when `read_committed`. `max_bytes` is the
    /// Fetch's response limit (bytes): the partitions with data share it in list order,
    /// each reading at most `min(its max_bytes, what is left)`; once it is used up, the
    /// rest are answered with their offsets and no records (the first partition with
    /// data still returns one whole batch, KIP-74). So one message reads about
    /// `max_bytes` plus one batch, however many partitions it lists.
    ReadMany {
        partitions: Vec<ReadSpec>,
        read_committed: bool,
        max_bytes: usize,
        reply: Reply<Vec<PartitionRead>>,
    },
    /// Resolve once any listed partition's high watermark passes its offset, or after
    /// `timeout_ms`.
    WaitForData { partitions: Vec<(TopicName, i32, i64)>, timeout_ms: u64, reply: Reply<()> },
    /// ListOffsets for one timestamp spec (-1 latest, -2 earliest, -3 max timestamp,
    /// -4 earliest local, a timestamp >= 0 in ms; other values find nothing); latest is
    /// the last stable offset and found offsets must be below it when `read_committed`.
    ListOffset {
        topic: TopicName,
        partition: i32,
        timestamp: i64,
        read_committed: bool,
        reply: Reply<ListedOffset>,
    },
    /// The log start offset and log end offset of one partition (inclusive start,
    /// exclusive end), for OffsetForLeaderEpoch (`__consumer_offsets` partitions too). Errors: UNKNOWN_TOPIC_OR_PARTITION,
    /// NOT_LEADER_OR_FOLLOWER.
    LogOffsets { topic: TopicName, partition: i32, reply: Reply<KafkaResult<(i64, i64)>> },
    /// DescribeLogDirs: every partition log this shard holds (data partitions it owns
    /// and the `__consumer_offsets` partitions it has opened), or only those `filter`
    /// names (topic -> partitions); unknown names are left out, as in Kafka.
    DescribeLogDir {
        filter: Option<std::collections::HashMap<String, Vec<i32>>>,
        reply: Reply<Vec<LogDirPartition>>,
    },
    /// DeleteRecords for one partition: move its log start offset up to `offset` (-1:
    /// the high watermark). The reply is the low watermark (the log start offset
    /// afterwards), or OFFSET_OUT_OF_RANGE, POLICY_VIOLATION (`cleanup.policy` without
    /// `delete`), UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR.
    DeleteRecords { topic: TopicName, partition: i32, offset: i64, reply: Reply<KafkaResult<i64>> },
    /// DescribeProducers for one partition: its idempotent producers, by producer id,
    /// or UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER.
    DescribeProducers {
        topic: TopicName,
        partition: i32,
        reply: Reply<KafkaResult<Vec<ActiveProducer>>>,
    },
    /// One group request (or the part of a multi-group request for the groups that
    /// shard coordinates).
    Group { call: Box<GroupCall>, reply: Reply<ResponseKind> },
    /// A transaction request for a transactional id this shard coordinates.
    Txn(Box<super::transactions::TxnCall>),
    /// The receiving shard's metrics, for a scrape of `--metrics-listen`.
    Metrics { reply: Reply<crate::metrics::ShardSnapshot> },
}

/// Control plane: only ever sent to [`CONTROL_SHARD`] (see `Shard::ask_control`).
#[derive(Debug)]
pub enum ControlRequest {
    /// Create topics (or only validate them).
    CreateTopics {
        topics: Vec<NewTopic>,
        validate_only: bool,
        reply: Reply<Vec<Result<TopicMeta, CatalogError>>>,
    },
    /// Delete topics by name.
    DeleteTopics { names: Vec<String>, reply: Reply<Vec<Result<TopicMeta, CatalogError>>> },
    /// Grow topics to a new partition count, with the new partitions' manual
    /// assignment when the request gave one.
    CreatePartitions {
        topics: Vec<(String, i32, Option<crate::metadata::AssignedPartitions>)>,
        validate_only: bool,
        reply: Reply<Vec<Result<(), CatalogError>>>,
    },
    /// Change topics' config overrides or the dynamic broker configs (AlterConfigs,
    /// IncrementalAlterConfigs), or only validate the changes.
    AlterConfigs {
        changes: Vec<(ConfigTarget, crate::config_ops::ConfigChange)>,
        validate_only: bool,
        reply: Reply<Vec<Result<(), CatalogError>>>,
    },
    /// CreateAcls: adds the bindings that are valid (one result per binding, in order:
    /// `Err` is an INVALID_REQUEST or KAFKA_STORAGE_ERROR with its message).
    CreateAcls {
        bindings: Vec<crate::security::acl::AclBinding>,
        reply: Reply<Vec<Result<(), CatalogError>>>,
    },
    /// DeleteAcls: removes every binding each filter matches (one result per filter:
    /// the bindings it removed, or why it removed none).
    DeleteAcls {
        filters: Vec<crate::security::acl::AclBindingFilter>,
        reply: Reply<Vec<Result<Vec<crate::security::acl::AclBinding>, CatalogError>>>,
    },
    /// AlterClientQuotas: applies the alterations (or only validates them); one result
    /// per entity ([`crate::quota::alter::alter`]: INVALID_REQUEST messages), every
    /// success becoming KAFKA_STORAGE_ERROR when the catalog cannot be persisted.
    AlterClientQuotas {
        alterations: Vec<crate::quota::alter::Alteration>,
        validate_only: bool,
        reply: Reply<Vec<crate::quota::alter::ControlResult>>,
    },
    /// A fresh producer id (InitProducerId); KAFKA_STORAGE_ERROR when the id block
    /// cannot be reserved on disk.
    AllocateProducerId { reply: Reply<KafkaResult<i64>> },
    /// AlterUserScramCredentials: one result per user
    /// ([`crate::security::credentials::alter`]; KAFKA_STORAGE_ERROR for every
    /// success when the catalog cannot be persisted).
    AlterScramCredentials {
        deletions: Vec<crate::security::credentials::Deletion>,
        upsertions: Vec<crate::security::credentials::Upsertion>,
        reply: Reply<Vec<crate::security::credentials::AlterResult>>,
    },
}

/// From the control shard to every other shard: the new catalog; the reply comes
/// after the shard opened (or deleted) the logs it owns.
#[derive(Debug)]
pub struct CatalogChanged {
    pub catalog: Arc<Catalog>,
    pub reply: Reply<()>,
}

/// Everything that crosses cores. Built only by `Shard`'s typed senders, so a
/// control request can only reach the control shard.
#[derive(Debug)]
pub enum ShardMessage {
    Data(DataRequest),
    Control(ControlRequest),
    Catalog(CatalogChanged),
}
