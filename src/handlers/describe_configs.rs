//! DescribeConfigs (key 32): topic configs (overrides with source TOPIC_CONFIG,
//! the rest DEFAULT_CONFIG) and this broker's configs (source DEFAULT_CONFIG or
//! STATIC_BROKER_CONFIG for the ones flags set); with `include_synonyms`, each value's
//! sources in precedence order (a topic override, then its broker config).

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use super::alter_config_route::{RESOURCE_BROKER, RESOURCE_TOPIC};
use super::{Ctx, Outcome, Versions};
use crate::broker_config::{self, BrokerDefaults, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::topic_config;

pub const VERSIONS: Versions = Versions { min: 1, max: 4 };

const SOURCE_TOPIC_CONFIG: i8 = 1;
const SOURCE_STATIC_BROKER_CONFIG: i8 = 4;
const SOURCE_DEFAULT_CONFIG: i8 = 5;

/// Describes topics and this broker. Errors per resource: UNKNOWN_TOPIC_OR_PARTITION,
/// INVALID_REQUEST (unknown resource type or another broker's id).
pub async fn handle(
    ctx: &Ctx,
    request: DescribeConfigsRequest,
) -> Outcome<DescribeConfigsResponse> {
    let include_synonyms = ctx.api_version >= 1 && request.include_synonyms;
    let catalog = ctx.shard.catalog();
    let broker = BrokerDefaults::of(&ctx.shard.config, &catalog);
    let results = request
        .resources
        .iter()
        .map(|res| {
            let mut out = DescribeConfigsResult::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name.clone());
            let entries: Vec<(String, Option<String>, i8)> = match res.resource_type {
                RESOURCE_TOPIC => match catalog.topic(res.resource_name.as_str()) {
                    Some(meta) => {
                        let configs = topic_overrides(meta, &ctx.shard.config);
                        topic_config::names()
                        .map(|n| match configs.get(n) {
                            Some(v) => (n.to_string(), Some(v.clone()), SOURCE_TOPIC_CONFIG),
                            None => {
                                let (v, source) = topic_config::default_with_source(n, &broker);
                                (n.to_string(), v, source)
                            }
                        })
                        .collect()
                    }
                    None => {
                        return out
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_error_message(Some(sb("Topic does not exist")));
                    }
                },
                RESOURCE_BROKER => {
                    let name = res.resource_name.as_str();
                    if name.is_empty() {
                        // The cluster default: only what is set there (Kafka's
                        // `ConfigHelper` for the default broker resource).
                        catalog
                            .broker_default_configs
                            .iter()
                            .map(|(k, v)| (k.clone(), Some(v.clone()), SOURCE_DYNAMIC_DEFAULT))
                            .collect()
                    } else if name != ctx.shard.config.node_id.to_string() {
                        return out
                            .with_error_code(ResponseError::InvalidRequest.code())
                            .with_error_message(Some(sb("Unexpected broker id")));
                    } else {
                        broker_configs(ctx, &broker)
                    }
                }
                _ => {
                    return out
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(sb("Unsupported resource type")));
                }
            };
            let keys = res.configuration_keys.as_ref();
            out.configs = entries
                .into_iter()
                .filter(|(n, _, _)| {
                    keys.is_none_or(|k| k.is_empty() || k.iter().any(|x| x.as_str() == n))
                })
                .map(|(n, value, source)| {
                    let mut e = DescribeConfigsResourceResult::default()
                        .with_name(sb(&n))
                        .with_value(value.map(|v| sb(&v)))
                        .with_config_source(source);
                    if ctx.api_version >= 3 {
                        e.config_type = config_type(&n);
                    }
                    if include_synonyms {
                        e.synonyms = synonyms(&broker, res.resource_type, &n, e.value.as_ref(), source);
                    }
                    e
                })
                .collect();
            out
        })
        .collect();
    Outcome::Ready(DescribeConfigsResponse::default().with_results(results))
}

