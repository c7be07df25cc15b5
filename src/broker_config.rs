//! Dynamic broker configs (KIP-226): the broker configs AlterConfigs and
//! IncrementalAlterConfigs may change while shardlog runs, for this node (resource name
//! = its node id) or as the cluster default (resource name ""), kept in the catalog and
//! so persisted and applied by every shard. A value for this node wins over the cluster
//! default, which wins over the flags (see [`BrokerDefaults`]).
//!
//! What can change: every broker config a topic config defaults to (`log.retention.ms`,
//! `log.segment.bytes`, `log.cleanup.policy`, `message.max.bytes`, ... see
//! [`crate::topic_config::broker_synonym`]), validated as that topic config is, and the
//! log cleaner's settings that Kafka also lets change at runtime. Other broker configs
//! shardlog describes (`broker.id`, `listeners`, ...) are read-only: INVALID_REQUEST,
//! as Kafka answers for a config that cannot be updated dynamically; an unknown name is
//! INVALID_CONFIG.

use std::collections::BTreeMap;

use crate::config::Config;
use crate::metadata::CatalogError;
use crate::topic_config;

/// DescribeConfigs source of a value set for this node (`DYNAMIC_BROKER_CONFIG`).
pub const SOURCE_DYNAMIC_BROKER: i8 = 2;
/// DescribeConfigs source of a cluster-wide default (`DYNAMIC_DEFAULT_BROKER_CONFIG`).
pub const SOURCE_DYNAMIC_DEFAULT: i8 = 3;

/// The log cleaner's dynamic configs (Kafka's `LogCleaner.ReconfigurableConfigs`);
/// shardlog applies the first three and validates the rest.
pub const CLEANER_CONFIGS: &[&str] = &[
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.threads",
];

/// Other dynamic broker configs of Kafka's that shardlog accepts and stores (validated
/// as non-negative numbers) but does not act on: there are no replicas, and threads and
/// connection limits are not configurable yet.
pub const STORED_ONLY: &[&str] = &[
    "background.threads",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.rate",
    "max.connections",
    "max.connections.per.ip",
    "num.io.threads",
    "num.network.threads",
    "num.replica.fetchers",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

/// Broker configs shardlog describes that only a flag sets.
pub const READ_ONLY: &[&str] = &[
    "advertised.listeners",
    "auto.create.topics.enable",
    "broker.id",
    "listeners",
    "log.cleaner.enable",
    "log.dirs",
    "log.retention.check.interval.ms",
    "node.id",
    "num.partitions",
    "offsets.topic.segment.bytes",
    "socket.request.max.bytes",
];

/// The topic config whose broker default `name` is, if any.
pub fn topic_synonym(name: &str) -> Option<&'static str> {
    topic_config::names().find(|t| topic_config::broker_synonym(t) == Some(name))
}

/// Every broker config that can change dynamically, sorted.
pub fn dynamic_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = topic_config::names()
        .filter_map(topic_config::broker_synonym)
        .chain(CLEANER_CONFIGS.iter().copied())
        .chain(STORED_ONLY.iter().copied())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether `name` is a list config (APPEND and SUBTRACT apply to it).
pub fn is_list(name: &str) -> bool {
    topic_synonym(name).is_some_and(|t| t == "cleanup.policy")
}

/// Checks a dynamic value: INVALID_REQUEST for a read-only config, INVALID_CONFIG for
/// an unknown name or a bad value.
pub fn validate(name: &str, value: Option<&str>) -> Result<(), CatalogError> {
    if READ_ONLY.contains(&name) {
        return Err(CatalogError::InvalidRequest(format!(
            "Cannot update these configs dynamically: Set({name})"
        )));
    }
    if let Some(t) = topic_synonym(name) {
        return topic_config::validate(t, value)
            .map_err(|e| CatalogError::InvalidConfig(e.replace(t, name)));
    }
    let bad = || {
        CatalogError::InvalidConfig(format!(
            "Invalid value {} for configuration {name}",
            value.unwrap_or("null")
        ))
    };
    let v = value.map(str::trim).ok_or_else(bad)?;
    match name {
        "log.cleaner.io.max.bytes.per.second" | "log.cleaner.io.buffer.load.factor" => {
            v.parse::<f64>().ok().filter(|x| *x > 0.0 && x.is_finite()).map(|_| ()).ok_or_else(bad)
        }
        "log.cleaner.backoff.ms" => {
            v.parse::<i64>().ok().filter(|x| *x >= 0).map(|_| ()).ok_or_else(bad)
        }
        "log.cleaner.dedupe.buffer.size" | "log.cleaner.io.buffer.size" | "log.cleaner.threads" => {
            v.parse::<i64>().ok().filter(|x| *x >= 1).map(|_| ()).ok_or_else(bad)
        }
        n if STORED_ONLY.contains(&n) => {
            v.parse::<i64>().ok().filter(|x| *x >= 0).map(|_| ()).ok_or_else(bad)
        }
        _ => Err(CatalogError::InvalidConfig(format!("Unknown broker config name: {name}"))),
    }
}

