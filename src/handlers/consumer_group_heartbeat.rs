//! ConsumerGroupHeartbeat (key 68, KIP-848): the next-generation group protocol with
//! server-side assignment; routed to the group's coordinating shard.

use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// Sends the heartbeat to the group's coordinator. With the authorizer on, a
/// connection without READ on the group gets GROUP_AUTHORIZATION_FAILED, and one that
/// subscribes by name to a topic it may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED
/// (Kafka 4's `handleConsumerGroupHeartbeat`: subscribed topics a client may not see
/// are refused, not silently dropped).
pub async fn handle(
    ctx: &Ctx,
    request: ConsumerGroupHeartbeatRequest,
) -> Outcome<ConsumerGroupHeartbeatResponse> {
    if group_route::group_denied(ctx, &request, AclOperation::Read) {
        let error = ResponseError::GroupAuthorizationFailed.code();
        return Outcome::Ready(ConsumerGroupHeartbeatResponse::default().with_error_code(error));
    }
    let hidden = request.subscribed_topic_names.as_ref().is_some_and(|names| {
        names.iter().any(|t| !ctx.authorize(AclOperation::Describe, ResourceType::Topic, t.as_str()))
    });
    if hidden {
        let error = ResponseError::TopicAuthorizationFailed.code();
        return Outcome::Ready(ConsumerGroupHeartbeatResponse::default().with_error_code(error));
    }
    group_route::to_group(ctx, request).await
}
