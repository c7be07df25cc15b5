//! InitProducerId (key 22): a producer id for an idempotent producer (KIP-98), or,
//! with a transactional id, the transactional producer's id and epoch from its
//! transaction coordinator (fencing the previous epoch and aborting its open
//! transaction; KIP-360 epoch bumps with the id and epoch in the request, v3+).

use kafka_protocol::messages::{ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::{txn_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::transactions::TxnCall;
use crate::shard::ControlRequest;
use crate::txn::ProducerIdAndEpoch;

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// Without a transactional id: a new producer id from the control shard (ids survive
/// restarts: see `shard::control`), or for a request that bumps an existing id's epoch
/// (KIP-360, `producer_id` >= 0) that id with the next epoch; KAFKA_STORAGE_ERROR when
/// the id block could not be reserved on disk. With one: the coordinator's answer
/// (INVALID_REQUEST, INVALID_TRANSACTION_TIMEOUT, CONCURRENT_TRANSACTIONS,
/// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4), COORDINATOR_LOAD_IN_PROGRESS,
/// NOT_COORDINATOR, ...; Kafka's `TransactionCoordinator.handleInitProducerId`).
pub async fn handle(ctx: &Ctx, request: InitProducerIdRequest) -> Outcome<InitProducerIdResponse> {
    let v = ctx.api_version;
    if let Some(error) = denied(ctx, &request) {
        return Outcome::Ready(failed(error));
    }
    if let Some(id) = &request.transactional_id {
        let expected = if v >= 3 {
            match ProducerIdAndEpoch::from_request(request.producer_id.0, request.producer_epoch)
            {
                Ok(e) => e,
                Err(error) => return Outcome::Ready(failed(error)),
            }
        } else {
            None
        };
        let transactional_id = id.to_string();
        let timeout_ms = request.transaction_timeout_ms;
        let answer = txn_route::ask(ctx, &transactional_id.clone(), |reply| {
            TxnCall::InitProducerId { transactional_id, timeout_ms, expected, reply }
        })
        .await;
        return Outcome::later(async move {
            match answer.await {
                Ok(p) => InitProducerIdResponse::default()
                    .with_producer_id(ProducerId(p.producer_id))
                    .with_producer_epoch(p.producer_epoch),
                Err(e) => failed(crate::txn::error_for_version(ApiKey::InitProducerId, v, e)),
            }
        });
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

/// Kafka's checks: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
/// without one, IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679;
/// CLUSTER_AUTHORIZATION_FAILED).
fn denied(ctx: &Ctx, request: &InitProducerIdRequest) -> Option<ResponseError> {
    match &request.transactional_id {
        Some(id) => (!ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id))
            .then_some(ResponseError::TransactionalIdAuthorizationFailed),
        None => (!ctx.authorize_cluster(AclOperation::IdempotentWrite)
            && !ctx.authorize_by_resource_type(AclOperation::Write, ResourceType::Topic))
        .then_some(ResponseError::ClusterAuthorizationFailed),
    }
}

fn failed(error: ResponseError) -> InitProducerIdResponse {
    InitProducerIdResponse::default()
        .with_error_code(error.code())
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
}
