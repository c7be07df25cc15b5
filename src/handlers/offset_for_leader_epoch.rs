//! OffsetForLeaderEpoch (key 23, KIP-101 and KIP-320): the end offset of a leader
//! epoch, with which Java, franz-go and librdkafka consumers validate their positions
//! (detect truncation) after a metadata change, and followers truncate.
//!
//! Every partition has had one leader epoch, [`PARTITION_LEADER_EPOCH`], since it was
//! created, starting at its log start offset; so the epoch cache Kafka keeps per
//! partition (`LeaderEpochFileCache`) is the single entry (0, log start offset), and the
//! answers are Kafka's `endOffsetFor` on that cache.

use futures_channel::oneshot;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::{self, KafkaResult, ResponseError};
use crate::metadata::PARTITION_LEADER_EPOCH;
use crate::protocol::strings::topic_name;
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::DataRequest;

/// v0-1 left Kafka in 4.0 (KIP-896).
pub const VERSIONS: Versions = Versions { min: 2, max: 4 };

/// Kafka's "no epoch" (`RecordBatch.NO_PARTITION_LEADER_EPOCH`, `UNDEFINED_EPOCH`).
const UNDEFINED_EPOCH: i32 = -1;
/// Kafka's `UNDEFINED_EPOCH_OFFSET`.
const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// The answer for one partition whose log starts at `log_start` and ends (exclusive) at
/// `log_end`: `(error, leader_epoch, end_offset)`.
/// - `current_leader_epoch` (-1: not checked) above the partition's epoch gets
///   UNKNOWN_LEADER_EPOCH, below it FENCED_LEADER_EPOCH (Kafka's `getLocalLog`).
/// - `leader_epoch` -1 or above the partition's epoch: (-1, -1); equal: (epoch, log
///   end offset); below it: (the requested epoch, the epoch's start offset).
pub fn epoch_end_offset(
    current_leader_epoch: i32,
    leader_epoch: i32,
    log_start: i64,
    log_end: i64,
) -> (Option<ResponseError>, i32, i64) {
    if current_leader_epoch != UNDEFINED_EPOCH {
        if current_leader_epoch > PARTITION_LEADER_EPOCH {
            return (Some(ResponseError::UnknownLeaderEpoch), UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if current_leader_epoch < PARTITION_LEADER_EPOCH {
            return (Some(ResponseError::FencedLeaderEpoch), UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
    }
    if leader_epoch == UNDEFINED_EPOCH || leader_epoch > PARTITION_LEADER_EPOCH {
        (None, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    } else if leader_epoch == PARTITION_LEADER_EPOCH {
        (None, PARTITION_LEADER_EPOCH, log_end)
    } else {
        (None, leader_epoch, log_start)
    }
}

/// Answers every partition: UNKNOWN_TOPIC_OR_PARTITION for one the catalog lacks,
/// the owner's NOT_LEADER_OR_FOLLOWER, or [`epoch_end_offset`] on its offsets. With the
/// authorizer on, a connection with neither CLUSTER_ACTION on the cluster nor DESCRIBE
/// on a topic gets TOPIC_AUTHORIZATION_FAILED for its partitions (Kafka's
/// `handleOffsetForLeaderEpochRequest`), whether the topic exists or not.
pub async fn handle(
    ctx: &Ctx,
    request: OffsetForLeaderEpochRequest,
) -> Outcome<OffsetForLeaderEpochResponse> {
    let catalog = ctx.shard.catalog();
    let replica = ctx.authorize_cluster(AclOperation::ClusterAction);
    type Pending = Result<oneshot::Receiver<KafkaResult<(i64, i64)>>, ResponseError>;
    let mut pending: Vec<Vec<(i32, i32, i32, Pending)>> = Vec::with_capacity(request.topics.len());
    for t in &request.topics {
        let mut parts = Vec::with_capacity(t.partitions.len());
        let authorized =
            replica || ctx.authorize(AclOperation::Describe, ResourceType::Topic, t.topic.as_str());
        for p in &t.partitions {
            // `__consumer_offsets` included: its owner answers from the group log.
            let entry = match catalog.owner(t.topic.as_str(), p.partition) {
                _ if !authorized => Err(ResponseError::TopicAuthorizationFailed),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(owner) => {
                    let (tx, rx) = oneshot::channel();
                    let req = DataRequest::LogOffsets {
                        topic: topic_name(t.topic.as_str()),
                        partition: p.partition,
                        reply: tx,
                    };
                    ctx.shard.send(owner, req).await;
                    Ok(rx)
                }
            };
            parts.push((p.partition, p.current_leader_epoch, p.leader_epoch, entry));
        }
        pending.push(parts);
    }
    let names: Vec<_> = request.topics.into_iter().map(|t| t.topic).collect();
    Outcome::later(async move {
        let mut topics = Vec::with_capacity(names.len());
        for (name, parts) in names.into_iter().zip(pending) {
            let mut partitions = Vec::with_capacity(parts.len());
            for (partition, current, requested, entry) in parts {
                let offsets = match entry {
                    Ok(rx) => rx.await.unwrap_or(Err(ResponseError::UnknownServerError)),
                    Err(e) => Err(e),
                };
                let (error, leader_epoch, end_offset) = match offsets {
                    Ok((start, end)) => epoch_end_offset(current, requested, start, end),
                    Err(e) => (Some(e), UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET),
                };
                partitions.push(
                    EpochEndOffset::default()
                        .with_partition(partition)
                        .with_error_code(error::code(error))
                        .with_leader_epoch(leader_epoch)
                        .with_end_offset(end_offset),
                );
            }
            topics.push(OffsetForLeaderTopicResult::default().with_topic(name).with_partitions(partitions));
        }
        OffsetForLeaderEpochResponse::default().with_topics(topics)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_follow_kafkas_epoch_cache_with_one_epoch() {
        let fenced = Some(ResponseError::FencedLeaderEpoch);
        let unknown = Some(ResponseError::UnknownLeaderEpoch);
        // (current, requested) -> (error, epoch, end offset), log 5..42
        let cases = [
            ((-1, 0), (None, 0, 42)),
            ((0, 0), (None, 0, 42)),
            ((-1, 1), (None, -1, -1)),
            ((-1, -1), (None, -1, -1)),
            ((-1, -7), (None, -7, 5)),
            ((1, 0), (unknown, -1, -1)),
            ((-2, 0), (fenced, -1, -1)),
        ];
        for ((current, requested), want) in cases {
            assert_eq!(epoch_end_offset(current, requested, 5, 42), want, "{current} {requested}");
        }
    }
}
