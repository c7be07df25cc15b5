//! DeleteGroups (key 42): each group deleted by its coordinating shard (once the
//! tombstones are durable), results merged here in request order.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, RequestKind, ResponseKind,
};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// Deletes empty groups: NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND per group otherwise.
pub async fn handle(ctx: &Ctx, mut request: DeleteGroupsRequest) -> Outcome {
    let ids = std::mem::take(&mut request.groups_names);
    let gather = group_route::scatter(
        ctx,
        ids,
        |g| g.as_str(),
        |part| RequestKind::DeleteGroups(request.clone().with_groups_names(part)),
        |r| match r {
            ResponseKind::DeleteGroups(r) => Some(r.results),
            _ => None,
        },
        |id| {
            DeletableGroupResult::default()
                .with_group_id(id)
                .with_error_code(group_route::UNKNOWN_SERVER_ERROR)
        },
    )
    .await;
    Outcome::Later(Box::pin(async move {
        Some(ResponseKind::DeleteGroups(DeleteGroupsResponse::default().with_results(gather.await)))
    }))
}
