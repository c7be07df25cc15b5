//! DeleteGroups (key 42): each group deleted by its coordinating shard (once the
//! tombstones are durable), results merged here in request order.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, RequestKind, ResponseKind};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Deletes empty groups: NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND per group otherwise.
pub async fn handle(ctx: &Ctx, mut request: DeleteGroupsRequest) -> Outcome {
    let ids = std::mem::take(&mut request.groups_names);
    let n = ids.len();
    let mut waits = Vec::new();
    for (shard, part) in group_route::split_by_shard(ids.clone(), |g| g.as_str(), ctx.shard.nr_shards) {
        let (positions, groups_names): (Vec<usize>, Vec<_>) = part.into_iter().unzip();
        let sub = request.clone().with_groups_names(groups_names);
        waits.push((positions, group_route::send(ctx, shard, RequestKind::DeleteGroups(sub)).await));
    }
    Outcome::Later(Box::pin(async move {
        let mut slots: Vec<Option<DeletableGroupResult>> = vec![None; n];
        for (positions, rx) in waits {
            if let Ok(ResponseKind::DeleteGroups(r)) = rx.await {
                for (pos, g) in positions.into_iter().zip(r.results) {
                    slots[pos] = Some(g);
                }
            }
        }
        let results = slots
            .into_iter()
            .zip(ids)
            .map(|(g, id)| g.unwrap_or_else(|| DeletableGroupResult::default().with_group_id(id).with_error_code(UNKNOWN_SERVER_ERROR)))
            .collect();
        Some(ResponseKind::DeleteGroups(DeleteGroupsResponse::default().with_results(results)))
    }))
}
