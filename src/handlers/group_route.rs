//! Sending group requests to the shard that coordinates the group (see
//! [`crate::shard::groups`]), shared by the group API handlers.

use futures_channel::oneshot;
use kafka_protocol::messages::{RequestKind, ResponseKind};

use super::{Ctx, Deferred};
use crate::shard::groups::{coordinator_shard, GroupCall};
use crate::shard::ShardRequest;

/// Answer for a group whose coordinating shard did not reply (shutdown).
pub const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Sends `request` to shard `to` now (so requests keep their order) and returns
/// the wait for its response. `None` when the shard dropped it (shutdown).
pub async fn send(ctx: &Ctx, to: usize, request: RequestKind) -> oneshot::Receiver<ResponseKind> {
    let call = GroupCall {
        request,
        api_version: ctx.api_version,
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
    };
    let (tx, rx) = oneshot::channel();
    ctx.shard.send(to, ShardRequest::Group { call: Box::new(call), reply: tx }).await;
    rx
}

/// Routes a single-group request to its coordinator; the response is deferred
/// (a JoinGroup may be parked for a whole rebalance).
pub async fn to_group(ctx: &Ctx, group_id: &str, request: RequestKind) -> Deferred {
    let rx = send(ctx, coordinator_shard(group_id, ctx.shard.nr_shards), request).await;
    Box::pin(async move { rx.await.ok() })
}

/// Splits `items` by the shard coordinating each item's group: one list of
/// (position in `items`, item) per shard that has any.
pub fn split_by_shard<T>(
    items: Vec<T>,
    group_of: impl Fn(&T) -> &str,
    nr_shards: usize,
) -> Vec<(usize, Vec<(usize, T)>)> {
    let mut per: Vec<Vec<(usize, T)>> = (0..nr_shards).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        let s = coordinator_shard(group_of(&item), nr_shards);
        per[s].push((i, item));
    }
    per.into_iter().enumerate().filter(|(_, v)| !v.is_empty()).collect()
}

/// Scatter-gather for multi-group requests: sends each coordinating shard the
/// request rebuilt (`build`) with just its groups, then gathers the per-group
/// results (`results`) back into the order of `items`. A group whose shard did not
/// answer gets `missing(item)`.
pub async fn scatter<T, R>(
    ctx: &Ctx,
    items: Vec<T>,
    group_of: fn(&T) -> &str,
    build: impl Fn(Vec<T>) -> RequestKind,
    results: fn(ResponseKind) -> Option<Vec<R>>,
    missing: fn(T) -> R,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<R>>>>
where
    T: Clone + 'static,
    R: 'static,
{
    let keep = items.clone();
    let mut waits = Vec::new();
    for (shard, part) in split_by_shard(items, group_of, ctx.shard.nr_shards) {
        let (positions, part): (Vec<usize>, Vec<T>) = part.into_iter().unzip();
        waits.push((positions, send(ctx, shard, build(part)).await));
    }
    Box::pin(async move {
        let mut slots: Vec<Option<R>> = keep.iter().map(|_| None).collect();
        for (positions, rx) in waits {
            if let Some(rs) = rx.await.ok().and_then(results) {
                for (pos, r) in positions.into_iter().zip(rs) {
                    slots[pos] = Some(r);
                }
            }
        }
        slots.into_iter().zip(keep).map(|(r, item)| r.unwrap_or_else(|| missing(item))).collect()
    })
}
