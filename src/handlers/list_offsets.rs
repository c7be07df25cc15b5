//! ListOffsets (key 2): earliest (-2), latest (-1), max timestamp (-3, KIP-734),
//! earliest-local (-4, KIP-1005) and lookups by timestamp through the time index,
//! each answered by the partition's owner.

use futures_channel::oneshot;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::{Ctx, Versions};
use crate::shard::messages::ListedOffset;
use crate::shard::{Shard, ShardRequest};

pub const VERSIONS: Versions = Versions { min: 1, max: 10 };

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REQUEST: i16 = 42;
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Answers every partition; per partition UNKNOWN_TOPIC_OR_PARTITION, or
/// INVALID_REQUEST for a partition named twice (as Kafka does).
pub async fn handle(ctx: &Ctx, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let v = ctx.api_version;
    let catalog = ctx.shard.catalog();
    let mut seen = std::collections::HashMap::new();
    for t in &request.topics {
        for p in &t.partitions {
            *seen.entry((t.name.0.to_string(), p.partition_index)).or_insert(0) += 1;
        }
    }
    // Start every lookup, then collect the answers in request order.
    let mut pending: Vec<Vec<(i32, Result<oneshot::Receiver<ListedOffset>, i16>)>> = Vec::new();
    for t in &request.topics {
        let mut parts = Vec::new();
        for p in &t.partitions {
            let key = (t.name.0.to_string(), p.partition_index);
            let entry = if seen[&key] > 1 {
                Err(INVALID_REQUEST)
            } else {
                match catalog.owner(t.name.as_str(), p.partition_index) {
                    None => Err(UNKNOWN_TOPIC_OR_PARTITION),
                    Some(owner) => {
                        let (tx, rx) = oneshot::channel();
                        let req = ShardRequest::ListOffset {
                            topic: Shard::topic_name(t.name.as_str()),
                            partition: p.partition_index,
                            timestamp: p.timestamp,
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
    let mut topics = Vec::with_capacity(request.topics.len());
    for (t, parts) in request.topics.iter().zip(pending) {
        let mut partitions = Vec::with_capacity(parts.len());
        for (index, entry) in parts {
            let listed = match entry {
                Ok(rx) => rx.await.unwrap_or(ListedOffset {
                    error: UNKNOWN_SERVER_ERROR,
                    offset: -1,
                    timestamp: -1,
                }),
                Err(code) => ListedOffset { error: code, offset: -1, timestamp: -1 },
            };
            let mut r = ListOffsetsPartitionResponse::default()
                .with_partition_index(index)
                .with_error_code(listed.error)
                .with_offset(listed.offset)
                .with_timestamp(listed.timestamp);
            if v >= 4 && listed.error == 0 && listed.offset >= 0 {
                r.leader_epoch = 0;
            }
            partitions.push(r);
        }
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}
