//! CreateTopics (key 19): validated here (names, counts, replication factor,
//! configs), created on shard 0, answered after every shard opened its logs.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};

use super::util::sb;
use super::{Ctx, Versions};
use crate::metadata::{CatalogError, TopicMeta};
use crate::shard::messages::NewTopic;
use crate::shard::{Shard, ShardRequest};
use crate::topic_config;

pub const VERSIONS: Versions = Versions { min: 2, max: 7 };

const INVALID_PARTITIONS: i16 = 37;
const INVALID_REPLICATION_FACTOR: i16 = 38;
const INVALID_REQUEST: i16 = 42;
const INVALID_CONFIG: i16 = 40;
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Creates topics through shard 0. Per topic: INVALID_TOPIC_EXCEPTION,
/// TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR (only 1 or
/// -1 on one broker), INVALID_CONFIG, INVALID_REQUEST (duplicate name in one
/// request, or manual assignments combined with counts).
pub async fn handle(ctx: &Ctx, request: CreateTopicsRequest) -> CreateTopicsResponse {
    let v = ctx.api_version;
    let mut results: Vec<Option<CreatableTopicResult>> = Vec::with_capacity(request.topics.len());
    let mut to_create = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for t in &request.topics {
        let name = t.name.0.to_string();
        let fail = |code: i16, msg: String| Some(error_result(&name, code, msg, v));
        if !seen.insert(name.clone()) {
            results.push(fail(
                INVALID_REQUEST,
                format!("Create topics request from client contains duplicate topic {name}"),
            ));
            continue;
        }
        let partitions = if !t.assignments.is_empty() {
            if t.num_partitions != -1 || t.replication_factor != -1 {
                results.push(fail(
                    INVALID_REQUEST,
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
                INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.".into(),
            ));
            continue;
        }
        if t.replication_factor != -1 && t.replication_factor != 1 {
            let msg = if t.replication_factor <= 0 {
                "Replication factor must be larger than 0, or -1 to use the default value."
                    .to_string()
            } else {
                format!("Unable to replicate the partition {} time(s): The target replication factor of {} cannot be reached because only 1 broker(s) are registered.", t.replication_factor, t.replication_factor)
            };
            results.push(fail(INVALID_REPLICATION_FACTOR, msg));
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
            results.push(fail(INVALID_CONFIG, e));
            continue;
        }
        results.push(None);
        to_create.push(NewTopic { name, partitions, configs });
    }

    let created = create(&ctx.shard, to_create.clone(), request.validate_only).await;
    let mut created = created.into_iter();
    let topics = results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                let outcome = created.next();
                match outcome {
                    Some((new, Ok(meta))) => ok_result(ctx, &new, &meta, request.validate_only),
                    Some((new, Err(e))) => {
                        error_result(&new.name, e.code(), e.message().to_string(), v)
                    }
                    None => error_result(
                        "",
                        UNKNOWN_SERVER_ERROR,
                        "topic creation was not answered".into(),
                        v,
                    ),
                }
            })
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics)
}

/// Asks shard 0 to create `topics`; each result pairs the request with its outcome.
/// Used by CreateTopics and by auto-creation (Metadata, Produce).
pub async fn create(
    shard: &Rc<Shard>,
    topics: Vec<NewTopic>,
    validate_only: bool,
) -> Vec<(NewTopic, Result<TopicMeta, CatalogError>)> {
    if topics.is_empty() {
        return Vec::new();
    }
    let asked = topics.clone();
    let answers = shard
        .ask(0, |reply| ShardRequest::CreateTopics { topics, validate_only, reply })
        .await
        .unwrap_or_default();
    let mut answers = answers.into_iter();
    asked
        .into_iter()
        .map(|t| {
            let a = answers.next().unwrap_or_else(|| {
                Err(CatalogError::InvalidTopic("the broker is shutting down".into()))
            });
            (t, a)
        })
        .collect()
}

fn error_result(name: &str, code: i16, message: String, version: i16) -> CreatableTopicResult {
    let mut r = CreatableTopicResult::default()
        .with_name(super::util::topic_name(name))
        .with_error_code(code);
    r.error_message = Some(sb(&message));
    if version >= 5 {
        r.num_partitions = -1;
        r.replication_factor = -1;
        r.topic_config_error_code = 0;
    }
    r
}

fn ok_result(
    ctx: &Ctx,
    new: &NewTopic,
    meta: &TopicMeta,
    validate_only: bool,
) -> CreatableTopicResult {
    let mut r = CreatableTopicResult::default().with_name(super::util::topic_name(&new.name));
    if ctx.api_version >= 5 {
        r.num_partitions = new.partitions;
        r.replication_factor = 1;
        r.configs = Some(
            topic_config::names()
                .map(|n| {
                    let (value, source) = match new.configs.get(n) {
                        Some(v) => (Some(v.clone()), 1), // TOPIC_CONFIG
                        None => (topic_config::default_value(n, &ctx.shard.config), 5), // DEFAULT_CONFIG
                    };
                    CreatableTopicConfigs::default()
                        .with_name(sb(n))
                        .with_value(value.map(|v| sb(&v)))
                        .with_config_source(source)
                })
                .collect(),
        );
    }
    if ctx.api_version >= 7 && !validate_only {
        r.topic_id = meta.id;
    }
    r
}
