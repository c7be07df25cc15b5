//! JoinGroup (key 11), classic group protocol: routed to the group's coordinating shard;
//! the state machine is [`crate::coordinator::GroupCoordinator`].

use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::AclOperation;

pub const VERSIONS: Versions = Versions { min: 0, max: 9 };

/// Sends the request to the group's coordinator; the response may come much later.
/// GROUP_AUTHORIZATION_FAILED without READ on the group (Kafka's error response:
/// generation -1, no protocol, no leader, no member id).
pub async fn handle(ctx: &Ctx, request: JoinGroupRequest) -> Outcome<JoinGroupResponse> {
    if group_route::group_denied(ctx, &request, AclOperation::Read) {
        let mut r = JoinGroupResponse::default()
            .with_error_code(ResponseError::GroupAuthorizationFailed.code())
            .with_generation_id(-1);
        r.protocol_name = if ctx.api_version >= 7 { None } else { Some(Default::default()) };
        return Outcome::Ready(r);
    }
    group_route::to_group(ctx, request).await
}
