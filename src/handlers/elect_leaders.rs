//! ElectLeaders (key 43, KIP-183, KIP-460 for `election_type`): on one node every
//! partition's leader is its only (and preferred) replica, so there is never an election
//! to hold. As Kafka's controller answers (`ReplicationControlManager.electLeaders`):
//! each named partition that exists gets ELECTION_NOT_NEEDED, a missing topic or
//! partition UNKNOWN_TOPIC_OR_PARTITION; with `topic_partitions` null (every partition)
//! the partitions that need no election are left out, so the answer is empty. An
//! election type other than 0 (preferred) or 1 (unclean) is INVALID_REQUEST.

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::security::acl::AclOperation;

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// Kafka's default text for CLUSTER_AUTHORIZATION_FAILED.
const CLUSTER_DENIED: &str = "Cluster authorization failed.";

/// Kafka's default text for ELECTION_NOT_NEEDED.
const NOT_NEEDED: &str = "Leader election not needed for topic partition.";

/// Answers every named partition (see the module documentation).
/// With the authorizer on, a connection without ALTER on the cluster gets
/// CLUSTER_AUTHORIZATION_FAILED (top level from v1, and on every named partition), as
/// Kafka's `handleElectLeaders`.
pub async fn handle(ctx: &Ctx, request: ElectLeadersRequest) -> Outcome<ElectLeadersResponse> {
    let mut response = ElectLeadersResponse::default();
    let denied = !ctx.authorize_cluster(AclOperation::Alter);
    if denied && ctx.api_version >= 1 {
        response.error_code = ResponseError::ClusterAuthorizationFailed.code();
    }
    let Some(topics) = request.topic_partitions else {
        return Outcome::Ready(response);
    };
    let type_error = !denied && !matches!(request.election_type, 0 | 1);
    if type_error && ctx.api_version >= 1 {
        response.error_code = ResponseError::InvalidRequest.code();
    }
    let catalog = ctx.shard.catalog();
    for t in topics {
        let partitions = catalog.topic(t.topic.as_str()).map_or(0, |m| m.partition_shards.len());
        let partition_result = t
            .partitions
            .iter()
            .map(|&p| {
                let (error, message) = if denied {
                    (ResponseError::ClusterAuthorizationFailed, CLUSTER_DENIED.to_string())
                } else if type_error {
                    let m = format!("Unknown election type {}", request.election_type);
                    (ResponseError::InvalidRequest, m)
                } else if p < 0 || p as usize >= partitions {
                    let m = "This server does not host this topic-partition.".to_string();
                    (ResponseError::UnknownTopicOrPartition, m)
                } else {
                    (ResponseError::ElectionNotNeeded, NOT_NEEDED.to_string())
                };
                PartitionResult::default()
                    .with_partition_id(p)
                    .with_error_code(error.code())
                    .with_error_message(Some(sb(&message)))
            })
            .collect();
        response.replica_election_results.push(
            ReplicaElectionResult::default()
                .with_topic(t.topic)
                .with_partition_result(partition_result),
        );
    }
    Outcome::Ready(response)
}
