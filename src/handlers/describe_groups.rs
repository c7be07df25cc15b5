//! DescribeGroups (key 15): each group described by its coordinating shard,
//! merged here in request order.

use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, GroupId};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 0, max: 6 };

/// Describes groups (state, protocol, members with metadata and assignment).
pub async fn handle(
    ctx: &Ctx,
    mut request: DescribeGroupsRequest,
) -> Outcome<DescribeGroupsResponse> {
    let ids = std::mem::take(&mut request.groups);
    let build = |part| request.clone().with_groups(part);
    let gather = group_route::scatter_ids(ctx, ids, build, |r| r.groups, unanswered).await;
    Outcome::later(async move { DescribeGroupsResponse::default().with_groups(gather.await) })
}

/// The result for a group whose coordinating shard did not answer (shutdown).
fn unanswered(id: GroupId) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(id)
        .with_error_code(ResponseError::UnknownServerError.code())
}
