//! AddPartitionsToTxn (key 24): partitions join a producer's ongoing transaction, on
//! the transactional id's coordinator (KIP-98). v0-3 carry one transaction (clients);
//! v4+ a batch of them, each maybe `verify_only` (KIP-890 part 1: is the partition in
//! the transaction already?), as brokers send it.

use std::collections::BTreeSet;

use futures_util::future::join_all;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, TopicName, TransactionalId,
};

use super::{txn_route, Ctx, Outcome, Versions};
use crate::error::{KafkaResult, ResponseError};
use crate::shard::transactions::TxnCall;
use crate::security::acl::{AclOperation, ResourceType};
use crate::txn::TopicPartition;

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// Every partition gets the transaction's result: UNKNOWN_TOPIC_OR_PARTITION for a
/// partition that does not exist (and OPERATION_NOT_ATTEMPTED for the others of that
/// transaction, which is then not asked), else the coordinator's error or none
/// (CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
/// (INVALID_PRODUCER_EPOCH before v2), INVALID_TXN_STATE, NOT_COORDINATOR, ...).
/// A verify-only transaction gets one result per partition (Kafka's
/// `TransactionCoordinator.handleVerifyPartitionsInTransaction`).
pub async fn handle(
    ctx: &Ctx,
    request: AddPartitionsToTxnRequest,
) -> Outcome<AddPartitionsToTxnResponse> {
    let v = ctx.api_version;
    // v4+ comes from brokers verifying a transaction: Kafka wants CLUSTER_ACTION.
    if v >= 4 && !ctx.authorize_cluster(AclOperation::ClusterAction) {
        return Outcome::Ready(
            AddPartitionsToTxnResponse::default()
                .with_error_code(ResponseError::ClusterAuthorizationFailed.code()),
        );
    }
    let txns: Vec<(TransactionalId, i64, i16, bool, Vec<AddPartitionsToTxnTopic>)> = if v <= 3 {
        vec![(
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id.0,
            request.v3_and_below_producer_epoch,
            false,
            request.v3_and_below_topics,
        )]
    } else {
        request
            .transactions
            .into_iter()
            .map(|t| (t.transactional_id, t.producer_id.0, t.producer_epoch, t.verify_only, t.topics))
            .collect()
    };
    let catalog = ctx.shard.catalog();
    let mut answers = Vec::with_capacity(txns.len());
    for (id, producer_id, producer_epoch, verify_only, topics) in txns {
        let wanted: Vec<TopicPartition> = topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.name.to_string(), *p)))
            .collect();
        // Kafka's checks: WRITE on the transactional id (every partition), WRITE on
        // each topic; with any refusal the other partitions are not attempted.
        let txn_denied =
            !ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id.as_str());
        let unauthorized: BTreeSet<&TopicPartition> = wanted
            .iter()
            .filter(|(t, _)| !ctx.authorize(AclOperation::Write, ResourceType::Topic, t))
            .collect();
        let unknown: BTreeSet<&TopicPartition> =
            wanted.iter().filter(|(t, p)| catalog.owner(t, *p).is_none()).collect();
        let answer: std::pin::Pin<Box<dyn std::future::Future<Output = _>>> = if txn_denied
            || !unauthorized.is_empty()
            || !unknown.is_empty()
        {
            let results = wanted
                .iter()
                .map(|tp| {
                    let e = if txn_denied {
                        ResponseError::TransactionalIdAuthorizationFailed
                    } else if unauthorized.contains(tp) {
                        ResponseError::TopicAuthorizationFailed
                    } else if unknown.contains(tp) {
                        ResponseError::UnknownTopicOrPartition
                    } else {
                        ResponseError::OperationNotAttempted
                    };
                    (tp.clone(), Some(e))
                })
                .collect();
            Box::pin(std::future::ready(Ok(results)))
        } else if verify_only {
            let transactional_id = id.to_string();
            let partitions = wanted.clone();
            Box::pin(
                txn_route::ask(ctx, &transactional_id.clone(), |reply| TxnCall::Verify {
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    partitions,
                    reply,
                })
                .await,
            )
        } else {
            let transactional_id = id.to_string();
            let partitions: BTreeSet<TopicPartition> = wanted.iter().cloned().collect();
            let added = txn_route::ask(ctx, &transactional_id.clone(), |reply| {
                TxnCall::AddPartitions {
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    partitions,
                    reply,
                }
            })
            .await;
            let wanted = wanted.clone();
            Box::pin(async move {
                let error = added.await.err();
                Ok(wanted.into_iter().map(|tp| (tp, error)).collect())
            })
        };
        answers.push((id, wanted_order(&topics), answer));
    }
    Outcome::later(async move {
        let ids: Vec<_> = answers.iter().map(|(id, order, _)| (id.clone(), order.clone())).collect();
        let results = join_all(answers.into_iter().map(|(_, _, a)| a)).await;
        let mut by_txn = Vec::with_capacity(results.len());
        for ((id, order), result) in ids.into_iter().zip(results) {
            by_txn.push(
                AddPartitionsToTxnResult::default()
                    .with_transactional_id(id)
                    .with_topic_results(topic_results(v, &order, result)),
            );
        }
        if v <= 3 {
            let topics = by_txn.pop().map(|r| r.topic_results).unwrap_or_default();
            AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics)
        } else {
            AddPartitionsToTxnResponse::default().with_results_by_transaction(by_txn)
        }
    })
}

/// The request's topics and partitions, in order.
fn wanted_order(topics: &[AddPartitionsToTxnTopic]) -> Vec<(TopicName, Vec<i32>)> {
    topics.iter().map(|t| (t.name.clone(), t.partitions.clone())).collect()
}

/// The per-partition results in the request's order; a whole-transaction error (a
/// verification that failed as a whole) goes to every partition.
fn topic_results(
    v: i16,
    order: &[(TopicName, Vec<i32>)],
    result: KafkaResult<Vec<(TopicPartition, Option<ResponseError>)>>,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let per: std::collections::HashMap<TopicPartition, Option<ResponseError>> = match &result {
        Ok(v) => v.iter().cloned().collect(),
        Err(_) => Default::default(),
    };
    order
        .iter()
        .map(|(name, partitions)| {
            let results = partitions
                .iter()
                .map(|p| {
                    let error = match &result {
                        Err(e) => Some(*e),
                        Ok(_) => per.get(&(name.to_string(), *p)).copied().flatten(),
                    };
                    let error = error.map(|e| crate::txn::error_for_version(ApiKey::AddPartitionsToTxn, v, e));
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*p)
                        .with_partition_error_code(crate::error::code(error))
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(name.clone())
                .with_results_by_partition(results)
        })
        .collect()
}
