//! OffsetCommit (key 8): partitions of topics that do not exist are answered here
//! with UNKNOWN_TOPIC_OR_PARTITION (as Kafka does); the rest go to the group's
//! coordinating shard, which answers once the commit is durable.

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 2, max: 9 };

/// Commits offsets for a group member or a simple (`assign()`) consumer. Without READ
/// on the group every partition is GROUP_AUTHORIZATION_FAILED; without READ on a topic
/// its partitions are TOPIC_AUTHORIZATION_FAILED.
pub async fn handle(ctx: &Ctx, mut request: OffsetCommitRequest) -> Outcome<OffsetCommitResponse> {
    let catalog = ctx.shard.catalog();
    if group_route::group_denied(ctx, &request, AclOperation::Read) {
        // Kafka: every partition GROUP_AUTHORIZATION_FAILED.
        let mut response = OffsetCommitResponse::default();
        for (ti, t) in request.topics.iter().enumerate() {
            let refused: Vec<_> = t.partitions.iter().map(|p| (ti, p.partition_index)).collect();
            let names: Vec<_> = request.topics.iter().map(|t| t.name.clone()).collect();
            merge_refused(&mut response, &names, refused, ResponseError::GroupAuthorizationFailed);
        }
        return Outcome::Ready(response);
    }
    // (topic index in the request, partition) pairs refused here.
    let mut unknown: Vec<(usize, i32)> = Vec::new();
    let mut unauthorized: Vec<(usize, i32)> = Vec::new();
    for (ti, t) in request.topics.iter_mut().enumerate() {
        if !ctx.authorize(AclOperation::Read, ResourceType::Topic, t.name.as_str()) {
            unauthorized.extend(std::mem::take(&mut t.partitions).iter().map(|p| (ti, p.partition_index)));
            continue;
        }
        let count = catalog.topic(t.name.as_str()).map_or(0, |m| m.partition_shards.len() as i32);
        t.partitions.retain(|p| {
            let ok = p.partition_index >= 0 && p.partition_index < count;
            if !ok {
                unknown.push((ti, p.partition_index));
            }
            ok
        });
    }
    let names: Vec<_> = request.topics.iter().map(|t| t.name.clone()).collect();
    let routed = group_route::to_group(ctx, request).await;
    if unknown.is_empty() && unauthorized.is_empty() {
        return routed;
    }
    let Outcome::Later(routed) = routed else { return routed };
    Outcome::Later(Box::pin(async move {
        let mut response = routed.await?;
        merge_refused(&mut response, &names, unauthorized, ResponseError::TopicAuthorizationFailed);
        merge_refused(&mut response, &names, unknown, ResponseError::UnknownTopicOrPartition);
        Some(response)
    }))
}

/// Adds the partitions refused here (topic index, partition) with `error`.
fn merge_refused(
    response: &mut OffsetCommitResponse,
    names: &[TopicName],
    refused: Vec<(usize, i32)>,
    error: ResponseError,
) {
    for (ti, partition) in refused {
        let name = &names[ti];
        let idx = match response.topics.iter().position(|t| &t.name == name) {
            Some(i) => i,
            None => {
                response.topics.push(OffsetCommitResponseTopic::default().with_name(name.clone()));
                response.topics.len() - 1
            }
        };
        response.topics[idx].partitions.push(
            OffsetCommitResponsePartition::default()
                .with_partition_index(partition)
                .with_error_code(error.code()),
        );
    }
}
