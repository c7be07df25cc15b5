//! DescribeTransactions (key 65, KIP-664): the state of transactional ids, each from
//! its coordinator (`kafka-transactions.sh describe`).

use futures_util::future::join_all;
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId,
};

use super::{txn_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::{sb, topic_name};
use crate::shard::transactions::TxnCall;

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// One state per id, in request order: the description, or INVALID_REQUEST,
/// TRANSACTIONAL_ID_NOT_FOUND, COORDINATOR_LOAD_IN_PROGRESS.
pub async fn handle(
    ctx: &Ctx,
    request: DescribeTransactionsRequest,
) -> Outcome<DescribeTransactionsResponse> {
    let mut asks = Vec::with_capacity(request.transactional_ids.len());
    for id in request.transactional_ids {
        let transactional_id = id.to_string();
        // Kafka: DESCRIBE on the transactional id.
        if !ctx.authorize(crate::security::acl::AclOperation::Describe, crate::security::acl::ResourceType::TransactionalId, &transactional_id) {
            let denied = Err(ResponseError::TransactionalIdAuthorizationFailed);
            asks.push(futures_util::future::Either::Left(std::future::ready((id, denied))));
            continue;
        }
        let answer = txn_route::ask(ctx, &transactional_id.clone(), |reply| {
            TxnCall::Describe { transactional_id, reply }
        })
        .await;
        asks.push(futures_util::future::Either::Right(async move { (id, answer.await) }));
    }
    Outcome::later(async move {
        let states = join_all(asks)
            .await
            .into_iter()
            .map(|(id, answer)| {
                let s = TransactionState::default().with_transactional_id(id);
                match answer {
                    Err(e) => s.with_error_code(e.code()).with_transaction_state(sb("")).with_producer_id(ProducerId(-1)).with_producer_epoch(-1).with_transaction_start_time_ms(-1),
                    Ok(d) => s
                        .with_transaction_state(sb(d.state.name()))
                        .with_transaction_timeout_ms(d.timeout_ms)
                        .with_transaction_start_time_ms(d.start_timestamp_ms)
                        .with_producer_id(ProducerId(d.producer_id))
                        .with_producer_epoch(d.producer_epoch)
                        .with_topics(
                            d.topics
                                .into_iter()
                                .map(|(t, ps)| {
                                    TopicData::default().with_topic(topic_name(&t)).with_partitions(ps)
                                })
                                .collect(),
                        ),
                }
            })
            .collect();
        DescribeTransactionsResponse::default().with_transaction_states(states)
    })
}
