//! InitProducerId (key 22) for idempotent producers (KIP-98): a new producer id
//! with epoch 0. Transactions are not implemented yet: a request with a
//! transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), the one error
//! that both the Java producer (`initTransactions` throws
//! `TransactionalIdAuthorizationException`) and librdkafka (a fatal error) give up on
//! at once. COORDINATOR_NOT_AVAILABLE, answered before, is retried forever (Kafka
//! Streams exactly_once_v2 then sits in REBALANCING with no error), and
//! UNSUPPORTED_VERSION is retried every 500 ms by librdkafka. InitProducerId has no
//! error message field: the broker logs why, with the transactional id.

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// Allocates a producer id on the control shard (ids survive restarts: see
/// `shard::control`). A request that bumps an existing id's epoch (KIP-360,
/// `producer_id` >= 0) gets that id with the next epoch. Errors:
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (transactional id: transactions are not
/// implemented yet),
/// KAFKA_STORAGE_ERROR (the id block could not be reserved on disk).
pub async fn handle(ctx: &Ctx, request: InitProducerIdRequest) -> Outcome<InitProducerIdResponse> {
    if let Some(id) = &request.transactional_id {
        tracing::info!(
            transactional_id = %id.as_str(),
            client_id = %ctx.client_id,
            "refusing InitProducerId: transactions are not supported by this broker yet"
        );
        return Outcome::Ready(failed(ResponseError::TransactionalIdAuthorizationFailed));
    }
    if request.producer_id.0 >= 0
        && request.producer_epoch >= 0
        && request.producer_epoch < i16::MAX - 1
    {
        return Outcome::Ready(
            InitProducerIdResponse::default()
                .with_producer_id(request.producer_id)
                .with_producer_epoch(request.producer_epoch + 1),
        );
    }
    let allocated =
        ctx.shard.ask_control(|reply| ControlRequest::AllocateProducerId { reply }).await;
    Outcome::later(async move {
        // A dropped reply means the control shard is shutting down.
        match allocated.await.unwrap_or(Err(ResponseError::UnknownServerError)) {
            Ok(id) => InitProducerIdResponse::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(0),
            Err(error) => failed(error),
        }
    })
}

fn failed(error: ResponseError) -> InitProducerIdResponse {
    InitProducerIdResponse::default()
        .with_error_code(error.code())
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
}
