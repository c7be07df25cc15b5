//! InitProducerId (key 22) for idempotent producers (KIP-98): a new producer id
//! with epoch 0. Transactions are not implemented yet: a request with a
//! transactional id gets COORDINATOR_NOT_AVAILABLE (15), as from a Kafka broker
//! whose transaction coordinator is not available.

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// Allocates a producer id on the control shard (ids survive restarts: see
/// `shard::control`). A request that bumps an existing id's epoch (KIP-360,
/// `producer_id` >= 0) gets that id with the next epoch. Errors:
/// COORDINATOR_NOT_AVAILABLE (transactional id), KAFKA_STORAGE_ERROR (the id block
/// could not be reserved on disk).
pub async fn handle(ctx: &Ctx, request: InitProducerIdRequest) -> Outcome<InitProducerIdResponse> {
    if request.transactional_id.is_some() {
        return Outcome::Ready(failed(ResponseError::CoordinatorNotAvailable));
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
