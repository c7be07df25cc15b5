//! Broker configs: the ones shardlog describes ([`DESCRIBED`]: Kafka 4.4's name, type
//! and default, and the flag that sets it), the levels that set each one and their
//! order ([`BrokerDefaults::synonyms`], Kafka's `ConfigHelper`), and which can change.
//!
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
use crate::config_meta::{ConfigType, Described, Source, Synonym};
use crate::metadata::CatalogError;
use crate::topic_config;

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

/// The producer-state configs that change at runtime (Kafka's
/// `DynamicBrokerConfig.DynamicProducerStateManagerConfig`, less the transaction
/// verification switch: shardlog has no transactions yet). Applied at the next
/// expiration pass.
pub const PRODUCER_STATE_CONFIGS: &[&str] = &["producer.id.expiration.ms"];

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

/// The flag that sets a broker config: its clap id (see [`Config::given`]) and its
/// value in the broker config's format.
#[derive(Clone, Copy)]
pub struct Flag {
    /// The clap id, the `Config` field name (`log_retention_ms`).
    pub id: &'static str,
    /// Other flags that set it too (`--listeners` beside `--listen`).
    pub also: &'static [&'static str],
    /// The flag's value as Kafka writes the broker config.
    pub value: fn(&Config) -> String,
}

/// A broker config DescribeConfigs lists for this broker, as Kafka 4.4's `KafkaConfig`
/// defines it.
#[derive(Clone, Copy)]
pub struct BrokerConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// The DEFAULT_CONFIG value: Kafka's default, or shardlog's where its flag's
    /// default differs (`listeners`, `log.dirs`, `node.id`, `broker.id`,
    /// `queued.max.request.bytes`). None where Kafka has none and takes the value from
    /// another synonym (`log.retention.ms` from `log.retention.hours`).
    pub default: Option<&'static str>,
    /// The flag that sets it, if shardlog has one.
    pub flag: Option<Flag>,
}

const fn def(
    name: &'static str,
    config_type: ConfigType,
    default: Option<&'static str>,
    flag: Option<Flag>,
) -> BrokerConfigDef {
    BrokerConfigDef { name, config_type, default, flag }
}

const fn flag(id: &'static str, value: fn(&Config) -> String) -> Option<Flag> {
    Some(Flag { id, also: &[], value })
}

/// [`flag`] for a config two flags set: `id` and those in `also`.
const fn flags(
    id: &'static str,
    also: &'static [&'static str],
    value: fn(&Config) -> String,
) -> Option<Flag> {
    Some(Flag { id, also, value })
}

/// A number as Java's `Double.toString` writes it (`1.7976931348623157E308`, `0.5`).
fn java_double(v: f64) -> String {
    format!("{v:?}").replace('e', "E")
}

use ConfigType::{Boolean, Double, Int, List, Long, String as Str};

