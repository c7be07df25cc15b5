//! WriteTxnMarkers (key 27, v1, KIP-98): append COMMIT or ABORT control batches for a
//! producer to the named partitions. Kafka's coordinators send it to partition leaders;
//! here the transaction coordinator sends its markers across shards as typed messages
//! (`DataRequest::WriteTxnMarkers`), and this API serves the admin client's
//! `abortTransaction` (KIP-664: `kafka-transactions.sh abort`, for a hanging
//! transaction whose coordinator forgot it).
//!
//! Each marker's partitions are grouped by owning shard, one message per shard, in
//! request order; a `__consumer_offsets` partition goes to its group coordinator, which
//! commits or drops the transaction's pending offsets. With the authorizer on, a
//! principal without CLUSTER_ACTION on the cluster gets CLUSTER_AUTHORIZATION_FAILED for
//! every partition (Kafka's `handleWriteTxnMarkersRequest`). Per partition: none, or
//! UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH (the
//! producer has a newer epoch), TRANSACTION_COORDINATOR_FENCED (an older coordinator
//! epoch than the partition's last marker), KAFKA_STORAGE_ERROR.

use std::collections::BTreeMap;

use futures_channel::oneshot;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::{KafkaResult, ResponseError};
use crate::protocol::control::{ControlType, EndTxnMarker};
use crate::protocol::strings::topic_name;
use crate::security::acl::AclOperation;
use crate::shard::messages::TxnMarkerWrite;
use crate::shard::DataRequest;

/// v0 was removed in Kafka 4.0 (KIP-896).
pub const VERSIONS: Versions = Versions { min: 1, max: 1 };

/// Where one partition's answer comes from: an error known now, or the `i`th result of
/// the message sent to a shard (`slot` indexes the receivers).
#[derive(Clone, Copy)]
enum Source {
    Now(ResponseError),
    Shard { slot: usize, i: usize },
}

/// Sends every marker's partitions to their owners, then answers in request order.
pub async fn handle(ctx: &Ctx, request: WriteTxnMarkersRequest) -> Outcome<WriteTxnMarkersResponse> {
    let catalog = ctx.shard.catalog();
    let denied = !ctx.authorize_cluster(AclOperation::ClusterAction);
    let mut receivers: Vec<oneshot::Receiver<Vec<KafkaResult<()>>>> = Vec::new();
    // Per marker, per topic: (name, per partition: (index, source)).
    let mut layout = Vec::with_capacity(request.markers.len());
    for m in &request.markers {
        let control_type = if m.transaction_result { ControlType::Commit } else { ControlType::Abort };
        let marker = EndTxnMarker { control_type, coordinator_epoch: m.coordinator_epoch };
        let mut by_shard: BTreeMap<usize, Vec<TxnMarkerWrite>> = BTreeMap::new();
        let mut topics = Vec::with_capacity(m.topics.len());
        let mut placed = Vec::new();
        for t in &m.topics {
            let mut parts = Vec::with_capacity(t.partition_indexes.len());
            for &p in &t.partition_indexes {
                match catalog.owner(t.name.as_str(), p) {
                    _ if denied => {
                        parts.push((p, Source::Now(ResponseError::ClusterAuthorizationFailed)))
                    }
                    None => parts.push((p, Source::Now(ResponseError::UnknownTopicOrPartition))),
                    Some(owner) => {
                        let writes = by_shard.entry(owner).or_default();
                        placed.push((topics.len(), parts.len(), owner, writes.len()));
                        writes.push(TxnMarkerWrite {
                            topic: topic_name(t.name.as_str()),
                            partition: p,
                            producer_id: m.producer_id.0,
                            producer_epoch: m.producer_epoch,
                            marker,
                        });
                        // Replaced below once the shard's slot is known.
                        parts.push((p, Source::Now(ResponseError::UnknownServerError)));
                    }
                }
            }
            topics.push((t.name.clone(), parts));
        }
        let mut slots = BTreeMap::new();
        for (owner, markers) in by_shard {
            let (reply, rx) = oneshot::channel();
            ctx.shard.send(owner, DataRequest::WriteTxnMarkers { markers, reply }).await;
            slots.insert(owner, receivers.len());
            receivers.push(rx);
        }
        for (topic, part, owner, i) in placed {
            topics[topic].1[part].1 = Source::Shard { slot: slots[&owner], i };
        }
        layout.push((m.producer_id, topics));
    }
    Outcome::later(async move {
        let mut answers = Vec::with_capacity(receivers.len());
        for rx in receivers {
            answers.push(rx.await.unwrap_or_default());
        }
        let markers = layout
            .into_iter()
            .map(|(producer_id, topics)| {
                let topics = topics
                    .into_iter()
                    .map(|(name, parts)| {
                        let partitions = parts
                            .into_iter()
                            .map(|(p, source)| {
                                let result = match source {
                                    Source::Now(e) => Err(e),
                                    Source::Shard { slot, i } => answers[slot]
                                        .get(i)
                                        .copied()
                                        .unwrap_or(Err(ResponseError::RequestTimedOut)),
                                };
                                WritableTxnMarkerPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_error_code(result.err().map_or(0, |e| e.code()))
                            })
                            .collect();
                        WritableTxnMarkerTopicResult::default().with_name(name).with_partitions(partitions)
                    })
                    .collect();
                WritableTxnMarkerResult::default().with_producer_id(producer_id).with_topics(topics)
            })
            .collect();
        WriteTxnMarkersResponse::default().with_markers(markers)
    })
}
