//! CreateTopics (key 19): validated here (names, counts, replication factor,
//! configs), created on shard 0, answered after every shard opened its logs.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::create_topics_request::CreatableReplicaAssignment;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};

use super::{Ctx, Outcome, Versions};
use crate::broker_config::BrokerDefaults;
use crate::config_meta::Source;
use crate::error::ResponseError;
use crate::metadata::TopicMeta;
use crate::protocol::strings::{sb, topic_name};
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::messages::NewTopic;
use crate::shard::ControlRequest;
use crate::topic_config;

pub const VERSIONS: Versions = Versions { min: 2, max: 7 };

/// Creates topics through shard 0. Per topic: INVALID_TOPIC_EXCEPTION,
/// TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR (only 1 or
/// -1 on one broker), INVALID_CONFIG, INVALID_REQUEST (duplicate name in one
/// request, or manual assignments combined with counts), INVALID_REPLICA_ASSIGNMENT
/// (a manual assignment Kafka would refuse: [`assigned_shards`]).
pub async fn handle(ctx: &Ctx, request: CreateTopicsRequest) -> Outcome<CreateTopicsResponse> {
    let v = ctx.api_version;
    let mut results: Vec<Option<CreatableTopicResult>> = Vec::with_capacity(request.topics.len());
    let mut to_create = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Kafka: CREATE on the cluster, or on each topic (TOPIC_AUTHORIZATION_FAILED).
    let cluster_create = ctx.authorize_cluster(AclOperation::Create);
    for t in &request.topics {
        let name = t.name.0.to_string();
        let fail = |error: ResponseError, msg: String| Some(error_result(&name, error, msg, v));
        if !seen.insert(name.clone()) {
            results.push(fail(
                ResponseError::InvalidRequest,
                format!("Create topics request from client contains duplicate topic {name}"),
            ));
            continue;
        }
        if !cluster_create && !ctx.authorize(AclOperation::Create, ResourceType::Topic, &name) {
            results.push(fail(
                ResponseError::TopicAuthorizationFailed,
                "Authorization failed.".to_string(),
            ));
            continue;
        }
        let mut shards = None;
        let partitions = if !t.assignments.is_empty() {
            if t.num_partitions != -1 || t.replication_factor != -1 {
                results.push(fail(
                    ResponseError::InvalidRequest,
                    "Both numPartitions or replicationFactor and replicasAssignments were set."
                        .into(),
                ));
                continue;
            }
            match assigned_shards(&ctx.shard.config, &t.assignments) {
                Ok(on) => shards = on,
                Err((error, message)) => {
                    results.push(fail(error, message));
                    continue;
                }
            }
            t.assignments.len() as i32
        } else if t.num_partitions == -1 {
            ctx.shard.config.default_partitions
        } else {
            t.num_partitions
        };
        if partitions <= 0 {
            results.push(fail(
                ResponseError::InvalidPartitions,
                "Number of partitions was set to an invalid non-positive value.".into(),
            ));
            continue;
        }
        if t.replication_factor != -1 && t.replication_factor != 1 {
            let msg = if t.replication_factor <= 0 {
                "Replication factor must be larger than 0, or -1 to use the default value."
                    .to_string()
            } else {
                replication_factor_refused(&ctx.shard.config, i32::from(t.replication_factor))
            };
            results.push(fail(ResponseError::InvalidReplicationFactor, msg));
            continue;
        }
        let mut configs = BTreeMap::new();
        let mut config_error = None;
        for c in &t.configs {
            let value = c.value.as_ref().map(|s| s.as_str());
            match topic_config::validate(c.name.as_str(), value) {
                Ok(()) => {
                    configs.insert(c.name.to_string(), value.unwrap_or_default().to_string());
                }
                Err(e) => {
                    config_error = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = config_error {
            results.push(fail(ResponseError::InvalidConfig, e));
            continue;
        }
        results.push(None);
        to_create.push(NewTopic { name, partitions, configs, shards });
    }

    let validate_only = request.validate_only;
    let asked = to_create.clone();
    let created = if to_create.is_empty() {
        None
    } else {
        let topics = to_create;
        Some(
            ctx.shard
                .ask_control(|reply| ControlRequest::CreateTopics { topics, validate_only, reply })
                .await,
        )
    };
    let config = ctx.shard.config.clone();
    let shard = ctx.shard.clone();
    Outcome::serial(async move {
        let answers = match created {
            Some(rx) => rx.await.unwrap_or_default(),
            None => Vec::new(),
        };
        let mut created = asked.iter().zip(answers);
        let catalog = shard.catalog();
        let broker = BrokerDefaults::of(&config, &catalog);
        let topics = results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| match created.next() {
                    Some((new, Ok(meta))) => ok_result(&broker, v, new, &meta, validate_only),
                    Some((new, Err(e))) => {
                        error_result(&new.name, e.error(), e.message().to_string(), v)
                    }
                    // The control shard did not answer (shutdown).
                    None => error_result(
                        "",
                        ResponseError::UnknownServerError,
                        "topic creation was not answered".into(),
                        v,
                    ),
                })
            })
            .collect();
        CreateTopicsResponse::default().with_topics(topics)
    })
}

