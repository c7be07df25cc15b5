//! ConsumerGroupDescribe (key 69, KIP-848): each group described by its coordinating
//! shard, merged here in request order.

use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup;
use kafka_protocol::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// Describes consumer-protocol groups (GROUP_ID_NOT_FOUND for others).
pub async fn handle(
    ctx: &Ctx,
    mut request: ConsumerGroupDescribeRequest,
) -> Outcome<ConsumerGroupDescribeResponse> {
    let ids = std::mem::take(&mut request.group_ids);
    let gather = group_route::scatter(
        ctx,
        ids,
        |g| g.as_str(),
        |part| request.clone().with_group_ids(part),
        |r| r.groups,
        |id| {
            DescribedGroup::default()
                .with_group_id(id)
                .with_error_code(ResponseError::UnknownServerError.code())
        },
    )
    .await;
    Outcome::later(
        async move { ConsumerGroupDescribeResponse::default().with_groups(gather.await) },
    )
}
