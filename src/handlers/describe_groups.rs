//! DescribeGroups (key 15): each group described by its coordinating shard,
//! merged here in request order.

use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, RequestKind, ResponseKind};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 6 };

const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Describes groups (state, protocol, members with metadata and assignment).
pub async fn handle(ctx: &Ctx, mut request: DescribeGroupsRequest) -> Outcome {
    let ids = std::mem::take(&mut request.groups);
    let n = ids.len();
    let mut waits = Vec::new();
    for (shard, part) in group_route::split_by_shard(ids.clone(), |g| g.as_str(), ctx.shard.nr_shards) {
        let (positions, groups): (Vec<usize>, Vec<_>) = part.into_iter().unzip();
        let sub = request.clone().with_groups(groups);
        waits.push((positions, group_route::send(ctx, shard, RequestKind::DescribeGroups(sub)).await));
    }
    Outcome::Later(Box::pin(async move {
        let mut slots: Vec<Option<DescribedGroup>> = vec![None; n];
        for (positions, rx) in waits {
            if let Ok(ResponseKind::DescribeGroups(r)) = rx.await {
                for (pos, g) in positions.into_iter().zip(r.groups) {
                    slots[pos] = Some(g);
                }
            }
        }
        let groups = slots
            .into_iter()
            .zip(ids)
            .map(|(g, id)| g.unwrap_or_else(|| DescribedGroup::default().with_group_id(id).with_error_code(UNKNOWN_SERVER_ERROR)))
            .collect();
        Some(ResponseKind::DescribeGroups(DescribeGroupsResponse::default().with_groups(groups)))
    }))
}
