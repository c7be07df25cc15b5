//! ConsumerGroupDescribe (key 69, KIP-848): each group described by its coordinating
//! shard, merged here in request order.

use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId,
};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// Describes consumer-protocol groups (GROUP_ID_NOT_FOUND for others).
pub async fn handle(
    ctx: &Ctx,
    mut request: ConsumerGroupDescribeRequest,
) -> Outcome<ConsumerGroupDescribeResponse> {
    let ids = std::mem::take(&mut request.group_ids);
    // Kafka: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED.
    let (allowed, denied): (Vec<_>, Vec<_>) = ids.iter().cloned().partition(|g| {
        ctx.authorize(
            crate::security::acl::AclOperation::Describe,
            crate::security::acl::ResourceType::Group,
            g,
        )
    });
    let build = |part| request.clone().with_group_ids(part);
    let gather = group_route::scatter_ids(ctx, allowed, build, |r| r.groups, unanswered).await;
    Outcome::later(async move {
        let mut described = gather.await.into_iter();
        let groups = ids
            .into_iter()
            .map(|id| {
                if denied.contains(&id) {
                    DescribedGroup::default()
                        .with_group_id(id)
                        .with_error_code(ResponseError::GroupAuthorizationFailed.code())
                } else {
                    described.next().unwrap_or_else(|| unanswered(id))
                }
            })
            .collect();
        ConsumerGroupDescribeResponse::default().with_groups(groups)
    })
}

/// The result for a group whose coordinating shard did not answer (shutdown).
fn unanswered(id: GroupId) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(id)
        .with_error_code(ResponseError::UnknownServerError.code())
}
