//! TxnOffsetCommit (key 28): a transactional producer commits a consumer group's
//! offsets inside its transaction (KIP-98, `sendOffsetsToTransaction`). Partitions of
//! topics that do not exist are answered here with UNKNOWN_TOPIC_OR_PARTITION; the
//! rest go to the group's coordinating shard, which writes them as one transactional
//! batch of the producer to the group's `__consumer_offsets` partition and answers
//! once it is durable. They stay pending until the transaction's marker (see
//! `GroupHost::write_txn_marker`). Kafka source: `KafkaApis.handleTxnOffsetCommitRequest`.
//!
//! First the transaction coordinator confirms that the group's `__consumer_offsets`
//! partition is in the producer's ongoing transaction (AddOffsetsToTxn), as Kafka 4.x
//! verifies transactional offset commits: offsets of a producer outside a transaction
//! (or of a wrong epoch) would stay pending for good, with OffsetFetch answering
//! UNSTABLE_OFFSET_COMMIT forever.

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TopicName, TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::{group_route, txn_route, Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::shard::transactions::TxnCall;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 4 };

/// Commits offsets inside a transaction. As Kafka, the response lists the refused
/// partitions first (by topic, in request order), then the coordinator's answer merged
/// in by topic name; a request with no partition left is answered without the
/// coordinator (no group is created). Before v2, COORDINATOR_LOAD_IN_PROGRESS is
/// answered as COORDINATOR_NOT_AVAILABLE (clients before 2.0 do not know it).
pub async fn handle(
    ctx: &Ctx,
    mut request: TxnOffsetCommitRequest,
) -> Outcome<TxnOffsetCommitResponse> {
    let catalog = ctx.shard.catalog();
    let mut response = TxnOffsetCommitResponse::default();
    // Kafka's checks: WRITE on the transactional id, READ on the group (every partition
    // gets the error), then READ on each topic.
    let denied =
        ctx.authorize_txn_offsets(request.transactional_id.as_str(), request.group_id.as_str());
    if let Some(error) = denied {
        for t in &request.topics {
            for p in &t.partitions {
                add(&mut response, &t.name, p.partition_index, error);
            }
        }
        return Outcome::Ready(response);
    }
    for t in request.topics.iter_mut() {
        if !ctx.authorize(AclOperation::Read, ResourceType::Topic, t.name.as_str()) {
            for p in std::mem::take(&mut t.partitions) {
                add(&mut response, &t.name, p.partition_index, ResponseError::TopicAuthorizationFailed);
            }
            continue;
        }
        let count = catalog.topic(t.name.as_str()).map_or(0, |m| m.partition_shards.len() as i32);
        t.partitions.retain(|p| {
            let ok = p.partition_index >= 0 && p.partition_index < count;
            if !ok {
                add(&mut response, &t.name, p.partition_index, ResponseError::UnknownTopicOrPartition);
            }
            ok
        });
    }
    request.topics.retain(|t| !t.partitions.is_empty());
    if request.topics.is_empty() {
        return Outcome::Ready(response);
    }
    // An empty group id is the coordinator's INVALID_GROUP_ID, checked before
    // verification as in Kafka's `GroupCoordinatorService.commitTransactionalOffsets`.
    let verified =
        if request.group_id.is_empty() { None } else { verify(ctx, &request).await };
    if let Some(error) = verified {
        for t in &request.topics {
            for p in &t.partitions {
                add(&mut response, &t.name, p.partition_index, error);
            }
        }
        return Outcome::Ready(response);
    }
    let version = ctx.api_version;
    let routed = match group_route::to_group(ctx, request).await {
        Outcome::Later(routed) => routed,
        other => return other,
    };
    Outcome::Later(Box::pin(async move {
        let routed = routed.await?;
        for t in routed.topics {
            for p in t.partitions {
                let loading = p.error_code == ResponseError::CoordinatorLoadInProgress.code();
                let code = if loading && version < 2 {
                    ResponseError::CoordinatorNotAvailable.code()
                } else {
                    p.error_code
                };
                add_code(&mut response, &t.name, p.partition_index, code);
            }
        }
        Some(response)
    }))
}

/// The error every partition gets when the group's offsets partition is not in the
/// producer's transaction (INVALID_TXN_STATE), the producer is fenced
/// (INVALID_PRODUCER_EPOCH), its id is not the transactional id's
/// (INVALID_PRODUCER_ID_MAPPING), or the coordinator cannot tell yet
/// (COORDINATOR_NOT_AVAILABLE, retried by clients); None when verified.
async fn verify(ctx: &Ctx, request: &TxnOffsetCommitRequest) -> Option<ResponseError> {
    let transactional_id = request.transactional_id.to_string();
    let placement = ctx.shard.groups.placement();
    let p = crate::shard::groups::offsets_partition(request.group_id.as_str(), placement);
    let partitions = vec![(crate::metadata::OFFSETS_TOPIC.to_string(), p as i32)];
    let (producer_id, producer_epoch) = (request.producer_id.0, request.producer_epoch);
    let answer = txn_route::ask(ctx, &transactional_id.clone(), |reply| TxnCall::Verify {
        transactional_id,
        producer_id,
        producer_epoch,
        partitions,
        reply,
    })
    .await
    .await;
    let error = match answer {
        Ok(results) => results.into_iter().find_map(|(_, e)| e)?,
        Err(e) => e,
    };
    Some(match error {
        ResponseError::ProducerFenced => ResponseError::InvalidProducerEpoch,
        ResponseError::TransactionAbortable => ResponseError::InvalidTxnState,
        ResponseError::ConcurrentTransactions
        | ResponseError::CoordinatorLoadInProgress
        | ResponseError::NotCoordinator => ResponseError::CoordinatorNotAvailable,
        e => e,
    })
}

/// Adds `partition` of `topic` with `error` to the response (Kafka's
/// `TxnOffsetCommitResponse.Builder.addPartition`).
fn add(response: &mut TxnOffsetCommitResponse, topic: &TopicName, partition: i32, error: ResponseError) {
    add_code(response, topic, partition, error.code())
}

/// Adds `partition` of `topic` with error code `code` under the topic's entry, made
/// at the end if the topic has none yet.
fn add_code(response: &mut TxnOffsetCommitResponse, topic: &TopicName, partition: i32, code: i16) {
    let i = match response.topics.iter().position(|t| &t.name == topic) {
        Some(i) => i,
        None => {
            response.topics.push(TxnOffsetCommitResponseTopic::default().with_name(topic.clone()));
            response.topics.len() - 1
        }
    };
    response.topics[i].partitions.push(
        TxnOffsetCommitResponsePartition::default()
            .with_partition_index(partition)
            .with_error_code(code),
    );
}