/// The broker-level values in force: this node's dynamic configs, then the cluster
/// defaults, then the flags (and Kafka's defaults). Borrowed from the shard's catalog
/// copy and flags; cheap to build (no allocation).
#[derive(Debug, Clone, Copy)]
pub struct BrokerDefaults<'a> {
    /// The flags.
    pub config: &'a Config,
    /// Dynamic configs set for this node.
    pub node: &'a BTreeMap<String, String>,
    /// Dynamic cluster-wide defaults.
    pub cluster: &'a BTreeMap<String, String>,
}

static NONE: BTreeMap<String, String> = BTreeMap::new();

impl<'a> BrokerDefaults<'a> {
    /// The flags only (no dynamic configs).
    pub fn flags(config: &'a Config) -> Self {
        BrokerDefaults { config, node: &NONE, cluster: &NONE }
    }

    /// The flags and the dynamic configs of `catalog`.
    pub fn of(config: &'a Config, catalog: &'a crate::metadata::Catalog) -> Self {
        BrokerDefaults {
            config,
            node: &catalog.broker_node_configs,
            cluster: &catalog.broker_default_configs,
        }
    }

    /// The dynamic value of broker config `name` and its DescribeConfigs source.
    pub fn dynamic(&self, name: &str) -> Option<(&'a str, i8)> {
        match self.node.get(name) {
            Some(v) => Some((v.as_str(), SOURCE_DYNAMIC_BROKER)),
            None => self.cluster.get(name).map(|v| (v.as_str(), SOURCE_DYNAMIC_DEFAULT)),
        }
    }

    /// A numeric broker setting: its dynamic value if set and valid, else `flag`.
    pub fn number<T: std::str::FromStr>(&self, name: &str, flag: T) -> T {
        self.dynamic(name).and_then(|(v, _)| v.trim().parse().ok()).unwrap_or(flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synonyms_are_validated_as_their_topic_config_and_the_rest_by_kind() {
        assert_eq!(topic_synonym("log.retention.ms"), Some("retention.ms"));
        assert_eq!(topic_synonym("message.max.bytes"), Some("max.message.bytes"));
        assert_eq!(topic_synonym("broker.id"), None);
        assert!(validate("log.retention.ms", Some("60000")).is_ok());
        assert!(matches!(
            validate("log.retention.ms", Some("x")),
            Err(CatalogError::InvalidConfig(_))
        ));
        assert!(matches!(validate("log.cleanup.policy", Some("compact,delete")), Ok(())));
        assert!(matches!(validate("broker.id", Some("3")), Err(CatalogError::InvalidRequest(_))));
        assert!(matches!(
            validate("no.such.thing", Some("3")),
            Err(CatalogError::InvalidConfig(_))
        ));
        assert!(validate("log.cleaner.io.max.bytes.per.second", Some("1048576.5")).is_ok());
        assert!(validate("log.cleaner.io.max.bytes.per.second", Some("0")).is_err());
        assert!(validate("log.cleaner.threads", Some("0")).is_err());
        assert!(is_list("log.cleanup.policy") && !is_list("log.retention.ms"));
        let names = dynamic_names();
        assert!(names.contains(&"log.segment.bytes") && names.contains(&"log.cleaner.backoff.ms"));
        assert!(!names.iter().any(|n| READ_ONLY.contains(n)));
    }
}
