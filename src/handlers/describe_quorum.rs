//! DescribeQuorum (key 55, KIP-595 and KIP-853 for v2): the metadata quorum of this
//! one-node cluster, as `kafka-metadata-quorum describe` and the Admin client's
//! `describeMetadataQuorum` read it.
//!
//! shardlog has no Raft log: its metadata is the topic catalog, and the node is the
//! only voter and the leader. The quorum is reported as Kafka reports a one-controller
//! combined-mode cluster: partition 0 of `__cluster_metadata`, leader this node at
//! epoch 1, the high watermark and the voter's log end offset both the catalog's
//! version (the count of catalog changes), no observers.

use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{BrokerId, DescribeQuorumRequest, DescribeQuorumResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Ctx, Outcome, Versions};
use crate::clock::now_ms;
use crate::error::ResponseError;
use crate::protocol::strings::{sb, topic_name};
use crate::security::acl::AclOperation;

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// The metadata log's topic name (KIP-595).
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// The leader epoch reported for the quorum: one election, at the first start.
const LEADER_EPOCH: i32 = 1;

/// The name of the listener reported for the voter (v2 `nodes`): shardlog's only one.
const LISTENER_NAME: &str = "PLAINTEXT";

/// Describes the quorum. A request must name exactly `__cluster_metadata` partition 0
/// (as Kafka's Raft client checks); any other topic or partition gets
/// UNKNOWN_TOPIC_OR_PARTITION on each partition named, with no quorum data.
/// With the authorizer on, a connection without DESCRIBE on the cluster gets a top-level
/// CLUSTER_AUTHORIZATION_FAILED (Kafka's controller, `ControllerApis.handleDescribeQuorum`).
pub async fn handle(ctx: &Ctx, request: DescribeQuorumRequest) -> Outcome<DescribeQuorumResponse> {
    if !ctx.authorize_cluster(AclOperation::Describe) {
        return Outcome::Ready(
            DescribeQuorumResponse::default()
                .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                .with_error_message(Some(sb("Cluster authorization failed."))),
        );
    }
    let node_id = ctx.shard.config.node_id;
    let catalog_version = i64::try_from(ctx.shard.catalog().version).unwrap_or(i64::MAX);
    // The voter is node `--node-id`, which is shard 0's node with `--shard-ports`.
    let voter = crate::net::shard_nodes::broker(&ctx.shard.config, &ctx.listener, 0);
    let (host, port) = (voter.host, voter.port);
    Outcome::Ready(describe(
        &request,
        ctx.api_version,
        node_id,
        catalog_version,
        (&host, port),
        now_ms(),
    ))
}

/// The answer to `request` (at `version`) for a quorum whose only voter and leader is
/// `node_id` with log end offset `log_end_offset`, listening on `(host, port)`;
/// `now_ms` is the voter's last fetch and catch-up time (ms since the epoch).
fn describe(
    request: &DescribeQuorumRequest,
    version: i16,
    node_id: i32,
    log_end_offset: i64,
    (host, port): (&str, i32),
    now_ms: i64,
) -> DescribeQuorumResponse {
    let valid = matches!(request.topics.as_slice(),
        [t] if t.topic_name.as_str() == METADATA_TOPIC
            && matches!(t.partitions.as_slice(), [p] if p.partition_index == 0));
    if !valid {
        // Kafka's DescribeQuorumRequest.getPartitionLevelErrorResponse.
        let topics = request
            .topics
            .iter()
            .map(|t| {
                TopicData::default().with_topic_name(t.topic_name.clone()).with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            PartitionData::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                                .with_leader_id(BrokerId(-1))
                                .with_leader_epoch(-1)
                                .with_high_watermark(-1)
                        })
                        .collect(),
                )
            })
            .collect();
        return DescribeQuorumResponse::default().with_topics(topics);
    }
    let voter = ReplicaState::default()
        .with_replica_id(BrokerId(node_id))
        .with_log_end_offset(log_end_offset)
        .with_last_fetch_timestamp(now_ms)
        .with_last_caught_up_timestamp(now_ms);
    let partition = PartitionData::default()
        .with_partition_index(0)
        .with_leader_id(BrokerId(node_id))
        .with_leader_epoch(LEADER_EPOCH)
        .with_high_watermark(log_end_offset)
        .with_current_voters(vec![voter]);
    let mut response = DescribeQuorumResponse::default().with_topics(vec![TopicData::default()
        .with_topic_name(topic_name(METADATA_TOPIC))
        .with_partitions(vec![partition])]);
    if version >= 2 {
        response.nodes = vec![Node::default().with_node_id(BrokerId(node_id)).with_listeners(
            vec![Listener::default()
                .with_name(StrBytes::from_static_str(LISTENER_NAME))
                .with_host(sb(host))
                .with_port(u16::try_from(port).unwrap_or(0))],
        )];
    }
    response
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::describe_quorum_request::{
        PartitionData as RequestPartition, TopicData as RequestTopic,
    };

    use super::*;

    fn request(topic: &str, partitions: &[i32]) -> DescribeQuorumRequest {
        DescribeQuorumRequest::default().with_topics(vec![RequestTopic::default()
            .with_topic_name(topic_name(topic))
            .with_partitions(
                partitions
                    .iter()
                    .map(|p| RequestPartition::default().with_partition_index(*p))
                    .collect(),
            )])
    }

    #[test]
    fn the_node_is_the_only_voter_and_the_leader() {
        let r = describe(&request(METADATA_TOPIC, &[0]), 2, 7, 42, ("127.0.0.1", 9092), 1000);
        assert_eq!(r.error_code, 0);
        let p = &r.topics[0].partitions[0];
        assert_eq!(r.topics[0].topic_name.as_str(), METADATA_TOPIC);
        assert_eq!((p.error_code, p.leader_id, p.leader_epoch, p.high_watermark), (0, BrokerId(7), 1, 42));
        assert_eq!(p.current_voters.len(), 1);
        let v = &p.current_voters[0];
        assert_eq!((v.replica_id, v.log_end_offset, v.last_fetch_timestamp), (BrokerId(7), 42, 1000));
        assert!(p.observers.is_empty());
        assert_eq!(r.nodes.len(), 1);
        let l = &r.nodes[0].listeners[0];
        assert_eq!((r.nodes[0].node_id, l.name.as_str(), l.host.as_str(), l.port), (BrokerId(7), "PLAINTEXT", "127.0.0.1", 9092));
        // Before v2 there are no nodes.
        let r1 = describe(&request(METADATA_TOPIC, &[0]), 1, 7, 42, ("127.0.0.1", 9092), 1000);
        assert!(r1.nodes.is_empty());
    }

    #[test]
    fn any_other_partition_is_unknown() {
        for (topic, parts) in [("t", &[0][..]), (METADATA_TOPIC, &[1][..]), (METADATA_TOPIC, &[0, 1][..])] {
            let r = describe(&request(topic, parts), 2, 0, 5, ("h", 1), 0);
            assert_eq!(r.topics[0].partitions.len(), parts.len(), "{topic} {parts:?}");
            for p in &r.topics[0].partitions {
                assert_eq!((p.error_code, p.leader_id), (3, BrokerId(-1)), "{topic} {parts:?}");
                assert!(p.current_voters.is_empty());
            }
            assert!(r.nodes.is_empty());
        }
        let empty = describe(&DescribeQuorumRequest::default(), 2, 0, 5, ("h", 1), 0);
        assert!(empty.topics.is_empty());
    }
}
