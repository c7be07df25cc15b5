//! OffsetFetch (key 9): one group (v1-7) or several (v8+, KIP-709), each answered
//! by its coordinating shard and merged here in request order.

use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, RequestKind, ResponseKind};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 1, max: 9 };

const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Fetches committed offsets.
pub async fn handle(ctx: &Ctx, mut request: OffsetFetchRequest) -> Outcome {
    if ctx.api_version < 8 {
        let group_id = request.group_id.0.to_string();
        return Outcome::Later(group_route::to_group(ctx, &group_id, RequestKind::OffsetFetch(request)).await);
    }
    let groups = std::mem::take(&mut request.groups);
    let n = groups.len();
    let ids: Vec<_> = groups.iter().map(|g| g.group_id.clone()).collect();
    let mut waits = Vec::new();
    for (shard, part) in group_route::split_by_shard(groups, |g| g.group_id.as_str(), ctx.shard.nr_shards) {
        let (positions, groups): (Vec<usize>, Vec<_>) = part.into_iter().unzip();
        let sub = request.clone().with_groups(groups);
        waits.push((positions, group_route::send(ctx, shard, RequestKind::OffsetFetch(sub)).await));
    }
    Outcome::Later(Box::pin(async move {
        let mut slots: Vec<Option<OffsetFetchResponseGroup>> = vec![None; n];
        for (positions, rx) in waits {
            if let Ok(ResponseKind::OffsetFetch(r)) = rx.await {
                for (pos, g) in positions.into_iter().zip(r.groups) {
                    slots[pos] = Some(g);
                }
            }
        }
        let groups = slots
            .into_iter()
            .zip(ids)
            .map(|(g, id)| g.unwrap_or_else(|| OffsetFetchResponseGroup::default().with_group_id(id).with_error_code(UNKNOWN_SERVER_ERROR)))
            .collect();
        Some(ResponseKind::OffsetFetch(OffsetFetchResponse::default().with_groups(groups)))
    }))
}
