//! DescribeProducers (key 61, KIP-664): the idempotent producers each named partition
//! knows, from its owning shard's producer state, as Kafka's
//! `ReplicaManager.activeProducerState` reports them: producer id and epoch, the
//! sequence of the last record of its last batch (-1 if none), that batch's max
//! timestamp, the coordinator epoch of its last transaction marker (-1 if none) and the
//! first offset of its ongoing transaction (-1 if none). A partition that does not exist gets
//! UNKNOWN_TOPIC_OR_PARTITION. `kafka-transactions --describe-producers` uses it.

use futures_channel::oneshot;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};

use super::{Ctx, Outcome, Versions};
use crate::error::{KafkaResult, ResponseError};
use crate::protocol::strings::{sb, topic_name};
use crate::shard::messages::ActiveProducer;
use crate::shard::DataRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

type Pending = Result<oneshot::Receiver<KafkaResult<Vec<ActiveProducer>>>, ResponseError>;

/// Asks each partition's owner, then answers in request order.
pub async fn handle(
    ctx: &Ctx,
    request: DescribeProducersRequest,
) -> Outcome<DescribeProducersResponse> {
    let catalog = ctx.shard.catalog();
    let mut pending: Vec<Vec<(i32, Pending)>> = Vec::with_capacity(request.topics.len());
    for t in &request.topics {
        let mut parts = Vec::with_capacity(t.partition_indexes.len());
        // Kafka: READ on the topic, checked before whether it exists.
        let denied = !ctx.authorize(crate::security::acl::AclOperation::Read, crate::security::acl::ResourceType::Topic, t.name.as_str());
        for &p in &t.partition_indexes {
            let entry = match catalog.owner(t.name.as_str(), p) {
                _ if denied => Err(ResponseError::TopicAuthorizationFailed),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(owner) => {
                    let (reply, rx) = oneshot::channel();
                    let topic = topic_name(t.name.as_str());
                    ctx.shard.send(owner, DataRequest::DescribeProducers { topic, partition: p, reply }).await;
                    Ok(rx)
                }
            };
            parts.push((p, entry));
        }
        pending.push(parts);
    }
    let names: Vec<_> = request.topics.into_iter().map(|t| t.name).collect();
    Outcome::later(async move {
        let mut topics = Vec::with_capacity(names.len());
        for (name, parts) in names.into_iter().zip(pending) {
            let mut partitions = Vec::with_capacity(parts.len());
            for (partition, entry) in parts {
                let answer = match entry {
                    Ok(rx) => rx.await.unwrap_or(Err(ResponseError::UnknownServerError)),
                    Err(e) => Err(e),
                };
                partitions.push(partition_response(partition, answer));
            }
            topics.push(TopicResponse::default().with_name(name).with_partitions(partitions));
        }
        DescribeProducersResponse::default().with_topics(topics)
    })
}

fn partition_response(partition: i32, answer: KafkaResult<Vec<ActiveProducer>>) -> PartitionResponse {
    let r = PartitionResponse::default().with_partition_index(partition);
    match answer {
        Err(e) => r.with_error_code(e.code()).with_error_message(Some(sb(&e.to_string()))),
        Ok(producers) => r.with_active_producers(
            producers
                .into_iter()
                .map(|p| {
                    ProducerState::default()
                        .with_producer_id(ProducerId(p.producer_id))
                        .with_producer_epoch(p.producer_epoch as i32)
                        .with_last_sequence(p.last_sequence)
                        .with_last_timestamp(p.last_timestamp)
                        .with_coordinator_epoch(p.coordinator_epoch)
                        .with_current_txn_start_offset(p.current_txn_start_offset)
                })
                .collect(),
        ),
    }
}
