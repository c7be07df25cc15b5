//! AddOffsetsToTxn (key 25): the `__consumer_offsets` partition of a consumer group
//! joins the producer's ongoing transaction, so that TxnOffsetCommit can commit the
//! group's offsets with it (KIP-98).

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ApiKey};

use super::{txn_route, Ctx, Outcome, Versions};
use crate::shard::groups::offsets_partition;
use crate::shard::transactions::TxnCall;

pub const VERSIONS: Versions = Versions { min: 0, max: 4 };

/// The coordinator's answer for the group's offsets partition (placement as
/// FindCoordinator's): none, or CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_ID_MAPPING,
/// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), INVALID_TXN_STATE,
/// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...
pub async fn handle(ctx: &Ctx, request: AddOffsetsToTxnRequest) -> Outcome<AddOffsetsToTxnResponse> {
    let v = ctx.api_version;
    let transactional_id = request.transactional_id.to_string();
    // Kafka's checks: WRITE on the transactional id, then READ on the group.
    let denied = ctx.authorize_txn_offsets(&transactional_id, request.group_id.as_str());
    if let Some(error) = denied {
        return Outcome::Ready(AddOffsetsToTxnResponse::default().with_error_code(error.code()));
    }
    let placement = ctx.shard.groups.placement();
    let offsets_partition = offsets_partition(request.group_id.as_str(), placement) as i32;
    let (producer_id, producer_epoch) = (request.producer_id.0, request.producer_epoch);
    let answer = txn_route::ask(ctx, &transactional_id.clone(), |reply| TxnCall::AddOffsets {
        transactional_id,
        producer_id,
        producer_epoch,
        offsets_partition,
        reply,
    })
    .await;
    Outcome::later(async move {
        let error = answer
            .await
            .err()
            .map(|e| crate::txn::error_for_version(ApiKey::AddOffsetsToTxn, v, e));
        AddOffsetsToTxnResponse::default().with_error_code(crate::error::code(error))
    })
}