/// The sources of a config's value, highest precedence first (KIP-226): a topic
/// override (DYNAMIC_TOPIC_CONFIG), then the broker config it defaults to as set for
/// this node (DYNAMIC_BROKER_CONFIG), as the cluster default
/// (DYNAMIC_DEFAULT_BROKER_CONFIG), and from the flags or Kafka's default. A broker
/// config lists the same layers under its own name.
fn synonyms(
    broker: &BrokerDefaults,
    resource_type: i8,
    name: &str,
    value: Option<&kafka_protocol::protocol::StrBytes>,
    source: i8,
) -> Vec<DescribeConfigsSynonym> {
    let entry = |n: &str, v: Option<String>, s: i8| {
        DescribeConfigsSynonym::default().with_name(sb(n)).with_value(v.map(|v| sb(&v))).with_source(s)
    };
    let mut out = Vec::new();
    let (broker_name, topic_name) = if resource_type == RESOURCE_TOPIC {
        if source == SOURCE_TOPIC_CONFIG {
            out.push(entry(name, value.map(|v| v.to_string()), source));
        }
        let Some(b) = topic_config::broker_synonym(name) else { return out };
        (b, Some(name))
    } else {
        (name, broker_config::topic_synonym(name))
    };
    let node = broker.node.get(broker_name);
    let cluster = broker.cluster.get(broker_name);
    if let Some(v) = node {
        out.push(entry(broker_name, Some(v.clone()), SOURCE_DYNAMIC_BROKER));
    }
    if let Some(v) = cluster {
        out.push(entry(broker_name, Some(v.clone()), SOURCE_DYNAMIC_DEFAULT));
    }
    match topic_name {
        Some(t) => out.push(entry(
            broker_name,
            topic_config::default_value(t, broker.config),
            SOURCE_DEFAULT_CONFIG,
        )),
        None if resource_type != RESOURCE_TOPIC => {
            if let Some(v) = flag_value(name, broker.config) {
                out.push(entry(name, Some(v), SOURCE_STATIC_BROKER_CONFIG));
            } else if out.is_empty() {
                out.push(entry(name, value.map(|v| v.to_string()), source));
            }
        }
        None => {}
    }
    out
}

/// A topic's overrides as DescribeConfigs shows them. `__consumer_offsets` is created by
/// Kafka with `cleanup.policy=compact`, `compression.type=producer` and `segment.bytes`
/// from `offsets.topic.segment.bytes`; here those are what its logs obey, whatever the
/// catalog holds (its configs cannot be altered).
fn topic_overrides(
    meta: &crate::metadata::TopicMeta,
    c: &crate::config::Config,
) -> std::collections::BTreeMap<String, String> {
    let mut configs = meta.configs.clone();
    if crate::metadata::is_internal(&meta.name) {
        configs.insert("cleanup.policy".into(), "compact".into());
        configs.insert("compression.type".into(), "producer".into());
        configs.insert("segment.bytes".into(), c.offsets_topic_segment_bytes.to_string());
    }
    configs
}

/// The value of a broker config that a flag sets, if shardlog has one for it.
fn flag_value(name: &str, c: &crate::config::Config) -> Option<String> {
    Some(match name {
        "log.cleaner.backoff.ms" => c.log_cleaner_backoff_ms.to_string(),
        "log.cleaner.dedupe.buffer.size" => c.log_cleaner_dedupe_buffer_size.to_string(),
        "log.cleaner.io.max.bytes.per.second" => {
            format!("{:?}", c.log_cleaner_io_max_bytes_per_second).replace('e', "E")
        }
        "log.cleaner.enable" => c.log_cleaner_enable.to_string(),
        "log.retention.check.interval.ms" => c.log_retention_check_interval_ms.to_string(),
        "offsets.topic.segment.bytes" => c.offsets_topic_segment_bytes.to_string(),
        _ => {
            let topic = broker_config::topic_synonym(name)?;
            if topic_config::static_default(topic).is_some() {
                return None; // not a flag: Kafka's default
            }
            topic_config::default_value(topic, c)?
        }
    })
}

