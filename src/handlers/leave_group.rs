//! LeaveGroup (key 13), classic group protocol: routed to the group's coordinating shard;
//! the state machine is [`crate::coordinator::GroupCoordinator`].

use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::security::acl::AclOperation;
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// GROUP_AUTHORIZATION_FAILED without READ on the group; else sends the request to the
/// group's coordinator; the response may come much later.
pub async fn handle(ctx: &Ctx, request: LeaveGroupRequest) -> Outcome<LeaveGroupResponse> {
    if group_route::group_denied(ctx, &request, AclOperation::Read) {
        let error = ResponseError::GroupAuthorizationFailed.code();
        return Outcome::Ready(LeaveGroupResponse::default().with_error_code(error));
    }
    group_route::to_group(ctx, request).await
}
