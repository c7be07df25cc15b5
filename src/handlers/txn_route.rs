//! Sending transaction requests to the shard that coordinates the transactional id
//! (see [`crate::shard::transactions`]), shared by the transaction API handlers.

use futures_channel::oneshot;

use super::Ctx;
use crate::error::{KafkaResult, ResponseError};
use crate::shard::messages::Reply;
use crate::shard::transactions::{coordinator_shard, TxnCall};
use crate::shard::DataRequest;

/// Sends the call `build` makes to the coordinator of `transactional_id` and returns
/// the wait for its answer: the coordinator's, or COORDINATOR_NOT_AVAILABLE when the
/// shard dropped the call (it is stopping).
pub async fn ask<T: 'static>(
    ctx: &Ctx,
    transactional_id: &str,
    build: impl FnOnce(Reply<KafkaResult<T>>) -> TxnCall,
) -> impl std::future::Future<Output = KafkaResult<T>> + 'static {
    let owner = coordinator_shard(transactional_id, ctx.shard.nr_shards);
    ask_shard(ctx, owner, build).await
}

/// [`ask`] addressed to shard `owner`.
pub async fn ask_shard<T: 'static>(
    ctx: &Ctx,
    owner: usize,
    build: impl FnOnce(Reply<KafkaResult<T>>) -> TxnCall,
) -> impl std::future::Future<Output = KafkaResult<T>> + 'static {
    let (tx, rx) = oneshot::channel();
    ctx.shard.send(owner, DataRequest::Txn(Box::new(build(tx)))).await;
    async move { rx.await.unwrap_or(Err(ResponseError::CoordinatorNotAvailable)) }
}
