//! DeleteRecords (key 21, KIP-107): moves each named partition's log start offset up to
//! the requested offset, answered by the partition's owner
//! ([`crate::log::PartitionLog::delete_records`]). `kafka-delete-records`,
//! `Admin.deleteRecords`, and the admin clients of librdkafka, kafka-python and kafkajs
//! call it.

use futures_channel::oneshot;
use indexmap::IndexMap;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse, TopicName};

use super::{Ctx, Outcome, Versions};
use crate::error::{self, KafkaResult, ResponseError};
use crate::metadata::is_internal;
use crate::protocol::strings::topic_name;
use crate::shard::DataRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// Answers every partition with its low watermark (the log start offset afterwards) or
/// -1 and an error: UNKNOWN_TOPIC_OR_PARTITION for a partition the catalog lacks,
/// INVALID_TOPIC_EXCEPTION for an internal topic (Kafka never deletes their records),
/// and the owner's OFFSET_OUT_OF_RANGE (offset above the high watermark, or negative
/// other than -1), POLICY_VIOLATION (`cleanup.policy` without `delete`),
/// NOT_LEADER_OR_FOLLOWER or KAFKA_STORAGE_ERROR. The request's `timeout_ms` is not
/// needed: a single node has no followers to wait for.
///
/// As Kafka's `KafkaApis.handleDeleteRecordsRequest` keys the request by topic
/// partition, a partition named more than once is answered once, with the offset its
/// last mention asks for, and a topic named twice gets one topic result. Topics and
/// partitions keep the order of their first mention.
pub async fn handle(ctx: &Ctx, request: DeleteRecordsRequest) -> Outcome<DeleteRecordsResponse> {
    let catalog = ctx.shard.catalog();
    type Pending = Result<oneshot::Receiver<KafkaResult<i64>>, ResponseError>;
    let wanted = deduplicate(request);
    let mut pending: Vec<(TopicName, Vec<(i32, Pending)>)> = Vec::with_capacity(wanted.len());
    for (name, partitions) in wanted {
        let mut parts = Vec::with_capacity(partitions.len());
        // Kafka: DELETE on the topic, checked before whether it exists.
        let denied = !ctx.authorize(crate::security::acl::AclOperation::Delete, crate::security::acl::ResourceType::Topic, name.as_str());
        for (partition, offset) in partitions {
            let entry = match catalog.owner(name.as_str(), partition) {
                _ if denied => Err(ResponseError::TopicAuthorizationFailed),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(_) if is_internal(name.as_str()) => Err(ResponseError::InvalidTopicException),
                Some(owner) => {
                    let (tx, rx) = oneshot::channel();
                    let req = DataRequest::DeleteRecords {
                        topic: topic_name(name.as_str()),
                        partition,
                        offset,
                        reply: tx,
                    };
                    ctx.shard.send(owner, req).await;
                    Ok(rx)
                }
            };
            parts.push((partition, entry));
        }
        pending.push((name, parts));
    }
    Outcome::later(async move {
        let mut topics = Vec::with_capacity(pending.len());
        for (name, parts) in pending {
            let mut partitions = Vec::with_capacity(parts.len());
            for (index, entry) in parts {
                let result = match entry {
                    Ok(rx) => rx.await.unwrap_or(Err(ResponseError::UnknownServerError)),
                    Err(e) => Err(e),
                };
                let (low_watermark, error) = match result {
                    Ok(low) => (low, None),
                    Err(e) => (-1, Some(e)),
                };
                partitions.push(
                    DeleteRecordsPartitionResult::default()
                        .with_partition_index(index)
                        .with_low_watermark(low_watermark)
                        .with_error_code(error::code(error)),
                );
            }
            topics.push(
                DeleteRecordsTopicResult::default().with_name(name).with_partitions(partitions),
            );
        }
        DeleteRecordsResponse::default().with_topics(topics)
    })
}

/// The request's (topic, [(partition, offset)]) with each topic and each partition
/// once, in order of first mention; a repeated partition takes its last offset.
fn deduplicate(request: DeleteRecordsRequest) -> IndexMap<TopicName, IndexMap<i32, i64>> {
    let mut wanted: IndexMap<TopicName, IndexMap<i32, i64>> = IndexMap::new();
    for t in request.topics {
        let partitions = wanted.entry(t.name).or_default();
        for p in t.partitions {
            partitions.insert(p.partition_index, p.offset);
        }
    }
    wanted
}
