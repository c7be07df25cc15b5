//! CreatePartitions (key 37): grows topics to a larger partition count; new
//! partitions are placed fewest-partitions-first like new topics, or with a manual
//! assignment and a node per shard (`--shard-ports`) on their assigned node's shard.

use kafka_protocol::messages::create_partitions_request::CreatePartitionsAssignment;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::metadata::AssignedPartitions;
use crate::protocol::strings::sb;
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 3 };

/// Per topic: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (count not above the
/// current one), INVALID_REQUEST (duplicate topic in the request),
/// INVALID_REPLICA_ASSIGNMENT (a manual assignment Kafka's controller would refuse:
/// a replica list [`super::create_topics::check_replicas`] refuses, or not one list
/// per new partition).
pub async fn handle(
    ctx: &Ctx,
    request: CreatePartitionsRequest,
) -> Outcome<CreatePartitionsResponse> {
    let mut seen = std::collections::HashMap::new();
    for t in &request.topics {
        *seen.entry(t.name.0.to_string()).or_insert(0) += 1;
    }
    // Kafka: ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED.
    let denied: std::collections::HashSet<String> = request
        .topics
        .iter()
        .map(|t| t.name.0.to_string())
        .filter(|n| !ctx.authorize(crate::security::acl::AclOperation::Alter, crate::security::acl::ResourceType::Topic, n))
        .collect();
    let mut refused = std::collections::HashMap::new();
    let mut asked = Vec::new();
    for t in &request.topics {
        let name = t.name.0.to_string();
        if seen[name.as_str()] != 1 || denied.contains(&name) {
            continue;
        }
        match assigned(&ctx.shard.config, t.assignments.as_deref()) {
            Ok(assigned) => asked.push((name, t.count, assigned)),
            Err(e) => {
                refused.insert(name, e);
            }
        }
    }
    let validate_only = request.validate_only;
    let growing = if asked.is_empty() {
        None
    } else {
        let topics = asked;
        Some(
            ctx.shard
                .ask_control(|reply| ControlRequest::CreatePartitions {
                    topics,
                    validate_only,
                    reply,
                })
                .await,
        )
    };
    Outcome::serial(async move {
        let mut answers = match growing {
            Some(rx) => rx.await.unwrap_or_default(),
            None => Vec::new(),
        }
        .into_iter();
        let results = request
            .topics
            .iter()
            .map(|t| {
                let r = CreatePartitionsTopicResult::default().with_name(t.name.clone());
                if seen[t.name.0.as_str()] > 1 {
                    return r
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(sb("Duplicate topic in request.")));
                }
                if denied.contains(t.name.0.as_str()) {
                    return r.with_error_code(ResponseError::TopicAuthorizationFailed.code());
                }
                if let Some((error, message)) = refused.get(t.name.0.as_str()) {
                    return r.with_error_code(error.code()).with_error_message(Some(sb(message)));
                }
                match answers.next() {
                    Some(Ok(())) => r,
                    Some(Err(e)) => r
                        .with_error_code(e.error().code())
                        .with_error_message(Some(sb(e.message()))),
                    // The control shard did not answer (shutdown).
                    None => r.with_error_code(ResponseError::UnknownServerError.code()),
                }
            })
            .collect();
        CreatePartitionsResponse::default().with_results(results)
    })
}
/// The new partitions' manual assignment (`None` without one): each replica list
/// checked as Kafka does against the existing partitions' one replica, and with a node
/// per shard the shard of each.
fn assigned(
    config: &crate::config::Config,
    assignments: Option<&[CreatePartitionsAssignment]>,
) -> Result<Option<AssignedPartitions>, (ResponseError, String)> {
    let Some(assignments) = assignments else {
        return Ok(None);
    };
    let shards = assignments
        .iter()
        .map(|a| super::create_topics::check_replicas(config, &a.broker_ids, Some(1)))
        .collect::<Result<Vec<usize>, _>>()?;
    let on_shards = crate::net::shard_nodes::enabled(config).then_some(shards);
    Ok(Some(AssignedPartitions { count: assignments.len(), shards: on_shards }))
}


#[cfg(test)]
mod tests {
    use kafka_protocol::messages::BrokerId;

    use super::*;
    use crate::config::Config;

    fn lists(l: &[&[i32]]) -> Vec<CreatePartitionsAssignment> {
        l.iter()
            .map(|b| {
                CreatePartitionsAssignment::default()
                    .with_broker_ids(b.iter().map(|&b| BrokerId(b)).collect())
            })
            .collect()
    }

    #[test]
    fn new_partitions_assignments_are_checked_and_follow_shard_nodes() {
        let one = Config::from_args(["shardlog"]);
        assert_eq!(assigned(&one, None), Ok(None));
        assert_eq!(
            assigned(&one, Some(&lists(&[&[0], &[0]]))),
            Ok(Some(AssignedPartitions { count: 2, shards: None }))
        );
        let refusal = |c: &Config, l: &[&[i32]]| {
            let (e, m) = assigned(c, Some(&lists(l))).unwrap_err();
            (e.code(), m)
        };
        assert_eq!(
            refusal(&one, &[&[0], &[1]]),
            (39, "The manual partition assignment includes broker 1, but no such broker is registered.".into())
        );
        assert_eq!(
            refusal(&one, &[&[0, 0]]),
            (39, "The manual partition assignment includes the broker 0 more than once.".into())
        );
        let mut nodes = Config::from_args(["shardlog"]);
        nodes.shard_bound_ports = vec![9300, 9301];
        assert_eq!(
            assigned(&nodes, Some(&lists(&[&[1], &[0], &[1]]))),
            Ok(Some(AssignedPartitions { count: 3, shards: Some(vec![1, 0, 1]) }))
        );
        assert_eq!(
            refusal(&nodes, &[&[1, 0]]),
            (39, "The manual partition assignment includes a partition with 2 replica(s), but this is not consistent with previous partitions, which have 1 replica(s).".into())
        );
        assert_eq!(
            refusal(&nodes, &[&[]]),
            (39, "The manual partition assignment includes an empty replica list.".into())
        );
    }
}
