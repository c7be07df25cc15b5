//! EndTxn (key 26): commit or abort the producer's ongoing transaction (KIP-98). The
//! coordinator logs PrepareCommit / PrepareAbort durably, answers, then writes the
//! markers to every partition of the transaction and logs its completion. v5 (KIP-890
//! transactions version 2) answers the producer id and epoch the next transaction
//! uses.

use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse, ProducerId};

use super::{txn_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::shard::transactions::TxnCall;
use crate::txn::{TransactionVersion, TxnResult};
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// None, or the coordinator's error: CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE,
/// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2),
/// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ... (producer id and epoch -1).
pub async fn handle(ctx: &Ctx, request: EndTxnRequest) -> Outcome<EndTxnResponse> {
    let v = ctx.api_version;
    let transactional_id = request.transactional_id.to_string();
    if !ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, &transactional_id) {
        return Outcome::Ready(
            EndTxnResponse::default()
                .with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        );
    }
    let (producer_id, producer_epoch) = (request.producer_id.0, request.producer_epoch);
    let result = TxnResult::from_committed(request.committed);
    let client_version = TransactionVersion::of_end_txn_request(v);
    let answer = txn_route::ask(ctx, &transactional_id.clone(), |reply| TxnCall::EndTxn {
        transactional_id,
        producer_id,
        producer_epoch,
        result,
        client_version,
        reply,
    })
    .await;
    Outcome::later(async move {
        match answer.await {
            Ok(p) => EndTxnResponse::default()
                .with_producer_id(ProducerId(p.producer_id))
                .with_producer_epoch(p.producer_epoch),
            Err(e) => EndTxnResponse::default()
                .with_error_code(crate::txn::error_for_version(ApiKey::EndTxn, v, e).code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        }
    })
}
