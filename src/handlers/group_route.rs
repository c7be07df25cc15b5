//! Sending group requests to the shard that coordinates the group (see
//! [`crate::shard::groups`]), shared by the group API handlers.
//!
//! The coordinator answers with a `ResponseKind`; [`GroupRequest`] ties each group
//! request type to its response type so that handlers stay typed.

use std::future::Future;
use std::pin::Pin;

use futures_channel::oneshot;
use kafka_protocol::messages::*;

use super::{Ctx, Outcome};
use crate::metadata::OffsetsPlacement;
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::groups::{coordinator_shard, GroupCall};
use crate::shard::DataRequest;

/// A request the group coordinator serves, and the response it gives.
pub trait GroupRequest: Into<RequestKind> + 'static {
    type Response: 'static;
    /// The typed response inside the coordinator's answer (`None` for another kind).
    fn response(kind: ResponseKind) -> Option<Self::Response>;
}

/// A request about one group, named by its `group_id` field.
pub trait SingleGroup: GroupRequest {
    fn group_id(&self) -> &str;
}

macro_rules! group_requests {
    ($($api:ident: $request:ident => $response:ident),* $(,)?) => {$(
        impl GroupRequest for $request {
            type Response = $response;
            fn response(kind: ResponseKind) -> Option<$response> {
                match kind {
                    ResponseKind::$api(r) => Some(r),
                    _ => None,
                }
            }
        }
    )*};
}

macro_rules! single_group {
    ($($request:ident),* $(,)?) => {$(
        impl SingleGroup for $request {
            fn group_id(&self) -> &str {
                self.group_id.as_str()
            }
        }
    )*};
}

group_requests! {
    JoinGroup: JoinGroupRequest => JoinGroupResponse,
    SyncGroup: SyncGroupRequest => SyncGroupResponse,
    Heartbeat: HeartbeatRequest => HeartbeatResponse,
    LeaveGroup: LeaveGroupRequest => LeaveGroupResponse,
    OffsetCommit: OffsetCommitRequest => OffsetCommitResponse,
    TxnOffsetCommit: TxnOffsetCommitRequest => TxnOffsetCommitResponse,
    OffsetFetch: OffsetFetchRequest => OffsetFetchResponse,
    OffsetDelete: OffsetDeleteRequest => OffsetDeleteResponse,
    ListGroups: ListGroupsRequest => ListGroupsResponse,
    DescribeGroups: DescribeGroupsRequest => DescribeGroupsResponse,
    DeleteGroups: DeleteGroupsRequest => DeleteGroupsResponse,
    ConsumerGroupHeartbeat: ConsumerGroupHeartbeatRequest => ConsumerGroupHeartbeatResponse,
    ConsumerGroupDescribe: ConsumerGroupDescribeRequest => ConsumerGroupDescribeResponse,
}

single_group! {
    JoinGroupRequest,
    SyncGroupRequest,
    HeartbeatRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    TxnOffsetCommitRequest,
    OffsetFetchRequest,
    OffsetDeleteRequest,
    ConsumerGroupHeartbeatRequest,
}

/// Whether the connection may not do `op` on the request's group: the handler then
/// answers GROUP_AUTHORIZATION_FAILED (Kafka checks READ for the members' requests and
/// commits, DESCRIBE for reads, DELETE for deletes).
pub fn group_denied<Q: SingleGroup>(ctx: &Ctx, request: &Q, op: AclOperation) -> bool {
    !ctx.authorize(op, ResourceType::Group, request.group_id())
}

/// Sends `request` to shard `to` now (so requests keep their order) and returns the
/// wait for its typed response: `None` when the shard dropped it (shutdown).
pub async fn send<Q: GroupRequest>(
    ctx: &Ctx,
    to: usize,
    request: Q,
) -> impl Future<Output = Option<Q::Response>> {
    let call = GroupCall {
        request: request.into(),
        api_version: ctx.api_version,
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.to_string(),
    };
    let (tx, rx) = oneshot::channel();
    ctx.shard.send(to, DataRequest::Group { call: Box::new(call), reply: tx }).await;
    async move { rx.await.ok().and_then(Q::response) }
}

/// Routes a single-group request to its coordinator; the response is deferred (a
/// JoinGroup may be parked for a whole rebalance).
pub async fn to_group<Q: SingleGroup>(ctx: &Ctx, request: Q) -> Outcome<Q::Response> {
    let to =
        coordinator_shard(request.group_id(), ctx.shard.nr_shards, ctx.shard.groups.placement());
    let reply = send(ctx, to, request).await;
    Outcome::Later(Box::pin(reply))
}

/// Splits `items` by the shard coordinating each item's group: one list of
/// (position in `items`, item) per shard that has any.
pub fn split_by_shard<T>(
    items: Vec<T>,
    group_of: impl Fn(&T) -> &str,
    nr_shards: usize,
    placement: OffsetsPlacement,
) -> Vec<(usize, Vec<(usize, T)>)> {
    let mut per: Vec<Vec<(usize, T)>> = (0..nr_shards).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        let s = coordinator_shard(group_of(&item), nr_shards, placement);
        per[s].push((i, item));
    }
    per.into_iter().enumerate().filter(|(_, v)| !v.is_empty()).collect()
}

/// Scatter-gather for multi-group requests: sends each coordinating shard the
/// request rebuilt (`build`) with just its groups, then gathers the per-group
/// results (`results`) back into the order of `items`. A group whose shard did not
/// answer gets `missing(item)`.
pub async fn scatter<Q, T, R>(
    ctx: &Ctx,
    items: Vec<T>,
    group_of: fn(&T) -> &str,
    build: impl Fn(Vec<T>) -> Q,
    results: fn(Q::Response) -> Vec<R>,
    missing: fn(T) -> R,
) -> Pin<Box<dyn Future<Output = Vec<R>>>>
where
    Q: GroupRequest,
    T: Clone + 'static,
    R: 'static,
{
    let keep = items.clone();
    let mut waits = Vec::new();
    for (shard, part) in
        split_by_shard(items, group_of, ctx.shard.nr_shards, ctx.shard.groups.placement())
    {
        let (positions, part): (Vec<usize>, Vec<T>) = part.into_iter().unzip();
        waits.push((positions, send(ctx, shard, build(part)).await));
    }
    Box::pin(async move {
        let mut slots: Vec<Option<R>> = keep.iter().map(|_| None).collect();
        for (positions, reply) in waits {
            if let Some(rs) = reply.await.map(results) {
                for (pos, r) in positions.into_iter().zip(rs) {
                    slots[pos] = Some(r);
                }
            }
        }
        slots.into_iter().zip(keep).map(|(r, item)| r.unwrap_or_else(|| missing(item))).collect()
    })
}

/// [`scatter`] for requests that list group ids (DescribeGroups, DeleteGroups,
/// ConsumerGroupDescribe), answered by one response type per group.
pub async fn scatter_ids<Q, R>(
    ctx: &Ctx,
    ids: Vec<GroupId>,
    build: impl Fn(Vec<GroupId>) -> Q,
    results: fn(Q::Response) -> Vec<R>,
    missing: fn(GroupId) -> R,
) -> Pin<Box<dyn Future<Output = Vec<R>>>>
where
    Q: GroupRequest,
    R: 'static,
{
    scatter(ctx, ids, |g| g.as_str(), build, results, missing).await
}
