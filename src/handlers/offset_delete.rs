//! OffsetDelete (key 47), classic group protocol: routed to the group's coordinating shard;
//! the state machine is [`crate::coordinator::GroupCoordinator`].

use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// GROUP_AUTHORIZATION_FAILED without DELETE on the group (topics' READ is not checked
/// yet); else sends the request to the group's coordinator; the response may come much later.
pub async fn handle(ctx: &Ctx, request: OffsetDeleteRequest) -> Outcome<OffsetDeleteResponse> {
    if group_route::group_denied(ctx, &request, crate::security::acl::AclOperation::Delete) {
        let error = crate::error::ResponseError::GroupAuthorizationFailed.code();
        return Outcome::Ready(OffsetDeleteResponse::default().with_error_code(error));
    }
    group_route::to_group(ctx, request).await
}