fn error_result(
    name: &str,
    error: ResponseError,
    message: String,
    version: i16,
) -> CreatableTopicResult {
    let mut r =
        CreatableTopicResult::default().with_name(topic_name(name)).with_error_code(error.code());
    r.error_message = Some(sb(&message));
    if version >= 5 {
        r.num_partitions = -1;
        r.replication_factor = -1;
        r.topic_config_error_code = 0;
    }
    r
}

fn ok_result(
    broker: &BrokerDefaults,
    version: i16,
    new: &NewTopic,
    meta: &TopicMeta,
    validate_only: bool,
) -> CreatableTopicResult {
    let mut r = CreatableTopicResult::default().with_name(topic_name(&new.name));
    if version >= 5 {
        r.num_partitions = new.partitions;
        r.replication_factor = 1;
        r.configs = Some(
            topic_config::names()
                .map(|n| {
                    let (value, source) = match new.configs.get(n) {
                        Some(v) => (Some(v.clone()), Source::Topic),
                        None => topic_config::default_with_source(n, broker),
                    };
                    CreatableTopicConfigs::default()
                        .with_name(sb(n))
                        .with_value(value.map(|v| sb(&v)))
                        .with_config_source(source.code())
                })
                .collect(),
        );
    }
    if version >= 7 && !validate_only {
        r.topic_id = meta.id;
    }
    r
}
/// Checks a topic's manual assignment as Kafka's controller does
/// (`ReplicationControlManager.createTopic`, `validateManualPartitionAssignment`):
/// INVALID_REPLICA_ASSIGNMENT for a partition index given twice, an empty replica list,
/// a broker id that names no node, a broker listed twice, a replica count that differs
/// from the previous partitions', or indexes that are not 0..n. Then shardlog's own:
/// more than one replica is INVALID_REPLICATION_FACTOR. With a node per shard
/// (`--shard-ports`) returns each partition's shard (by index): the topic is placed
/// where the assignment says; with one node, `None` (placed by load, as without an
/// assignment).
/// One partition's manual replica list checked as Kafka's
/// `validateManualPartitionAssignment`: INVALID_REPLICA_ASSIGNMENT for an empty list, a
/// broker id that names no node of this broker, a broker listed twice, or a length
/// other than `replicas` (the previous partitions'). Returns the shard of its first
/// replica (the leader's node).
pub(super) fn check_replicas(
    config: &crate::config::Config,
    broker_ids: &[kafka_protocol::messages::BrokerId],
    replicas: Option<usize>,
) -> Result<usize, (ResponseError, String)> {
    use crate::net::shard_nodes;
    let invalid = |m: String| (ResponseError::InvalidReplicaAssignment, m);
    if broker_ids.is_empty() {
        return Err(invalid(
            "The manual partition assignment includes an empty replica list.".into(),
        ));
    }
    let mut sorted: Vec<i32> = broker_ids.iter().map(|b| b.0).collect();
    sorted.sort_unstable();
    for (i, &broker) in sorted.iter().enumerate() {
        if shard_nodes::shard_of(config, broker).is_none() {
            return Err(invalid(format!(
                "The manual partition assignment includes broker {broker}, but no such broker \
                 is registered."
            )));
        }
        if i > 0 && sorted[i - 1] == broker {
            return Err(invalid(format!(
                "The manual partition assignment includes the broker {broker} more than once."
            )));
        }
    }
    if let Some(rf) = replicas.filter(|&rf| rf != sorted.len()) {
        return Err(invalid(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this \
             is not consistent with previous partitions, which have {rf} replica(s).",
            sorted.len()
        )));
    }
    Ok(shard_nodes::shard_of(config, broker_ids[0].0).unwrap_or(0))
}

fn assigned_shards(
    config: &crate::config::Config,
    assignments: &[CreatableReplicaAssignment],
) -> Result<Option<Vec<usize>>, (ResponseError, String)> {
    use crate::net::shard_nodes;
    let invalid = |m: String| (ResponseError::InvalidReplicaAssignment, m);
    let mut by_index: BTreeMap<i32, usize> = BTreeMap::new();
    let mut replicas: Option<usize> = None;
    for a in assignments {
        if by_index.contains_key(&a.partition_index) {
            return Err(invalid(format!(
                "Found multiple manual partition assignments for partition {}",
                a.partition_index
            )));
        }
        let shard = check_replicas(config, &a.broker_ids, replicas)?;
        replicas = Some(a.broker_ids.len());
        by_index.insert(a.partition_index, shard);
    }
    if by_index.keys().copied().ne(0..by_index.len() as i32) {
        return Err(invalid("partitions should be a consecutive 0-based integer sequence".into()));
    }
    if let Some(rf) = replicas.filter(|&rf| rf > 1) {
        return Err((
            ResponseError::InvalidReplicationFactor,
            replication_factor_refused(config, i32::try_from(rf).unwrap_or(i32::MAX)),
        ));
    }
    Ok(shard_nodes::enabled(config).then(|| by_index.into_values().collect()))
}

