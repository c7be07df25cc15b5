//! InitProducerId (key 22) for idempotent producers (KIP-98): a new producer id
//! with epoch 0. Transactions are not implemented yet: a request with a
//! transactional id gets COORDINATOR_NOT_AVAILABLE (15), as from a Kafka broker
//! whose transaction coordinator is not available.

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::{Ctx, Versions};
use crate::shard::ShardRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 6 };

const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Allocates a producer id on shard 0 (ids survive restarts: see
/// `shard::control`). A request that bumps an existing id's epoch (KIP-360,
/// `producer_id` >= 0) gets that id with the next epoch.
pub async fn handle(ctx: &Ctx, request: InitProducerIdRequest) -> InitProducerIdResponse {
    let response = InitProducerIdResponse::default();
    if request.transactional_id.is_some() {
        return response
            .with_error_code(COORDINATOR_NOT_AVAILABLE)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
    }
    if request.producer_id.0 >= 0
        && request.producer_epoch >= 0
        && request.producer_epoch < i16::MAX - 1
    {
        return response
            .with_producer_id(request.producer_id)
            .with_producer_epoch(request.producer_epoch + 1);
    }
    match ctx.shard.ask(0, |reply| ShardRequest::AllocateProducerId { reply }).await {
        Some(Ok(id)) => response.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Some(Err(code)) => {
            response.with_error_code(code).with_producer_id(ProducerId(-1)).with_producer_epoch(-1)
        }
        None => response
            .with_error_code(UNKNOWN_SERVER_ERROR)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    }
}