/// Every broker config shardlog describes for this broker (resource name = its node
/// id), sorted by name: each one a flag sets, every dynamic one (see [`is_dynamic`];
/// the others are read-only), and the synonyms Kafka lists with them
/// (`log.retention.hours`, `log.roll.hours`, ...). Types and defaults are Kafka 4.4's
/// (`kafka.server.KafkaConfig`), checked against a running broker.
pub const DESCRIBED: &[BrokerConfigDef] = &[
    def(
        "advertised.listeners",
        List,
        None,
        flags("advertised_listener", &["advertised_listeners"], |c| {
            let listeners = c.listeners().unwrap_or_default();
            let advertised: Vec<String> = listeners.iter().map(|l| l.advertised_url()).collect();
            advertised.join(",")
        }),
    ),
    def(
        "auto.create.topics.enable",
        Boolean,
        Some("true"),
        flag("auto_create_topics", |c| c.auto_create_topics.to_string()),
    ),
    def("background.threads", Int, Some("10"), None),
    def("broker.id", Int, Some("0"), flag("node_id", |c| c.node_id.to_string())),
    def("compression.gzip.level", Int, Some("-1"), None),
    def("compression.lz4.level", Int, Some("9"), None),
    def("compression.type", Str, Some("producer"), None),
    def("compression.zstd.level", Int, Some("3"), None),
    def(
        "connections.max.idle.ms",
        Long,
        Some("600000"),
        flag("connections_max_idle_ms", |c| c.connections_max_idle_ms.to_string()),
    ),
    def(
        "fetch.max.bytes",
        Int,
        Some("57671680"),
        flag("fetch_max_bytes", |c| c.fetch_max_bytes.to_string()),
    ),
    def(
        "group.initial.rebalance.delay.ms",
        Int,
        Some("3000"),
        flag("group_initial_rebalance_delay_ms", |c| {
            c.group_initial_rebalance_delay_ms.to_string()
        }),
    ),
    def(
        "group.max.session.timeout.ms",
        Int,
        Some("1800000"),
        flag("group_max_session_timeout_ms", |c| c.group_max_session_timeout_ms.to_string()),
    ),
    def(
        "group.min.session.timeout.ms",
        Int,
        Some("6000"),
        flag("group_min_session_timeout_ms", |c| c.group_min_session_timeout_ms.to_string()),
    ),
    def(
        "listeners",
        List,
        Some("PLAINTEXT://127.0.0.1:9092"),
        flags("listen", &["listeners"], |c| {
            let listeners = c.listeners().unwrap_or_default();
            let bound: Vec<String> = listeners.iter().map(|l| l.bound_url()).collect();
            bound.join(",")
        }),
    ),
    def(
        "log.cleaner.backoff.ms",
        Long,
        Some("15000"),
        flag("log_cleaner_backoff_ms", |c| c.log_cleaner_backoff_ms.to_string()),
    ),
    def(
        "log.cleaner.dedupe.buffer.size",
        Long,
        Some("134217728"),
        flag("log_cleaner_dedupe_buffer_size", |c| c.log_cleaner_dedupe_buffer_size.to_string()),
    ),
    def("log.cleaner.delete.retention.ms", Long, Some("86400000"), None),
    def(
        "log.cleaner.enable",
        Boolean,
        Some("true"),
        flag("log_cleaner_enable", |c| c.log_cleaner_enable.to_string()),
    ),
    def("log.cleaner.io.buffer.load.factor", Double, Some("0.9"), None),
    def("log.cleaner.io.buffer.size", Int, Some("524288"), None),
    def(
        "log.cleaner.io.max.bytes.per.second",
        Double,
        Some("1.7976931348623157E308"),
        flag("log_cleaner_io_max_bytes_per_second", |c| {
            java_double(c.log_cleaner_io_max_bytes_per_second)
        }),
    ),
    def("log.cleaner.max.compaction.lag.ms", Long, Some("9223372036854775807"), None),
    def("log.cleaner.min.cleanable.ratio", Double, Some("0.5"), None),
    def("log.cleaner.min.compaction.lag.ms", Long, Some("0"), None),
    def("log.cleaner.threads", Int, Some("1"), None),
    def("log.cleanup.policy", List, Some("delete"), None),
    def("log.dirs", List, Some("./data"), flag("data_dir", |c| c.data_dir.display().to_string())),
    def("log.flush.interval.messages", Long, Some("9223372036854775807"), None),
    def("log.flush.interval.ms", Long, None, None),
    def("log.flush.scheduler.interval.ms", Long, Some("9223372036854775807"), None),
    def(
        "log.index.interval.bytes",
        Int,
        Some("4096"),
        flag("index_interval_bytes", |c| c.index_interval_bytes.to_string()),
    ),
    def("log.index.size.max.bytes", Int, Some("10485760"), None),
    def("log.local.retention.bytes", Long, Some("-2"), None),
    def("log.local.retention.ms", Long, Some("-2"), None),
    def("log.message.timestamp.after.max.ms", Long, Some("3600000"), None),
    def("log.message.timestamp.before.max.ms", Long, Some("9223372036854775807"), None),
    def("log.message.timestamp.type", Str, Some("CreateTime"), None),
    def("log.preallocate", Boolean, Some("false"), None),
    def("log.remote.copy.lag.bytes", Long, Some("-1"), None),
    def("log.remote.copy.lag.ms", Long, Some("0"), None),
    def(
        "log.retention.bytes",
        Long,
        Some("-1"),
        flag("log_retention_bytes", |c| c.log_retention_bytes.to_string()),
    ),
    def(
        "log.retention.check.interval.ms",
        Long,
        Some("300000"),
        flag("log_retention_check_interval_ms", |c| c.log_retention_check_interval_ms.to_string()),
    ),
    def("log.retention.hours", Int, Some("168"), None),
    def("log.retention.minutes", Int, None, None),
    def(
        "log.retention.ms",
        Long,
        None,
        flag("log_retention_ms", |c| c.log_retention_ms.to_string()),
    ),
    def("log.roll.hours", Int, Some("168"), None),
    def("log.roll.jitter.hours", Int, Some("0"), None),
    def("log.roll.jitter.ms", Long, None, None),
    def("log.roll.ms", Long, None, flag("log_segment_ms", |c| c.log_segment_ms.to_string())),
    def(
        "log.segment.bytes",
        Int,
        Some("1073741824"),
        flag("segment_bytes", |c| c.segment_bytes.to_string()),
    ),
    def("log.segment.delete.delay.ms", Long, Some("60000"), None),
    def(
        "max.connections",
        Int,
        Some("2147483647"),
        flag("max_connections", |c| c.max_connections.map_or(i32::MAX as usize, |n| n).to_string()),
    ),
    def(
        "max.connections.per.ip",
        Int,
        Some("2147483647"),
        flag("max_connections_per_ip", |c| {
            c.max_connections_per_ip.map_or(i32::MAX as usize, |n| n).to_string()
        }),
    ),
    def("max.decompressed.message.bytes", Int, Some("2147483639"), None),
    def(
        "message.max.bytes",
        Int,
        Some("1048588"),
        flag("max_message_bytes", |c| c.max_message_bytes.to_string()),
    ),
    def("min.insync.replicas", Int, Some("1"), None),
    def("node.id", Int, Some("0"), flag("node_id", |c| c.node_id.to_string())),
    def("num.io.threads", Int, Some("8"), None),
    def("num.network.threads", Int, Some("3"), None),
    def(
        "num.partitions",
        Int,
        Some("1"),
        flag("default_partitions", |c| c.default_partitions.to_string()),
    ),
    def("num.replica.fetchers", Int, Some("1"), None),
    def(
        "offsets.retention.minutes",
        Int,
        Some("10080"),
        flag("offsets_retention_minutes", |c| c.offsets_retention_minutes.to_string()),
    ),
    def(
        "offsets.topic.segment.bytes",
        Int,
        Some("104857600"),
        flag("offsets_topic_segment_bytes", |c| c.offsets_topic_segment_bytes.to_string()),
    ),
    def(
        "producer.id.expiration.ms",
        Int,
        Some("86400000"),
        flag("producer_id_expiration_ms", |c| c.producer_id_expiration_ms.to_string()),
    ),
    // shardlog's 0 (no limit) is Kafka's -1.
    def(
        "queued.max.request.bytes",
        Long,
        Some("268435456"),
        flag("queued_max_request_bytes", |c| match c.queued_max_request_bytes {
            0 => "-1".to_string(),
            n => n.to_string(),
        }),
    ),
    def(
        "socket.request.max.bytes",
        Int,
        Some("104857600"),
        flag("max_request_bytes", |c| c.max_request_bytes.to_string()),
    ),
    def("unclean.leader.election.enable", Boolean, Some("false"), None),
];

