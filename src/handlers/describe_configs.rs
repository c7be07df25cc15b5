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
    let results = request
        .resources
        .iter()
        .map(|res| {
            let mut out = DescribeConfigsResult::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name.clone());
            let entries: Vec<(String, Option<String>, i8)> = match res.resource_type {
                RESOURCE_TOPIC => match ctx.shard.catalog().topic(res.resource_name.as_str()) {
                    Some(meta) => topic_config::names()
                        .map(|n| match meta.configs.get(n) {
                            Some(v) => (n.to_string(), Some(v.clone()), SOURCE_TOPIC_CONFIG),
                            None => (
                                n.to_string(),
                                topic_config::default_value(n, &ctx.shard.config),
                                SOURCE_DEFAULT_CONFIG,
                            ),
                        })
                        .collect(),
                    None => {
                        return out
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_error_message(Some(sb("Topic does not exist")));
                    }
                },
                RESOURCE_BROKER => {
                    let name = res.resource_name.as_str();
                    if !name.is_empty() && name != ctx.shard.config.node_id.to_string() {
                        return out
                            .with_error_code(ResponseError::InvalidRequest.code())
                            .with_error_message(Some(sb("Unexpected broker id")));
                    }
                    broker_configs(ctx)
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
                        e.synonyms = synonyms(ctx, res.resource_type, &n, e.value.as_ref(), source);
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
/// override (DYNAMIC_TOPIC_CONFIG) before the broker config it overrides, which is
/// given with its default; a broker config is its own only synonym.
fn synonyms(
    ctx: &Ctx,
    resource_type: i8,
    name: &str,
    value: Option<&kafka_protocol::protocol::StrBytes>,
    source: i8,
) -> Vec<DescribeConfigsSynonym> {
    let entry = |n: &str, v: Option<kafka_protocol::protocol::StrBytes>, s: i8| {
        DescribeConfigsSynonym::default().with_name(sb(n)).with_value(v).with_source(s)
    };
    if resource_type != RESOURCE_TOPIC {
        return vec![entry(name, value.cloned(), source)];
    }
    let mut out = Vec::new();
    if source == SOURCE_TOPIC_CONFIG {
        out.push(entry(name, value.cloned(), source));
    }
    if let Some(broker_name) = topic_config::broker_synonym(name) {
        let default = topic_config::default_value(name, &ctx.shard.config);
        out.push(entry(broker_name, default.map(|v| sb(&v)), SOURCE_DEFAULT_CONFIG));
    }
    out
}

fn broker_configs(ctx: &Ctx) -> Vec<(String, Option<String>, i8)> {
    let c = &ctx.shard.config;
    let (host, port) = c.advertised();
    vec![
        (
            "advertised.listeners".into(),
            Some(format!("PLAINTEXT://{host}:{port}")),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "auto.create.topics.enable".into(),
            Some(c.auto_create_topics.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        ("broker.id".into(), Some(c.node_id.to_string()), SOURCE_STATIC_BROKER_CONFIG),
        (
            "listeners".into(),
            Some(format!("PLAINTEXT://{}", c.listen)),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "log.cleaner.backoff.ms".into(),
            Some(c.log_cleaner_backoff_ms.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "log.cleaner.dedupe.buffer.size".into(),
            Some(c.log_cleaner_dedupe_buffer_size.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "log.cleaner.enable".into(),
            Some(c.log_cleaner_enable.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "log.cleaner.io.max.bytes.per.second".into(),
            Some(format!("{:?}", c.log_cleaner_io_max_bytes_per_second).replace('e', "E")),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        ("log.dirs".into(), Some(c.data_dir.display().to_string()), SOURCE_STATIC_BROKER_CONFIG),
        (
            "log.index.interval.bytes".into(),
            Some(c.index_interval_bytes.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        ("log.retention.hours".into(), Some("168".into()), SOURCE_DEFAULT_CONFIG),
        (
            "log.segment.bytes".into(),
            Some(c.segment_bytes.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "message.max.bytes".into(),
            Some(c.max_message_bytes.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        ("node.id".into(), Some(c.node_id.to_string()), SOURCE_STATIC_BROKER_CONFIG),
        (
            "offsets.topic.segment.bytes".into(),
            Some(c.offsets_topic_segment_bytes.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "num.partitions".into(),
            Some(c.default_partitions.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
        (
            "socket.request.max.bytes".into(),
            Some(c.max_request_bytes.to_string()),
            SOURCE_STATIC_BROKER_CONFIG,
        ),
    ]
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
