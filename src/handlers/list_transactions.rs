//! ListTransactions (key 66, KIP-664; the duration filter of KIP-994, the transactional
//! id pattern of KIP-1152): every transactional id of every shard's coordinator,
//! filtered by state, producer id, duration and id pattern, all of them ANDed
//! (`kafka-transactions.sh list`). On a shard's own listener (`--shard-ports`) only
//! that shard's coordinator lists (admin clients ask every node).

use futures_util::future::join_all;
use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId,
};

use crate::net::shard_nodes;
use super::{txn_route, Ctx, Outcome, Versions};
use crate::coordinator::TopicRegex;
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::shard::transactions::TxnCall;
use crate::txn::ListFilter;

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// The transactions of every shard, sorted by transactional id; the error of a shard
/// that could not list (COORDINATOR_LOAD_IN_PROGRESS) as the response's error. v2: a
/// non-empty `transactional_id_pattern` (RE2 syntax, as Kafka's RE2/J) keeps the ids it
/// matches whole; one that does not compile gets INVALID_REGULAR_EXPRESSION and no
/// transactions.
pub async fn handle(ctx: &Ctx, request: ListTransactionsRequest) -> Outcome<ListTransactionsResponse> {
    let pattern = match request.transactional_id_pattern.as_deref().filter(|p| !p.is_empty()) {
        Some(p) if ctx.api_version >= 2 => match TopicRegex::new(p) {
            Ok(regex) => Some(regex),
            Err(_) => {
                return Outcome::Ready(
                    ListTransactionsResponse::default()
                        .with_error_code(ResponseError::InvalidRegularExpression.code()),
                )
            }
        },
        _ => None,
    };
    let filter = ListFilter {
        states: request.state_filters.iter().map(|s| s.to_string()).collect(),
        producer_ids: request.producer_id_filters.iter().map(|p| p.0).collect(),
        duration_ms: if ctx.api_version >= 1 { request.duration_filter } else { -1 },
    };
    let mut asks = Vec::with_capacity(ctx.shard.nr_shards);
    for owner in shard_nodes::listed_shards(&ctx.listener, ctx.shard.nr_shards) {
        let filter = filter.clone();
        asks.push(txn_route::ask_shard(ctx, owner, |reply| TxnCall::List { filter, reply }).await);
    }
    let ctx = ctx.clone();
    Outcome::later(async move {
        let mut response = ListTransactionsResponse::default();
        let mut all = Vec::new();
        for answer in join_all(asks).await {
            match answer {
                Ok(listing) => {
                    response.unknown_state_filters =
                        listing.unknown_state_filters.iter().map(|s| sb(s)).collect();
                    all.extend(listing.transactions);
                }
                Err(e) => response.error_code = e.code(),
            }
        }
        if let Some(pattern) = &pattern {
            all.retain(|t| pattern.matches(&t.transactional_id));
        }
        // Kafka lists the transactional ids the connection may DESCRIBE.
        all.retain(|t| {
            ctx.authorize(crate::security::acl::AclOperation::Describe, crate::security::acl::ResourceType::TransactionalId, &t.transactional_id)
        });
        all.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        response.transaction_states = all
            .into_iter()
            .map(|t| {
                TransactionState::default()
                    .with_transactional_id(TransactionalId(sb(&t.transactional_id)))
                    .with_producer_id(ProducerId(t.producer_id))
                    .with_transaction_state(sb(t.state.name()))
            })
            .collect();
        response
    })
}