/// The description of broker config `name`, if shardlog describes it.
pub fn described(name: &str) -> Option<&'static BrokerConfigDef> {
    DESCRIBED.binary_search_by(|d| d.name.cmp(name)).ok().map(|i| &DESCRIBED[i])
}

/// The type of broker config `name`: LONG for the dynamic quota rates shardlog only
/// stores (Kafka's `QuotaConfig`), which are listed only when set.
pub fn config_type(name: &str) -> ConfigType {
    described(name).map_or(ConfigType::Long, |d| d.config_type)
}

/// Whether `name` can be changed with AlterConfigs / IncrementalAlterConfigs (the
/// DescribeConfigs `read_only` flag is its negation). `listeners` is read-only here
/// though Kafka can change it per broker: shardlog cannot re-bind.
pub fn is_dynamic(name: &str) -> bool {
    dynamic_names().contains(&name)
}

/// Whether `name` is a broker config shardlog knows but only a flag (or nothing) sets:
/// AlterConfigs on it is INVALID_REQUEST.
pub fn is_read_only(name: &str) -> bool {
    described(name).is_some() && !is_dynamic(name)
}

/// The names that hold the same broker setting as `name`, in Kafka's order of
/// precedence (`DynamicBrokerConfig.brokerConfigSynonyms`): a time in ms before the
/// same time in minutes or hours; `log.flush.interval.ms` falls back to
/// `log.flush.scheduler.interval.ms`. Any other name is its only synonym.
pub fn synonym_names(name: &str) -> Vec<&str> {
    match name {
        "log.roll.ms" | "log.roll.hours" => vec!["log.roll.ms", "log.roll.hours"],
        "log.roll.jitter.ms" | "log.roll.jitter.hours" => {
            vec!["log.roll.jitter.ms", "log.roll.jitter.hours"]
        }
        "log.flush.interval.ms" => vec!["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        "log.retention.ms" | "log.retention.minutes" | "log.retention.hours" => {
            vec!["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
        }
        _ => vec![name],
    }
}

/// The topic config whose broker default `name` is, if any.
pub fn topic_synonym(name: &str) -> Option<&'static str> {
    topic_config::names().find(|t| topic_config::broker_synonym(t) == Some(name))
}

