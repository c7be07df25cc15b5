//! CreateTopics (key 19): validated here (names, counts, replication factor,
//! configs), created on shard 0, answered after every shard opened its logs.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
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
/// request, or manual assignments combined with counts).
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
        let partitions = if !t.assignments.is_empty() {
            if t.num_partitions != -1 || t.replication_factor != -1 {
                results.push(fail(
                    ResponseError::InvalidRequest,
                    "Both numPartitions or replicationFactor and replicasAssignments were set."
                        .into(),
                ));
                continue;
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
                format!(
                    "Unable to replicate the partition {rf} time(s): The target replication \
                     factor of {rf} cannot be reached because only 1 broker(s) are registered.",
                    rf = t.replication_factor
                )
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
        to_create.push(NewTopic { name, partitions, configs });
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