/// This broker's configs: the read-only ones from the flags, and every dynamic one with
/// the value in force (this node's dynamic value, the cluster default, the flag, or
/// Kafka's default, in that order).
fn broker_configs(ctx: &Ctx, broker: &BrokerDefaults) -> Vec<(String, Option<String>, i8)> {
    let c = &ctx.shard.config;
    let (host, port) = c.advertised();
    let mut out: Vec<(String, Option<String>, i8)> = vec![
        ("advertised.listeners".into(), Some(format!("PLAINTEXT://{host}:{port}")), SOURCE_STATIC_BROKER_CONFIG),
        ("auto.create.topics.enable".into(), Some(c.auto_create_topics.to_string()), SOURCE_STATIC_BROKER_CONFIG),
        ("broker.id".into(), Some(c.node_id.to_string()), SOURCE_STATIC_BROKER_CONFIG),
        ("listeners".into(), Some(format!("PLAINTEXT://{}", c.listen)), SOURCE_STATIC_BROKER_CONFIG),
        ("log.dirs".into(), Some(c.data_dir.display().to_string()), SOURCE_STATIC_BROKER_CONFIG),
        ("log.retention.hours".into(), Some("168".into()), SOURCE_DEFAULT_CONFIG),
        ("node.id".into(), Some(c.node_id.to_string()), SOURCE_STATIC_BROKER_CONFIG),
        ("num.partitions".into(), Some(c.default_partitions.to_string()), SOURCE_STATIC_BROKER_CONFIG),
        ("socket.request.max.bytes".into(), Some(c.max_request_bytes.to_string()), SOURCE_STATIC_BROKER_CONFIG),
    ];
    for name in ["log.cleaner.enable", "log.retention.check.interval.ms", "offsets.topic.segment.bytes"] {
        out.push((name.into(), flag_value(name, c), SOURCE_STATIC_BROKER_CONFIG));
    }
    for name in broker_config::dynamic_names() {
        let entry = match broker.dynamic(name) {
            Some((v, source)) => (Some(v.to_string()), source),
            None => match flag_value(name, c) {
                Some(v) => (Some(v), SOURCE_STATIC_BROKER_CONFIG),
                None => {
                    let topic = broker_config::topic_synonym(name);
                    (topic.and_then(topic_config::static_default), SOURCE_DEFAULT_CONFIG)
                }
            },
        };
        out.push((name.to_string(), entry.0, entry.1));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Kafka's ConfigType codes (v3+): 1 BOOLEAN, 2 STRING, 3 INT, 5 LONG, 6 DOUBLE, 7 LIST.
fn config_type(name: &str) -> i8 {
    match name {
        "preallocate"
        | "unclean.leader.election.enable"
        | "remote.log.copy.disable"
        | "remote.log.delete.on.disable"
        | "remote.storage.enable"
        | "auto.create.topics.enable"
        | "log.cleaner.enable" => 1,
        "max.message.bytes"
        | "segment.bytes"
        | "index.interval.bytes"
        | "segment.index.bytes"
        | "min.insync.replicas"
        | "compression.gzip.level"
        | "compression.lz4.level"
        | "compression.zstd.level"
        | "message.max.bytes"
        | "num.partitions"
        | "broker.id"
        | "node.id"
        | "log.index.interval.bytes"
        | "log.segment.bytes"
        | "socket.request.max.bytes"
        | "log.retention.hours"
        | "offsets.topic.segment.bytes" => 3,
        "min.cleanable.dirty.ratio" | "log.cleaner.io.max.bytes.per.second" => 6,
        "cleanup.policy"
        | "leader.replication.throttled.replicas"
        | "follower.replication.throttled.replicas"
        | "listeners"
        | "advertised.listeners"
        | "log.dirs" => 7,
        "compression.type" | "message.timestamp.type" => 2,
        _ => 5,
    }
}
