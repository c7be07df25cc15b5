//! DescribeConfigs (key 32), as Kafka 4.4's `ConfigHelper` answers it for TOPIC and
//! BROKER resources: every topic config Kafka lists (source TOPIC_CONFIG for an
//! override, else that of the broker config it defaults to), this broker's configs
//! (resource name = its node id), or the cluster defaults set dynamically (resource
//! name ""). Sources and synonyms follow [`crate::config_meta`]; `config_type` (v3+) and
//! `documentation` (v3+, only with `include_documentation`, else null) come from
//! [`crate::topic_config`], [`crate::broker_config`] and [`crate::config_docs`].

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use super::alter_config_route::{RESOURCE_BROKER, RESOURCE_TOPIC};
use super::{Ctx, Outcome, Versions};
use crate::broker_config::{self, BrokerDefaults};
use crate::config_docs;
use crate::config_meta::{ConfigType, Described, Source, Synonym};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::topic_config;

pub const VERSIONS: Versions = Versions { min: 1, max: 4 };

/// One config as it is answered, before the request's options shape it.
struct Entry {
    name: String,
    described: Described,
    config_type: ConfigType,
    read_only: bool,
    documentation: Option<&'static str>,
}

/// Describes topics and this broker. Errors per resource: UNKNOWN_TOPIC_OR_PARTITION,
/// INVALID_REQUEST (unknown resource type or another broker's id).
pub async fn handle(
    ctx: &Ctx,
    request: DescribeConfigsRequest,
) -> Outcome<DescribeConfigsResponse> {
    let catalog = ctx.shard.catalog();
    let broker = BrokerDefaults::of(&ctx.shard.config, &catalog);
    let results = request
        .resources
        .iter()
        .map(|res| {
            let out = DescribeConfigsResult::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name.clone());
            // Kafka: DESCRIBE_CONFIGS on the topic, or on the cluster for broker configs.
            let denied = match res.resource_type {
                RESOURCE_TOPIC => !ctx.authorize(
                    crate::security::acl::AclOperation::DescribeConfigs,
                    crate::security::acl::ResourceType::Topic,
                    res.resource_name.as_str(),
                ),
                RESOURCE_BROKER => !ctx.authorize_cluster(crate::security::acl::AclOperation::DescribeConfigs),
                _ => false,
            };
            if denied {
                let error = if res.resource_type == RESOURCE_TOPIC {
                    ResponseError::TopicAuthorizationFailed
                } else {
                    ResponseError::ClusterAuthorizationFailed
                };
                return out
                    .with_error_code(error.code())
                    .with_error_message(Some(sb("Authorization failed.")));
            }
            let entries = match res.resource_type {
                RESOURCE_TOPIC => match catalog.topic(res.resource_name.as_str()) {
                    Some(meta) => topic_entries(&topic_overrides(meta, &ctx.shard.config), &broker),
                    None => {
                        return out
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_error_message(Some(sb("Topic does not exist")));
                    }
                },
                RESOURCE_BROKER => {
                    let name = res.resource_name.as_str();
                    if name.is_empty() {
                        cluster_default_entries(&broker)
                    } else if !crate::net::shard_nodes::names_a_node(&ctx.shard.config, name) {
                        return out
                            .with_error_code(ResponseError::InvalidRequest.code())
                            .with_error_message(Some(sb("Unexpected broker id")));
                    } else {
                        let mut entries = broker_entries(&broker);
                        node_entries(&mut entries, &ctx.shard.config, name);
                        entries
                    }
                }
                _ => {
                    return out
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(sb("Unsupported resource type")));
                }
            };
            let keys = res.configuration_keys.as_ref();
            let wanted = |n: &str| keys.is_none_or(|k| k.is_empty() || k.iter().any(|x| x.as_str() == n));
            let configs = entries
                .into_iter()
                .filter(|e| wanted(&e.name))
                .map(|e| encode(e, ctx.api_version, &request))
                .collect();
            out.with_configs(configs)
        })
        .collect();
    Outcome::Ready(DescribeConfigsResponse::default().with_results(results))
}