/// Every broker config that can change dynamically, sorted.
pub fn dynamic_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = topic_config::names()
        .filter_map(topic_config::broker_synonym)
        .chain(CLEANER_CONFIGS.iter().copied())
        .chain(PRODUCER_STATE_CONFIGS.iter().copied())
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
    if is_read_only(name) {
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
        "log.cleaner.dedupe.buffer.size"
        | "log.cleaner.io.buffer.size"
        | "log.cleaner.threads"
        | "producer.id.expiration.ms" => {
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

    /// The dynamic value of broker config `name` and its source (DynamicBroker or
    /// DynamicDefaultBroker).
    pub fn dynamic(&self, name: &str) -> Option<(&'a str, Source)> {
        match self.node.get(name) {
            Some(v) => Some((v.as_str(), Source::DynamicBroker)),
            None => self.cluster.get(name).map(|v| (v.as_str(), Source::DynamicDefaultBroker)),
        }
    }

    /// The value the operator gave broker config `name` with its flag, if they did
    /// (STATIC_BROKER_CONFIG).
    pub fn static_value(&self, name: &str) -> Option<String> {
        let flag = described(name)?.flag?;
        let given = std::iter::once(&flag.id).chain(flag.also).any(|id| self.config.is_given(id));
        given.then(|| (flag.value)(self.config))
    }

    /// Every level that sets broker config `name`, highest precedence first, as Kafka's
    /// `ConfigHelper.configSynonyms` lists them: this node's dynamic configs, the
    /// cluster's, the given flags, the defaults, each level over [`synonym_names`] in
    /// order; then the entries before the first one named `name` are dropped (so
    /// `log.retention.ms` unset lists nothing, not `log.retention.hours`' default).
    pub fn synonyms(&self, name: &str) -> Vec<Synonym> {
        let names = synonym_names(name);
        let mut out = Vec::new();
        for n in &names {
            if let Some(v) = self.node.get(*n) {
                out.push(Synonym::new(n, Some(v.clone()), Source::DynamicBroker));
            }
        }
        for n in &names {
            if let Some(v) = self.cluster.get(*n) {
                out.push(Synonym::new(n, Some(v.clone()), Source::DynamicDefaultBroker));
            }
        }
        for n in &names {
            if let Some(v) = self.static_value(n) {
                out.push(Synonym::new(n, Some(v), Source::StaticBroker));
            }
        }
        for n in &names {
            if let Some(v) = described(n).and_then(|d| d.default) {
                out.push(Synonym::new(n, Some(v.to_string()), Source::Default));
            }
        }
        let first = out.iter().position(|s| s.name == name).unwrap_or(out.len());
        out.drain(..first);
        out
    }

    /// Broker config `name` for this broker: the value of its first level (null when
    /// nothing sets it, e.g. `log.retention.ms` without `--log-retention-ms`).
    pub fn describe(&self, name: &str) -> Described {
        let synonyms = self.synonyms(name);
        Described::new(synonyms.first().and_then(|s| s.value.clone()), synonyms)
    }

    /// Broker config `name` as set for the cluster default (resource name ""): only
    /// that level, as Kafka lists it.
    pub fn describe_cluster_default(&self, name: &str) -> Described {
        let synonyms: Vec<Synonym> = self
            .synonyms(name)
            .into_iter()
            .filter(|s| s.source == Source::DynamicDefaultBroker)
            .collect();
        Described::new(self.cluster.get(name).cloned(), synonyms)
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
        assert!(validate("producer.id.expiration.ms", Some("1")).is_ok());
        assert!(matches!(
            validate("producer.id.expiration.ms", Some("0")),
            Err(CatalogError::InvalidConfig(_))
        ));
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
        assert!(!names.iter().any(|n| is_read_only(n)));
    }

    use crate::config_meta::Source::{Default, DynamicBroker, DynamicDefaultBroker, StaticBroker};
    use clap::Parser;

    fn syn(name: &str, value: &str, source: Source) -> Synonym {
        Synonym::new(name, Some(value.to_string()), source)
    }

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_table_is_sorted_and_its_defaults_are_the_flags_defaults() {
        assert!(DESCRIBED.windows(2).all(|w| w[0].name < w[1].name));
        let config = Config::parse_from(["shardlog"]);
        for d in DESCRIBED {
            let Some(f) = d.flag else { continue };
            let want = match d.name {
                // No default in Kafka: the hours synonym holds it (168 h = the flag's
                // default), and advertised.listeners falls back to listeners.
                "log.retention.ms" | "log.roll.ms" => {
                    assert_eq!((f.value)(&config), (168 * 3_600_000).to_string());
                    None
                }
                "advertised.listeners" => None,
                _ => Some((f.value)(&config)),
            };
            assert_eq!(d.default.map(str::to_string), want, "{}", d.name);
        }
        // Every dynamic config is listed, but the quota rates (not KafkaConfig's).
        let rates = [
            "follower.replication.throttled.rate",
            "leader.replication.throttled.rate",
            "replica.alter.log.dirs.io.max.bytes.per.second",
        ];
        for n in dynamic_names() {
            assert!(described(n).is_some() != rates.contains(&n), "{n}");
        }
        // Read-only as in Kafka 4.4 (listeners aside: Kafka can change it, shardlog cannot).
        for n in ["log.retention.hours", "num.partitions", "auto.create.topics.enable", "listeners"]
        {
            assert!(is_read_only(n), "{n}");
        }
        for n in ["compression.gzip.level", "max.decompressed.message.bytes", "max.connections"] {
            assert!(is_dynamic(n), "{n}");
        }
        assert_eq!(config_type("log.cleaner.dedupe.buffer.size"), ConfigType::Long);
        assert_eq!(config_type("log.cleaner.io.buffer.size"), ConfigType::Int);
    }

    #[test]
    fn a_flag_the_operator_gave_is_static_broker_config_and_one_left_alone_is_default() {
        let given =
            Config::from_args(["shardlog", "--max-message-bytes", "2000000", "--node-id", "0"]);
        let b = BrokerDefaults::flags(&given);
        assert_eq!(
            b.describe("message.max.bytes"),
            Described {
                value: Some("2000000".into()),
                source: StaticBroker,
                synonyms: vec![
                    syn("message.max.bytes", "2000000", StaticBroker),
                    syn("message.max.bytes", "1048588", Default),
                ],
            }
        );
        assert_eq!(b.describe("node.id").source, StaticBroker);
        assert_eq!(b.describe("broker.id").source, StaticBroker);
        let defaults = Config::from_args(["shardlog"]);
        let b = BrokerDefaults::flags(&defaults);
        assert_eq!(
            b.describe("message.max.bytes"),
            Described {
                value: Some("1048588".into()),
                source: Default,
                synonyms: vec![syn("message.max.bytes", "1048588", Default)],
            }
        );
        assert_eq!(b.describe("node.id").source, Default);
        // Kafka 4.4 with nothing set: log.retention.ms is null with no synonym (the
        // hours default is dropped), log.retention.hours is 168.
        assert_eq!(b.describe("log.retention.ms"), Described::new(None, vec![]));
        assert_eq!(
            b.describe("log.retention.hours"),
            Described::new(Some("168".into()), vec![syn("log.retention.hours", "168", Default)])
        );
        assert_eq!(b.describe("advertised.listeners"), Described::new(None, vec![]));
        assert_eq!(b.describe("max.connections").value.as_deref(), Some("2147483647"));
    }

    #[test]
    fn listeners_given_with_the_kafka_style_flags_are_static_broker_config() {
        let mut given = Config::from_args([
            "shardlog",
            "--listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:9095",
            "--advertised-listeners",
            "SASL_PLAINTEXT://kafka.example:9999",
        ]);
        given.bound_ports = vec![40001, 9095];
        let b = BrokerDefaults::flags(&given);
        let listeners = "PLAINTEXT://127.0.0.1:40001,SASL_PLAINTEXT://127.0.0.1:9095";
        assert_eq!(
            b.describe("listeners"),
            Described {
                value: Some(listeners.into()),
                source: StaticBroker,
                synonyms: vec![
                    syn("listeners", listeners, StaticBroker),
                    syn("listeners", "PLAINTEXT://127.0.0.1:9092", Default),
                ],
            }
        );
        let advertised = "PLAINTEXT://127.0.0.1:40001,SASL_PLAINTEXT://kafka.example:9999";
        assert_eq!(
            b.describe("advertised.listeners"),
            Described::new(
                Some(advertised.into()),
                vec![syn("advertised.listeners", advertised, StaticBroker)]
            )
        );
    }

    /// Recorded from Kafka 4.4 with `log.retention.ms=4000000` and
    /// `log.cleaner.backoff.ms=1000` in server.properties, then both set for the
    /// cluster default and for broker 0 with kafka-configs.
    #[test]
    fn every_level_that_sets_a_broker_config_is_listed_in_kafkas_order() {
        let config = Config::from_args([
            "shardlog",
            "--log-retention-ms",
            "4000000",
            "--log-cleaner-backoff-ms",
            "1000",
        ]);
        let node = map(&[("log.retention.ms", "5400000"), ("log.cleaner.backoff.ms", "3000")]);
        let cluster = map(&[("log.retention.ms", "7200000"), ("log.cleaner.backoff.ms", "2000")]);
        let b = BrokerDefaults { config: &config, node: &node, cluster: &cluster };
        assert_eq!(
            b.describe("log.retention.ms"),
            Described {
                value: Some("5400000".into()),
                source: DynamicBroker,
                synonyms: vec![
                    syn("log.retention.ms", "5400000", DynamicBroker),
                    syn("log.retention.ms", "7200000", DynamicDefaultBroker),
                    syn("log.retention.ms", "4000000", StaticBroker),
                    syn("log.retention.hours", "168", Default),
                ],
            }
        );
        assert_eq!(
            b.synonyms("log.cleaner.backoff.ms"),
            vec![
                syn("log.cleaner.backoff.ms", "3000", DynamicBroker),
                syn("log.cleaner.backoff.ms", "2000", DynamicDefaultBroker),
                syn("log.cleaner.backoff.ms", "1000", StaticBroker),
                syn("log.cleaner.backoff.ms", "15000", Default),
            ]
        );
        // The cluster default resource ("") shows only its own level.
        assert_eq!(
            b.describe_cluster_default("log.retention.ms"),
            Described {
                value: Some("7200000".into()),
                source: DynamicDefaultBroker,
                synonyms: vec![syn("log.retention.ms", "7200000", DynamicDefaultBroker)],
            }
        );
    }
}
