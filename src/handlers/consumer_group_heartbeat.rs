//! ConsumerGroupHeartbeat (key 68, KIP-848): the next-generation group protocol with
//! server-side assignment; routed to the group's coordinating shard.

use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::security::acl::AclOperation;
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// Sends the heartbeat to the group's coordinator.
pub async fn handle(
    ctx: &Ctx,
    request: ConsumerGroupHeartbeatRequest,
) -> Outcome<ConsumerGroupHeartbeatResponse> {
    if group_route::group_denied(ctx, &request, AclOperation::Read) {
        let error = ResponseError::GroupAuthorizationFailed.code();
        return Outcome::Ready(ConsumerGroupHeartbeatResponse::default().with_error_code(error));
    }
    group_route::to_group(ctx, request).await
}
