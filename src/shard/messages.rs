//! The typed messages shards send each other over glommio's channel mesh. Each
//! request carries a oneshot sender for its reply; no closures ever cross cores.

use std::sync::Arc;

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::messages::TopicName;

use crate::metadata::{Catalog, CatalogError, TopicMeta};

/// Index of a shard (0..nr_shards), equal to its position in the channel mesh.
pub type ShardId = usize;

/// Where a reply goes: back to the requesting shard's waiting task.
pub type Reply<T> = oneshot::Sender<T>;

/// Result of an append on the owning shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// Offset given to the first record of the batch.
    pub base_offset: i64,
    /// Broker time written into the batch under LogAppendTime, else -1 (ms).
    pub log_append_time: i64,
    pub log_start_offset: i64,
}

/// What one partition read returned on its owning shard.
#[derive(Debug, Clone, Default)]
pub struct PartitionRead {
    /// Kafka error code: 0, OFFSET_OUT_OF_RANGE (1), UNKNOWN_TOPIC_OR_PARTITION (3),
    /// NOT_LEADER_OR_FOLLOWER (6) or KAFKA_STORAGE_ERROR (56).
    pub error: i16,
    /// Exclusive: the next offset to be written.
    pub high_watermark: i64,
    pub log_start_offset: i64,
    /// Whole record batches, verbatim from the log (maybe empty).
    pub records: Bytes,
}

/// A ListOffsets answer for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    pub error: i16,
    /// -1 when none matched.
    pub offset: i64,
    /// -1 unless looked up by timestamp.
    pub timestamp: i64,
}

/// A topic to create, as CreateTopics asked for it (already resolved to a count).
#[derive(Debug, Clone)]
pub struct NewTopic {
    pub name: String,
    pub partitions: i32,
    pub configs: std::collections::BTreeMap<String, String>,
}

/// Every message that crosses cores.
#[derive(Debug)]
pub enum ShardRequest {
    /// Data plane, to a partition's owner: append one record batch.
    Append {
        topic: TopicName,
        partition: i32,
        batch: Bytes,
        now_ms: i64,
        reply: Reply<Result<Appended, i16>>,
    },
    /// Data plane, to a partition's owner: read whole batches from `offset`.
    Read {
        topic: TopicName,
        partition: i32,
        offset: i64,
        max_bytes: usize,
        reply: Reply<PartitionRead>,
    },
    /// Data plane, to an owner: resolve once any listed partition's high watermark
    /// passes its offset, or after `timeout_ms`.
    WaitForData { partitions: Vec<(TopicName, i32, i64)>, timeout_ms: u64, reply: Reply<()> },
    /// Data plane, to a partition's owner: ListOffsets for one timestamp spec
    /// (-1 latest, -2 earliest, -3 max timestamp, else a timestamp in ms).
    ListOffset { topic: TopicName, partition: i32, timestamp: i64, reply: Reply<ListedOffset> },
    /// To a group's coordinating shard: one group request (or the part of a
    /// multi-group request for the groups that shard coordinates).
    Group {
        call: Box<super::groups::GroupCall>,
        reply: Reply<kafka_protocol::messages::ResponseKind>,
    },
    /// Control plane, to shard 0: create topics (or only validate them).
    CreateTopics {
        topics: Vec<NewTopic>,
        validate_only: bool,
        reply: Reply<Vec<Result<TopicMeta, CatalogError>>>,
    },
    /// Control plane, to shard 0: delete topics by name.
    DeleteTopics { names: Vec<String>, reply: Reply<Vec<Result<TopicMeta, CatalogError>>> },
    /// Control plane, to shard 0: grow topics to a new partition count.
    CreatePartitions {
        topics: Vec<(String, i32)>,
        validate_only: bool,
        reply: Reply<Vec<Result<(), CatalogError>>>,
    },
    /// Control plane, to shard 0: a fresh producer id (InitProducerId).
    AllocateProducerId { reply: Reply<Result<i64, i16>> },
    /// From shard 0 to every other shard: the new catalog; the reply comes after the
    /// shard opened (or deleted) the logs it owns.
    CatalogChanged { catalog: Arc<Catalog>, reply: Reply<()> },
}
