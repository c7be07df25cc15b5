//! DescribeGroups (key 15): each group described by its coordinating shard,
//! merged here in request order.

use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{
    DescribeGroupsRequest, DescribeGroupsResponse, RequestKind, ResponseKind,
};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 6 };

/// Describes groups (state, protocol, members with metadata and assignment).
pub async fn handle(ctx: &Ctx, mut request: DescribeGroupsRequest) -> Outcome {
    let ids = std::mem::take(&mut request.groups);
    let gather = group_route::scatter(
        ctx,
        ids,
        |g| g.as_str(),
        |part| RequestKind::DescribeGroups(request.clone().with_groups(part)),
        |r| match r {
            ResponseKind::DescribeGroups(r) => Some(r.groups),
            _ => None,
        },
        |id| {
            DescribedGroup::default()
                .with_group_id(id)
                .with_error_code(group_route::UNKNOWN_SERVER_ERROR)
        },
    )
    .await;
    Outcome::Later(Box::pin(async move {
        Some(ResponseKind::DescribeGroups(
            DescribeGroupsResponse::default().with_groups(gather.await),
        ))
    }))
}
