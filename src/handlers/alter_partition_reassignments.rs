//! AlterPartitionReassignments (key 45, KIP-455; v1 KIP-860): move partitions to
//! other replicas, or cancel a move.
//!
//! On one node the only replica set a partition can have is this node alone, which
//! is the one it has, so a valid target changes nothing and succeeds at once; every
//! other target is refused per partition with the error and message of Kafka's
//! controller (`ReplicationControlManager.alterPartitionReassignment` and
//! `validateManualPartitionAssignment`):
//! - unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
//! - `replicas` null (cancel): NO_REASSIGNMENT_IN_PROGRESS, none ever is;
//! - empty replicas, an unknown broker id, a broker listed twice:
//!   INVALID_REPLICA_ASSIGNMENT.
//!
//! With `--shard-ports` each shard is a node ([`crate::net::shard_nodes`]); a target
//! naming only registered nodes but not exactly the partition's own node (a move to,
//! or a second replica on, another shard) is INVALID_REPLICA_ASSIGNMENT too: shardlog
//! does not move partitions between shards.

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
};
use tracing::info;

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::config::Config;
use crate::metadata::Catalog;
use crate::net::shard_nodes;
use crate::protocol::strings::sb;
use crate::security::acl::AclOperation;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// Applies (validates) each partition's target replicas; see the module comment. With
/// the authorizer on, a connection without ALTER on the cluster gets
/// CLUSTER_AUTHORIZATION_FAILED, top level and on every named partition (Kafka's
/// `getErrorResponse`).
pub async fn handle(
    ctx: &Ctx,
    request: AlterPartitionReassignmentsRequest,
) -> Outcome<AlterPartitionReassignmentsResponse> {
    let response = if ctx.authorize_cluster(AclOperation::Alter) {
        alter(&ctx.shard.catalog(), &ctx.shard.config, &request)
    } else {
        denied(&request)
    };
    if ctx.api_version >= 1 {
        Outcome::Ready(response.with_allow_replication_factor_change(request.allow_replication_factor_change))
    } else {
        Outcome::Ready(response)
    }
}

/// CLUSTER_AUTHORIZATION_FAILED for the request and each partition it names.
fn denied(request: &AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse {
    let message = Some(sb("Cluster authorization failed."));
    let code = ResponseError::ClusterAuthorizationFailed.code();
    let responses = request
        .topics
        .iter()
        .map(|t| {
            ReassignableTopicResponse::default().with_name(t.name.clone()).with_partitions(
                t.partitions
                    .iter()
                    .map(|p| {
                        ReassignablePartitionResponse::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(code)
                            .with_error_message(message.clone())
                    })
                    .collect(),
            )
        })
        .collect();
    AlterPartitionReassignmentsResponse::default()
        .with_error_code(code)
        .with_error_message(message)
        .with_responses(responses)
}

/// The answer for `request` against `catalog` on the nodes `config` gives.
fn alter(
    catalog: &Catalog,
    config: &Config,
    request: &AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let (mut ok, mut total) = (0, 0);
    let responses = request
        .topics
        .iter()
        .map(|topic| {
            let name = topic.name.as_str();
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    total += 1;
                    let result = check(catalog, config, name, p.partition_index, p.replicas.as_deref());
                    let out = ReassignablePartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_message(None);
                    match result {
                        Ok(()) => {
                            ok += 1;
                            out
                        }
                        Err((error, message)) => {
                            info!(topic = name, partition = p.partition_index, ?error, %message, "partition reassignment refused");
                            out.with_error_code(error.code()).with_error_message(Some(sb(&message)))
                        }
                    }
                })
                .collect();
            ReassignableTopicResponse::default().with_name(topic.name.clone()).with_partitions(partitions)
        })
        .collect();
    info!("altered {ok} out of {total} partition reassignment(s)");
    AlterPartitionReassignmentsResponse::default().with_responses(responses)
}

