//! ListOffsets (key 2): earliest (-2), latest (-1), max timestamp (-3, KIP-734),
//! earliest-local (-4, KIP-1005) and lookups by timestamp through the time index,
//! each answered by the partition's owner. With isolation level 1 (read_committed,
//! KIP-98) latest is the last stable offset and a lookup never answers an offset at or
//! past it, as Kafka's `fetchOffsetForTimestamp`.

use futures_channel::oneshot;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::{self, ResponseError};
use crate::protocol::strings::topic_name;
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::messages::ListedOffset;
use crate::shard::DataRequest;

pub const VERSIONS: Versions = Versions { min: 1, max: 10 };

/// Answers every partition; per partition UNKNOWN_TOPIC_OR_PARTITION, or
/// INVALID_REQUEST for a partition named twice (as Kafka does), or the owner's
/// NOT_LEADER_OR_FOLLOWER / KAFKA_STORAGE_ERROR.
pub async fn handle(ctx: &Ctx, request: ListOffsetsRequest) -> Outcome<ListOffsetsResponse> {
    let v = ctx.api_version;
    let catalog = ctx.shard.catalog();
    let mut seen = std::collections::HashMap::new();
    for t in &request.topics {
        for p in &t.partitions {
            *seen.entry((t.name.0.to_string(), p.partition_index)).or_insert(0) += 1;
        }
    }
    // Start every lookup now; the answers are collected in request order later.
    type Lookup = Result<oneshot::Receiver<ListedOffset>, ResponseError>;
    let mut pending: Vec<Vec<(i32, Lookup)>> = Vec::new();
    for t in &request.topics {
        let mut parts = Vec::new();
        let describe_denied =
            !ctx.authorize(AclOperation::Describe, ResourceType::Topic, t.name.as_str());
        for p in &t.partitions {
            let key = (t.name.0.to_string(), p.partition_index);
            let entry = if describe_denied {
                Err(ResponseError::TopicAuthorizationFailed)
            } else if seen[&key] > 1 {
                Err(ResponseError::InvalidRequest)
            } else {
                match catalog.owner(t.name.as_str(), p.partition_index) {
                    None => Err(ResponseError::UnknownTopicOrPartition),
                    Some(owner) => {
                        let (tx, rx) = oneshot::channel();
                        let req = DataRequest::ListOffset {
                            topic: topic_name(t.name.as_str()),
                            partition: p.partition_index,
                            timestamp: p.timestamp,
                            read_committed: request.isolation_level == 1,
                            reply: tx,
                        };
                        ctx.shard.send(owner, req).await;
                        Ok(rx)
                    }
                }
            };
            parts.push((p.partition_index, entry));
        }
        pending.push(parts);
    }
    let names: Vec<_> = request.topics.into_iter().map(|t| t.name).collect();
    Outcome::later(async move {
        let mut topics = Vec::with_capacity(names.len());
        for (name, parts) in names.into_iter().zip(pending) {
            let mut partitions = Vec::with_capacity(parts.len());
            for (index, entry) in parts {
                let listed = match entry {
                    Ok(rx) => rx
                        .await
                        .unwrap_or(ListedOffset::none(Some(ResponseError::UnknownServerError))),
                    Err(error) => ListedOffset::none(Some(error)),
                };
                let mut r = ListOffsetsPartitionResponse::default()
                    .with_partition_index(index)
                    .with_error_code(error::code(listed.error))
                    .with_offset(listed.offset)
                    .with_timestamp(listed.timestamp);
                if v >= 4 && listed.error.is_none() && listed.offset >= 0 {
                    r.leader_epoch = crate::metadata::PARTITION_LEADER_EPOCH;
                }
                partitions.push(r);
            }
            topics.push(
                ListOffsetsTopicResponse::default().with_name(name).with_partitions(partitions),
            );
        }
        ListOffsetsResponse::default().with_topics(topics)
    })
}
