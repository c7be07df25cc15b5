//! OffsetFetch (key 9): one group (v1-7) or several (v8+, KIP-709), each answered
//! by its coordinating shard and merged here in request order.

use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 1, max: 9 };

/// Fetches committed offsets.
pub async fn handle(ctx: &Ctx, mut request: OffsetFetchRequest) -> Outcome<OffsetFetchResponse> {
    if ctx.api_version < 8 {
        return group_route::to_group(ctx, request).await;
    }
    let groups = std::mem::take(&mut request.groups);
    let gather = group_route::scatter(
        ctx,
        groups,
        |g| g.group_id.as_str(),
        |part| request.clone().with_groups(part),
        |r| r.groups,
        |g| {
            OffsetFetchResponseGroup::default()
                .with_group_id(g.group_id)
                .with_error_code(ResponseError::UnknownServerError.code())
        },
    )
    .await;
    Outcome::later(async move { OffsetFetchResponse::default().with_groups(gather.await) })
}