/// Whether `partition` of `topic` may have the replica set `target` (`None`: cancel).
fn check(
    catalog: &Catalog,
    config: &Config,
    topic: &str,
    partition: i32,
    target: Option<&[BrokerId]>,
) -> Result<(), (ResponseError, String)> {
    let Some(meta) = catalog.topic(topic) else {
        return Err((ResponseError::UnknownTopicOrPartition, format!("Unable to find a topic named {topic}.")));
    };
    if partition < 0 || partition as usize >= meta.partition_shards.len() {
        return Err((
            ResponseError::UnknownTopicOrPartition,
            format!("Unable to find partition {topic}:{partition}."),
        ));
    }
    let Some(target) = target else {
        return Err((ResponseError::NoReassignmentInProgress, "No partition reassignment is in progress.".into()));
    };
    if target.is_empty() {
        return Err((
            ResponseError::InvalidReplicaAssignment,
            "The manual partition assignment includes an empty replica list.".into(),
        ));
    }
    let mut sorted: Vec<i32> = target.iter().map(|b| b.0).collect();
    sorted.sort_unstable();
    for (i, broker) in sorted.iter().enumerate() {
        if shard_nodes::shard_of(config, *broker).is_none() {
            return Err((
                ResponseError::InvalidReplicaAssignment,
                format!("The manual partition assignment includes broker {broker}, but no such broker is registered."),
            ));
        }
        if i > 0 && sorted[i - 1] == *broker {
            return Err((
                ResponseError::InvalidReplicaAssignment,
                format!("The manual partition assignment includes the broker {broker} more than once."),
            ));
        }
    }
    let own = shard_nodes::node_of(config, meta.partition_shards[partition as usize]);
    if sorted != [own] {
        return Err((
            ResponseError::InvalidReplicaAssignment,
            format!(
                "Partition {topic}-{partition} has one replica, on node {own}; shardlog does \
                 not move partitions between shards or add replicas."
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };

    use super::*;
    use crate::protocol::strings::topic_name;

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        c.create_topic("t", 2, Default::default(), 1).unwrap();
        c
    }

    fn partition(index: i32, replicas: Option<&[i32]>) -> ReassignablePartition {
        ReassignablePartition::default()
            .with_partition_index(index)
            .with_replicas(replicas.map(|r| r.iter().map(|b| BrokerId(*b)).collect()))
    }

    #[test]
    fn each_partition_gets_kafkas_answer() {
        let request = AlterPartitionReassignmentsRequest::default().with_topics(vec![
            ReassignableTopic::default().with_name(topic_name("t")).with_partitions(vec![
                partition(0, Some(&[0])),
                partition(1, None),
                partition(1, Some(&[])),
                partition(1, Some(&[1])),
                partition(1, Some(&[0, 0])),
                partition(1, Some(&[0, 2])),
                partition(2, Some(&[0])),
                partition(-1, Some(&[0])),
            ]),
            ReassignableTopic::default().with_name(topic_name("nope")).with_partitions(vec![partition(0, Some(&[0]))]),
        ]);
        let r = alter(&catalog(), &Config::from_args(["shardlog"]), &request);
        assert_eq!(r.error_code, 0);
        let codes: Vec<(i32, i16)> =
            r.responses[0].partitions.iter().map(|p| (p.partition_index, p.error_code)).collect();
        assert_eq!(codes, vec![(0, 0), (1, 85), (1, 39), (1, 39), (1, 39), (1, 39), (2, 3), (-1, 3)]);
        assert_eq!(r.responses[0].partitions[0].error_message, None);
        let messages: Vec<&str> = r.responses[0].partitions[1..6]
            .iter()
            .map(|p| p.error_message.as_ref().unwrap().as_str())
            .collect();
        assert_eq!(
            messages,
            vec![
                "No partition reassignment is in progress.",
                "The manual partition assignment includes an empty replica list.",
                "The manual partition assignment includes broker 1, but no such broker is registered.",
                "The manual partition assignment includes the broker 0 more than once.",
                "The manual partition assignment includes broker 2, but no such broker is registered.",
            ]
        );
        assert_eq!(r.responses[1].name.as_str(), "nope");
        assert_eq!(r.responses[1].partitions[0].error_code, 3);
    }

    #[test]
    fn with_a_node_per_shard_only_the_partitions_own_node_is_accepted() {
        let mut c = Catalog::default();
        c.create_topic("t", 2, Default::default(), 2).unwrap();
        assert_eq!(c.topic("t").unwrap().partition_shards, vec![0, 1]);
        let mut config = Config::from_args(["shardlog", "--node-id", "5"]);
        config.shard_bound_ports = vec![9300, 9301];
        let request = AlterPartitionReassignmentsRequest::default().with_topics(vec![
            ReassignableTopic::default().with_name(topic_name("t")).with_partitions(vec![
                partition(0, Some(&[5])),
                partition(1, Some(&[6])),
                partition(1, Some(&[5])),
                partition(0, Some(&[5, 6])),
                partition(0, Some(&[7])),
            ]),
        ]);
        let r = alter(&c, &config, &request);
        let answers: Vec<(i32, i16, Option<&str>)> = r.responses[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.error_code, p.error_message.as_ref().map(|m| m.as_str())))
            .collect();
        let not_moved = |t: &'static str| Some(t);
        assert_eq!(
            answers,
            vec![
                (0, 0, None),
                (1, 0, None),
                (1, 39, not_moved("Partition t-1 has one replica, on node 6; shardlog does not move partitions between shards or add replicas.")),
                (0, 39, not_moved("Partition t-0 has one replica, on node 5; shardlog does not move partitions between shards or add replicas.")),
                (0, 39, Some("The manual partition assignment includes broker 7, but no such broker is registered.")),
            ]
        );
    }
}
