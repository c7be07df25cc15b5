//! DescribeGroups (key 15): each group described by its coordinating shard,
//! merged here in request order.

use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, GroupId};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 6 };

/// Describes groups (state, protocol, members with metadata and assignment). A group
/// the connection may not DESCRIBE is GROUP_AUTHORIZATION_FAILED (empty state and
/// protocol, as Kafka's `groupError`); with the authorizer on and
/// `include_authorized_operations` (v3+), each described group carries its KIP-430 bit set.
pub async fn handle(
    ctx: &Ctx,
    mut request: DescribeGroupsRequest,
) -> Outcome<DescribeGroupsResponse> {
    let ids = std::mem::take(&mut request.groups);
    let (allowed, denied): (Vec<GroupId>, Vec<GroupId>) = ids
        .iter()
        .cloned()
        .partition(|g| ctx.authorize(AclOperation::Describe, ResourceType::Group, g));
    let with_operations =
        ctx.shard.authorizer.is_some() && request.include_authorized_operations;
    let build = |part| request.clone().with_groups(part);
    let gather = group_route::scatter_ids(ctx, allowed, build, |r| r.groups, unanswered).await;
    let ctx = ctx.clone();
    Outcome::later(async move {
        let mut described = gather.await.into_iter();
        let groups = ids
            .into_iter()
            .map(|id| {
                if denied.contains(&id) {
                    return DescribedGroup::default()
                        .with_group_id(id)
                        .with_error_code(ResponseError::GroupAuthorizationFailed.code());
                }
                let mut g = described.next().unwrap_or_else(|| unanswered(id));
                if with_operations {
                    g.authorized_operations =
                        ctx.authorized_operations(ResourceType::Group, &g.group_id);
                }
                g
            })
            .collect();
        DescribeGroupsResponse::default().with_groups(groups)
    })
}

/// The result for a group whose coordinating shard did not answer (shutdown).
fn unanswered(id: GroupId) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(id)
        .with_error_code(ResponseError::UnknownServerError.code())
}
