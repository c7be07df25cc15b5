//! DeleteGroups (key 42): each group deleted by its coordinating shard (once the
//! tombstones are durable), results merged here in request order.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, GroupId};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// Deletes empty groups: NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND per group otherwise.
pub async fn handle(ctx: &Ctx, mut request: DeleteGroupsRequest) -> Outcome<DeleteGroupsResponse> {
    let ids = std::mem::take(&mut request.groups_names);
    // Kafka: DELETE on each group, else GROUP_AUTHORIZATION_FAILED.
    let (allowed, denied): (Vec<GroupId>, Vec<GroupId>) =
        ids.iter().cloned().partition(|g| ctx.authorize(AclOperation::Delete, ResourceType::Group, g));
    let build = |part| request.clone().with_groups_names(part);
    let gather = group_route::scatter_ids(ctx, allowed, build, |r| r.results, unanswered).await;
    Outcome::later(async move {
        let mut deleted = gather.await.into_iter();
        let results = ids
            .into_iter()
            .map(|id| {
                if denied.contains(&id) {
                    DeletableGroupResult::default()
                        .with_group_id(id)
                        .with_error_code(ResponseError::GroupAuthorizationFailed.code())
                } else {
                    deleted.next().unwrap_or_else(|| unanswered(id))
                }
            })
            .collect();
        DeleteGroupsResponse::default().with_results(results)
    })
}

/// The result for a group whose coordinating shard did not answer (shutdown).
fn unanswered(id: GroupId) -> DeletableGroupResult {
    DeletableGroupResult::default()
        .with_group_id(id)
        .with_error_code(ResponseError::UnknownServerError.code())
}
