//! OffsetFetch (key 9): one group (v1-7) or several (v8+, KIP-709), each answered
//! by its coordinating shard and merged here in request order.

use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::{
    OffsetFetchRequest, OffsetFetchResponse, RequestKind, ResponseKind,
};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 1, max: 9 };

/// Fetches committed offsets.
pub async fn handle(ctx: &Ctx, mut request: OffsetFetchRequest) -> Outcome {
    if ctx.api_version < 8 {
        let group_id = request.group_id.0.to_string();
        return Outcome::Later(
            group_route::to_group(ctx, &group_id, RequestKind::OffsetFetch(request)).await,
        );
    }
    let groups = std::mem::take(&mut request.groups);
    let gather = group_route::scatter(
        ctx,
        groups,
        |g| g.group_id.as_str(),
        |part| RequestKind::OffsetFetch(request.clone().with_groups(part)),
        |r| match r {
            ResponseKind::OffsetFetch(r) => Some(r.groups),
            _ => None,
        },
        |g| {
            OffsetFetchResponseGroup::default()
                .with_group_id(g.group_id)
                .with_error_code(group_route::UNKNOWN_SERVER_ERROR)
        },
    )
    .await;
    Outcome::Later(Box::pin(async move {
        Some(ResponseKind::OffsetFetch(OffsetFetchResponse::default().with_groups(gather.await)))
    }))
}