/// INVALID_REPLICATION_FACTOR's message for a replication factor `rf` above 1: Kafka's
/// when the broker has fewer nodes than `rf` (one, or one per shard with
/// `--shard-ports`), else that there is one replica of each partition.
fn replication_factor_refused(config: &crate::config::Config, rf: i32) -> String {
    let nodes = crate::net::shard_nodes::node_count(config);
    if usize::try_from(rf).is_ok_and(|rf| rf > nodes) {
        format!(
            "Unable to replicate the partition {rf} time(s): The target replication factor of \
             {rf} cannot be reached because only {nodes} broker(s) are registered."
        )
    } else {
        format!(
            "Unable to replicate the partition {rf} time(s): shardlog keeps one replica of each \
             partition."
        )
    }
}

#[cfg(test)]
mod assignment_tests {
    use kafka_protocol::messages::BrokerId;

    use super::*;
    use crate::config::Config;

    fn assign(parts: &[(i32, &[i32])]) -> Vec<CreatableReplicaAssignment> {
        parts
            .iter()
            .map(|(p, b)| {
                CreatableReplicaAssignment::default()
                    .with_partition_index(*p)
                    .with_broker_ids(b.iter().map(|&b| BrokerId(b)).collect())
            })
            .collect()
    }

    fn refusal(config: &Config, parts: &[(i32, &[i32])]) -> (i16, String) {
        let (e, m) = assigned_shards(config, &assign(parts)).unwrap_err();
        (e.code(), m)
    }

    #[test]
    fn manual_assignments_get_kafkas_refusals_and_place_partitions_on_shard_nodes() {
        let one = Config::from_args(["shardlog"]);
        // One node: valid assignments are placed by load.
        assert_eq!(assigned_shards(&one, &assign(&[(1, &[0]), (0, &[0])])), Ok(None));
        let bad = 39;
        assert_eq!(
            refusal(&one, &[(0, &[0]), (0, &[0])]),
            (bad, "Found multiple manual partition assignments for partition 0".into())
        );
        assert_eq!(
            refusal(&one, &[(0, &[])]),
            (bad, "The manual partition assignment includes an empty replica list.".into())
        );
        assert_eq!(
            refusal(&one, &[(0, &[1])]),
            (bad, "The manual partition assignment includes broker 1, but no such broker is registered.".into())
        );
        assert_eq!(
            refusal(&one, &[(0, &[0, 0])]),
            (bad, "The manual partition assignment includes the broker 0 more than once.".into())
        );
        assert_eq!(
            refusal(&one, &[(0, &[0]), (2, &[0])]),
            (bad, "partitions should be a consecutive 0-based integer sequence".into())
        );
        // A node per shard (nodes 5 and 6): each partition goes to its node's shard.
        let mut nodes = Config::from_args(["shardlog", "--node-id", "5"]);
        nodes.shard_bound_ports = vec![9300, 9301];
        assert_eq!(
            assigned_shards(&nodes, &assign(&[(2, &[5]), (0, &[6]), (1, &[6])])),
            Ok(Some(vec![1, 1, 0]))
        );
        assert_eq!(
            refusal(&nodes, &[(0, &[5]), (1, &[5, 6])]),
            (bad, "The manual partition assignment includes a partition with 2 replica(s), but this is not consistent with previous partitions, which have 1 replica(s).".into())
        );
        assert_eq!(
            refusal(&nodes, &[(0, &[6, 5])]),
            (38, "Unable to replicate the partition 2 time(s): shardlog keeps one replica of each partition.".into())
        );
        assert_eq!(
            refusal(&nodes, &[(0, &[7])]),
            (bad, "The manual partition assignment includes broker 7, but no such broker is registered.".into())
        );
    }

    #[test]
    fn a_replication_factor_above_the_node_count_gets_kafkas_message_else_one_replica() {
        let one = Config::from_args(["shardlog"]);
        assert_eq!(
            replication_factor_refused(&one, 3),
            "Unable to replicate the partition 3 time(s): The target replication factor of 3 \
             cannot be reached because only 1 broker(s) are registered."
        );
        let mut nodes = Config::from_args(["shardlog"]);
        nodes.shard_bound_ports = vec![9300, 9301];
        assert_eq!(
            replication_factor_refused(&nodes, 3),
            "Unable to replicate the partition 3 time(s): The target replication factor of 3 \
             cannot be reached because only 2 broker(s) are registered."
        );
        assert_eq!(
            replication_factor_refused(&nodes, 2),
            "Unable to replicate the partition 2 time(s): shardlog keeps one replica of each \
             partition."
        );
    }
}
