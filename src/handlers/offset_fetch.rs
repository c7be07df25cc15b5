//! OffsetFetch (key 9): one group (v1-7) or several (v8+, KIP-709), each answered
//! by its coordinating shard and merged here in request order.

use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};

use super::{group_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 1, max: 9 };

/// Fetches committed offsets. With the authorizer on (Kafka's `handleOffsetFetchRequest`):
/// a group the connection may not DESCRIBE is GROUP_AUTHORIZATION_FAILED; a topic it
/// may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED per partition when named, and left
/// out when the request asks for every topic.
pub async fn handle(ctx: &Ctx, mut request: OffsetFetchRequest) -> Outcome<OffsetFetchResponse> {
    let denied = ResponseError::GroupAuthorizationFailed.code();
    let may_describe =
        |group: &str| ctx.authorize(AclOperation::Describe, ResourceType::Group, group);
    if ctx.api_version < 8 {
        if !may_describe(request.group_id.as_str()) {
            return Outcome::Ready(OffsetFetchResponse::default().with_error_code(denied));
        }
        let routed = group_route::to_group(ctx, request).await;
        let Outcome::Later(routed) = routed else { return routed };
        let ctx = ctx.clone();
        return Outcome::Later(Box::pin(async move {
            let mut response = routed.await?;
            let named = response.topics.iter().map(|t| t.name.0.to_string()).collect::<Vec<_>>();
            for (t, name) in response.topics.iter_mut().zip(named) {
                if !topic_allowed(&ctx, &name) {
                    for p in t.partitions.iter_mut() {
                        p.committed_offset = -1;
                        p.error_code = ResponseError::TopicAuthorizationFailed.code();
                    }
                }
            }
            Some(response)
        }));
    }
    let groups = std::mem::take(&mut request.groups);
    let (allowed, refused): (Vec<_>, Vec<_>) =
        groups.iter().cloned().partition(|g| may_describe(g.group_id.as_str()));
    let asked_all: Vec<bool> = groups.iter().map(|g| g.topics.is_none()).collect();
    let gather = group_route::scatter(
        ctx,
        allowed,
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
    let ctx = ctx.clone();
    Outcome::later(async move {
        let mut fetched = gather.await.into_iter();
        let results = groups
            .into_iter()
            .zip(asked_all)
            .map(|(g, all)| {
                if refused.iter().any(|r| r.group_id == g.group_id) {
                    return OffsetFetchResponseGroup::default()
                        .with_group_id(g.group_id)
                        .with_error_code(denied);
                }
                let mut result = fetched.next().unwrap_or_else(|| {
                    OffsetFetchResponseGroup::default()
                        .with_group_id(g.group_id)
                        .with_error_code(ResponseError::UnknownServerError.code())
                });
                if all {
                    result.topics.retain(|t| topic_allowed(&ctx, t.name.as_str()));
                } else {
                    for t in result.topics.iter_mut() {
                        if !topic_allowed(&ctx, t.name.as_str()) {
                            for p in t.partitions.iter_mut() {
                                p.committed_offset = -1;
                                p.error_code = ResponseError::TopicAuthorizationFailed.code();
                            }
                        }
                    }
                }
                result
            })
            .collect();
        OffsetFetchResponse::default().with_groups(results)
    })
}

/// Whether the connection may DESCRIBE the topic `name`.
fn topic_allowed(ctx: &super::Ctx, name: &str) -> bool {
    ctx.authorize(AclOperation::Describe, ResourceType::Topic, name)
}