/// One entry on the wire: synonyms only with `include_synonyms`, `config_type` and
/// `documentation` from v3 (documentation only with `include_documentation`).
fn encode(e: Entry, version: i16, request: &DescribeConfigsRequest) -> DescribeConfigsResourceResult {
    let mut out = DescribeConfigsResourceResult::default()
        .with_name(sb(&e.name))
        .with_value(e.described.value.as_deref().map(sb))
        .with_read_only(e.read_only)
        .with_config_source(e.described.source.code())
        .with_is_sensitive(false);
    if request.include_synonyms {
        out.synonyms = e
            .described
            .synonyms
            .iter()
            .map(|s| {
                DescribeConfigsSynonym::default()
                    .with_name(sb(&s.name))
                    .with_value(s.value.as_deref().map(sb))
                    .with_source(s.source.code())
            })
            .collect();
    }
    // Null unless asked for (the generated default is "").
    out.documentation = None;
    if version >= 3 {
        out.config_type = e.config_type.code();
        if request.include_documentation {
            out.documentation = e.documentation.map(sb);
        }
    }
    out
}

/// Every topic config Kafka lists for a topic with `overrides`.
fn topic_entries(
    overrides: &std::collections::BTreeMap<String, String>,
    broker: &BrokerDefaults,
) -> Vec<Entry> {
    topic_config::names()
        .map(|n| Entry {
            name: n.to_string(),
            described: topic_config::describe(n, overrides, broker),
            config_type: topic_config::config_type(n),
            read_only: false,
            documentation: config_docs::topic(n),
        })
        .collect()
}

/// This broker's configs: every one of [`broker_config::DESCRIBED`], and the dynamic
/// ones set for it or the cluster that are not among them (the replication quota
/// rates), sorted by name.
fn broker_entries(broker: &BrokerDefaults) -> Vec<Entry> {
    let mut names: Vec<&str> = broker_config::DESCRIBED.iter().map(|d| d.name).collect();
    names.extend(broker.node.keys().chain(broker.cluster.keys()).map(String::as_str));
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(|n| broker_entry(n, broker.describe(n))).collect()
}

/// With `--shard-ports`, the configs that name node `name` itself (its id and its own
/// listener port, [`crate::net::shard_nodes::node_configs`]) replace the shared ones,
/// as the operator's static configs of that node.
fn node_entries(entries: &mut [Entry], config: &crate::config::Config, name: &str) {
    use crate::net::shard_nodes;
    let Some(shard) = name.parse().ok().and_then(|id| shard_nodes::shard_of(config, id)) else {
        return;
    };
    let listeners = config.listeners().unwrap_or_default();
    for (config_name, value) in shard_nodes::node_configs(config, &listeners, shard) {
        let Some(entry) = entries.iter_mut().find(|e| e.name == config_name) else { continue };
        let mut synonyms = vec![Synonym::new(config_name, Some(value.clone()), Source::StaticBroker)];
        synonyms.extend(entry.described.synonyms.drain(..).filter(|s| s.source == Source::Default));
        entry.described = Described::new(Some(value), synonyms);
    }
}

/// The cluster defaults (Kafka's `ConfigHelper` for the default broker resource):
/// only what is set there, with only that level as synonym.
fn cluster_default_entries(broker: &BrokerDefaults) -> Vec<Entry> {
    broker
        .cluster
        .keys()
        .map(|n| broker_entry(n, broker.describe_cluster_default(n)))
        .collect()
}

fn broker_entry(name: &str, described: Described) -> Entry {
    Entry {
        name: name.to_string(),
        described,
        config_type: broker_config::config_type(name),
        read_only: !broker_config::is_dynamic(name),
        documentation: config_docs::broker(name),
    }
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


