//! OffsetDelete (key 47), classic group protocol: routed to the group's coordinating shard;
//! the state machine is [`crate::coordinator::GroupCoordinator`].

use kafka_protocol::messages::offset_delete_request::OffsetDeleteRequestTopic;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// GROUP_AUTHORIZATION_FAILED without DELETE on the group; every partition of a topic
/// the connection may not READ gets TOPIC_AUTHORIZATION_FAILED (Kafka's
/// `handleOffsetDeleteRequest`); the other topics go to the group's coordinator, whose
/// response may come much later.
pub async fn handle(ctx: &Ctx, mut request: OffsetDeleteRequest) -> Outcome<OffsetDeleteResponse> {
    if group_route::group_denied(ctx, &request, AclOperation::Delete) {
        let error = ResponseError::GroupAuthorizationFailed.code();
        return Outcome::Ready(OffsetDeleteResponse::default().with_error_code(error));
    }
    let (allowed, denied): (Vec<_>, Vec<_>) = std::mem::take(&mut request.topics)
        .into_iter()
        .partition(|t| ctx.authorize(AclOperation::Read, ResourceType::Topic, t.name.as_str()));
    request.topics = allowed;
    let outcome = group_route::to_group(ctx, request).await;
    if denied.is_empty() {
        return outcome;
    }
    outcome.map(move |mut response| {
        if response.error_code == 0 {
            response.topics.extend(denied.into_iter().map(topic_denied));
        }
        response
    })
}

/// The answer for a topic the connection may not READ: TOPIC_AUTHORIZATION_FAILED on
/// each of its partitions.
fn topic_denied(topic: OffsetDeleteRequestTopic) -> OffsetDeleteResponseTopic {
    let code = ResponseError::TopicAuthorizationFailed.code();
    OffsetDeleteResponseTopic::default().with_name(topic.name).with_partitions(
        topic
            .partitions
            .into_iter()
            .map(|p| {
                OffsetDeleteResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code)
            })
            .collect(),
    )
}
