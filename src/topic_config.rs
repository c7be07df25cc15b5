//! Topic-level configs: which names Kafka accepts, their defaults, and the ones that
//! shardlog enforces today (`max.message.bytes`, `segment.bytes`, `segment.ms`,
//! `message.timestamp.type`, `retention.ms`, `retention.bytes`, `cleanup.policy`'s
//! `delete`); the others are validated and stored.

use std::collections::BTreeMap;

use crate::broker_config::BrokerDefaults;
use crate::config::Config;
use crate::config_meta::ConfigType::{self, Boolean, Double, Int, List, Long, String as Str};
use crate::config_meta::{Described, Source, Synonym};
use crate::log::cleaner::CompactionPolicy;
use crate::log::retention::RetentionPolicy;

/// Kafka 4.4's topic configs (`LogConfig`'s ConfigDef, what DescribeConfigs lists for a
/// topic) with their type and their default when the broker config does not override
/// them. `None` means the default comes from shardlog's own flags (see
/// [`default_value`]).
const KNOWN: &[(&str, Option<&str>, ConfigType)] = &[
    ("cleanup.policy", Some("delete"), List),
    ("compression.gzip.level", Some("-1"), Int),
    ("compression.lz4.level", Some("9"), Int),
    ("compression.type", Some("producer"), Str),
    ("compression.zstd.level", Some("3"), Int),
    ("delete.retention.ms", Some("86400000"), Long),
    ("errors.deadletterqueue.group.enable", Some("false"), Boolean),
    ("file.delete.delay.ms", Some("60000"), Long),
    ("flush.messages", Some("9223372036854775807"), Long),
    ("flush.ms", Some("9223372036854775807"), Long),
    ("follower.replication.throttled.replicas", Some(""), List),
    ("index.interval.bytes", None, Int),
    ("leader.replication.throttled.replicas", Some(""), List),
    ("local.retention.bytes", Some("-2"), Long),
    ("local.retention.ms", Some("-2"), Long),
    ("max.compaction.lag.ms", Some("9223372036854775807"), Long),
    ("max.decompressed.message.bytes", Some("2147483639"), Int),
    ("max.message.bytes", None, Int),
    ("message.timestamp.after.max.ms", Some("3600000"), Long),
    ("message.timestamp.before.max.ms", Some("9223372036854775807"), Long),
    ("message.timestamp.type", Some("CreateTime"), Str),
    ("min.cleanable.dirty.ratio", Some("0.5"), Double),
    ("min.compaction.lag.ms", Some("0"), Long),
    ("min.insync.replicas", Some("1"), Int),
    ("preallocate", Some("false"), Boolean),
    ("remote.copy.lag.bytes", Some("-1"), Long),
    ("remote.copy.lag.ms", Some("0"), Long),
    ("remote.log.copy.disable", Some("false"), Boolean),
    ("remote.log.delete.on.disable", Some("false"), Boolean),
    ("remote.storage.enable", Some("false"), Boolean),
    ("retention.bytes", None, Long),
    ("retention.ms", None, Long),
    ("segment.bytes", None, Int),
    ("segment.index.bytes", Some("10485760"), Int),
    ("segment.jitter.ms", Some("0"), Long),
    ("segment.ms", None, Long),
    ("unclean.leader.election.enable", Some("false"), Boolean),
];

/// Every topic config name Kafka knows, in sorted order.
pub fn names() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().map(|(n, _, _)| *n)
}

/// The type of topic config `name` (STRING for a name Kafka does not know).
pub fn config_type(name: &str) -> ConfigType {
    KNOWN.iter().find(|(n, _, _)| *n == name).map_or(ConfigType::String, |(_, _, t)| *t)
}

/// The value a topic gets for `name` when it sets none, and its DescribeConfigs
/// source (that of the first level of the broker config it defaults to, see
/// [`describe`]).
pub fn default_with_source(name: &str, broker: &BrokerDefaults) -> (Option<String>, Source) {
    let d = describe(name, &BTreeMap::new(), broker);
    (d.value, d.source)
}

/// Topic config `name` of a topic with `overrides`, as Kafka's
/// `ConfigHelper.createTopicConfigEntry` describes it: the value in force (the
/// override, else the broker config it defaults to: dynamic, flag or default), and as
/// synonyms the override (TOPIC_CONFIG) followed by that broker config's levels
/// ([`BrokerDefaults::synonyms`]). The source is the first synonym's, DEFAULT_CONFIG
/// when there is none (a default whose broker config has no default of its own, like
/// `retention.ms` from `log.retention.hours`, lists no synonym).
pub fn describe(
    name: &str,
    overrides: &BTreeMap<String, String>,
    broker: &BrokerDefaults,
) -> Described {
    let mut synonyms = Vec::new();
    let own = overrides.get(name);
    if let Some(v) = own {
        synonyms.push(Synonym::new(name, Some(v.clone()), Source::Topic));
    }
    let broker_name = broker_synonym(name);
    if let Some(b) = broker_name {
        synonyms.extend(broker.synonyms(b));
    }
    let value = match own {
        Some(v) => Some(v.clone()),
        None => match broker_name.and_then(|b| broker.dynamic(b)) {
            Some((v, _)) => Some(v.to_string()),
            None => default_value(name, broker.config),
        },
    };
    Described::new(value, synonyms)
}

/// The value a topic gets for `name` from the flags or Kafka's defaults (what it gets
/// when neither the topic nor a dynamic broker config sets it).
pub fn default_value(name: &str, config: &Config) -> Option<String> {
    match name {
        "max.message.bytes" => Some(config.max_message_bytes.to_string()),
        "segment.bytes" => Some(config.segment_bytes.to_string()),
        "index.interval.bytes" => Some(config.index_interval_bytes.to_string()),
        "retention.ms" => Some(config.log_retention_ms.to_string()),
        "retention.bytes" => Some(config.log_retention_bytes.to_string()),
        "segment.ms" => Some(config.log_segment_ms.to_string()),
        _ => static_default(name),
    }
}

/// The default of `name` that does not depend on the broker's flags (Kafka's
/// `LogConfig` default), if it is one of those.
pub fn static_default(name: &str) -> Option<String> {
    KNOWN.iter().find(|(n, _, _)| *n == name).and_then(|(_, v, _)| v.map(str::to_string))
}

/// The broker config a topic config defaults to (Kafka 4.4's
/// `ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS`, the one listed after the topic's
/// own value in DescribeConfigs synonyms). The replica throttles, the remote storage
/// switches and `errors.deadletterqueue.group.enable` have none.
pub fn broker_synonym(name: &str) -> Option<&'static str> {
    Some(match name {
        "cleanup.policy" => "log.cleanup.policy",
        "compression.gzip.level" => "compression.gzip.level",
        "compression.lz4.level" => "compression.lz4.level",
        "compression.type" => "compression.type",
        "compression.zstd.level" => "compression.zstd.level",
        "delete.retention.ms" => "log.cleaner.delete.retention.ms",
        "file.delete.delay.ms" => "log.segment.delete.delay.ms",
        "flush.messages" => "log.flush.interval.messages",
        "flush.ms" => "log.flush.interval.ms",
        "index.interval.bytes" => "log.index.interval.bytes",
        "local.retention.bytes" => "log.local.retention.bytes",
        "local.retention.ms" => "log.local.retention.ms",
        "max.compaction.lag.ms" => "log.cleaner.max.compaction.lag.ms",
        "max.decompressed.message.bytes" => "max.decompressed.message.bytes",
        "max.message.bytes" => "message.max.bytes",
        "message.timestamp.after.max.ms" => "log.message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms" => "log.message.timestamp.before.max.ms",
        "message.timestamp.type" => "log.message.timestamp.type",
        "min.cleanable.dirty.ratio" => "log.cleaner.min.cleanable.ratio",
        "min.compaction.lag.ms" => "log.cleaner.min.compaction.lag.ms",
        "min.insync.replicas" => "min.insync.replicas",
        "preallocate" => "log.preallocate",
        "remote.copy.lag.bytes" => "log.remote.copy.lag.bytes",
        "remote.copy.lag.ms" => "log.remote.copy.lag.ms",
        "retention.bytes" => "log.retention.bytes",
        "retention.ms" => "log.retention.ms",
        "segment.bytes" => "log.segment.bytes",
        "segment.index.bytes" => "log.index.size.max.bytes",
        "segment.jitter.ms" => "log.roll.jitter.ms",
        "segment.ms" => "log.roll.ms",
        "unclean.leader.election.enable" => "unclean.leader.election.enable",
        _ => return None,
    })
}

/// Validates one topic config entry; a failure maps to INVALID_CONFIG with the
/// returned message (as Kafka's `LogConfig.validate`).
pub fn validate(name: &str, value: Option<&str>) -> Result<(), String> {
    if !KNOWN.iter().any(|(n, _, _)| *n == name) {
        return Err(format!("Unknown topic config name: {name}"));
    }
    let Some(raw) = value else {
        return Err(format!("Null value not supported for topic config: {name}"));
    };
    // Kafka's ConfigDef trims values before parsing them.
    let value = raw.trim();
    let bad = || format!("Invalid value {raw} for configuration {name}");
    let int_at_least =
        |min: i32| value.parse::<i32>().ok().filter(|v| *v >= min).map(|_| ()).ok_or_else(bad);
    let long_at_least =
        |min: i64| value.parse::<i64>().ok().filter(|v| *v >= min).map(|_| ()).ok_or_else(bad);
    match name {
        "max.message.bytes" | "index.interval.bytes" => int_at_least(0),
        "min.insync.replicas" => int_at_least(1),
        "segment.index.bytes" => int_at_least(4),
        "segment.bytes" => int_at_least(1 << 20),
        // No lower bound in Kafka: any negative value means no limit.
        "retention.bytes" => long_at_least(i64::MIN),
        "retention.ms" => long_at_least(-1),
        "segment.ms" | "flush.messages" | "max.compaction.lag.ms" => long_at_least(1),
        "local.retention.ms" | "local.retention.bytes" => long_at_least(-2),
        "remote.copy.lag.ms" | "remote.copy.lag.bytes" => long_at_least(-1),
        "max.decompressed.message.bytes" => value
            .parse::<i32>()
            .ok()
            .filter(|v| (1..=2_147_483_639).contains(v))
            .map(|_| ())
            .ok_or_else(bad),
        "compression.gzip.level" => match value.parse::<i32>() {
            Ok(v) if v == -1 || (1..=9).contains(&v) => Ok(()),
            _ => Err(bad()),
        },
        "compression.lz4.level" => {
            value.parse::<i32>().ok().filter(|v| (1..=17).contains(v)).map(|_| ()).ok_or_else(bad)
        }
        "compression.zstd.level" => value
            .parse::<i32>()
            .ok()
            .filter(|v| (-131072..=22).contains(v))
            .map(|_| ())
            .ok_or_else(bad),
        "message.timestamp.type" => match value {
            "CreateTime" | "LogAppendTime" => Ok(()),
            _ => Err(bad()),
        },
        // A list: each item delete or compact; the empty list is allowed, as in Kafka 4.x.
        "cleanup.policy" => {
            if value
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .all(|p| p == "delete" || p == "compact")
            {
                Ok(())
            } else {
                Err(bad())
            }
        }
        "compression.type" => match value {
            "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd" => Ok(()),
            _ => Err(bad()),
        },
        // Booleans, case-insensitive like Kafka's ConfigDef.
        "preallocate"
        | "unclean.leader.election.enable"
        | "errors.deadletterqueue.group.enable"
        | "remote.log.copy.disable"
        | "remote.log.delete.on.disable"
        | "remote.storage.enable" => {
            if value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("false") {
                Ok(())
            } else {
                Err(bad())
            }
        }
        // "*", or "partition:broker" pairs (a replica list) separated by commas.
        "leader.replication.throttled.replicas" | "follower.replication.throttled.replicas" => {
            let pair = |p: &str| {
                p.split_once(':').is_some_and(|(a, b)| {
                    a.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                })
            };
            let v = value.trim();
            if v.is_empty() || v == "*" || v.split(',').all(pair) {
                Ok(())
            } else {
                Err(bad())
            }
        }
        "min.cleanable.dirty.ratio" => value
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v))
            .map(|_| ())
            .ok_or_else(bad),
        _ => value.parse::<i64>().ok().filter(|v| *v >= 0).map(|_| ()).ok_or_else(bad),
    }
}

/// The configs a partition's log obeys, resolved from the topic's overrides and
/// the broker defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveTopicConfig {
    /// Largest record batch accepted, bytes (MESSAGE_TOO_LARGE above it).
    pub max_message_bytes: i32,
    /// Segment roll size, bytes.
    pub segment_bytes: u64,
    /// Sparse index interval, bytes.
    pub index_interval_bytes: u64,
    /// `message.timestamp.type=LogAppendTime`.
    pub log_append_time: bool,
    /// `segment.ms`: roll the active segment once it is this old, ms.
    pub segment_ms: i64,
    /// `retention.ms`, `retention.bytes` and whether `cleanup.policy` includes `delete`.
    pub retention: RetentionPolicy,
    /// `compression.type` as the codec id batches are stored with (0 none, 1 gzip,
    /// 2 snappy, 3 lz4, 4 zstd); None for `producer` (stored as produced).
    pub compression: Option<u8>,
    /// When `cleanup.policy` includes `compact`: `min.cleanable.dirty.ratio`,
    /// `min.compaction.lag.ms`, `max.compaction.lag.ms`, `delete.retention.ms`.
    pub compaction: Option<CompactionPolicy>,
}

impl EffectiveTopicConfig {
    /// Resolves `overrides` (already validated) over the broker defaults: dynamic
    /// broker configs, then the flags.
    pub fn resolve(overrides: &BTreeMap<String, String>, broker: &BrokerDefaults) -> Self {
        let config = broker.config;
        let get = |k: &str| {
            overrides.get(k).map(|v| v.trim()).or_else(|| {
                broker_synonym(k).and_then(|b| broker.dynamic(b)).map(|(v, _)| v.trim())
            })
        };
        let mut resolved = EffectiveTopicConfig {
            max_message_bytes: get("max.message.bytes")
                .and_then(|v| v.parse().ok())
                .unwrap_or(config.max_message_bytes),
            segment_bytes: get("segment.bytes")
                .and_then(|v| v.parse().ok())
                .unwrap_or(config.segment_bytes),
            index_interval_bytes: get("index.interval.bytes")
                .and_then(|v| v.parse().ok())
                .unwrap_or(config.index_interval_bytes),
            log_append_time: get("message.timestamp.type") == Some("LogAppendTime"),
            segment_ms: get("segment.ms")
                .and_then(|v| v.parse().ok())
                .unwrap_or(config.log_segment_ms),
            retention: RetentionPolicy {
                retention_ms: get("retention.ms")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(config.log_retention_ms),
                retention_bytes: get("retention.bytes")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(config.log_retention_bytes),
                delete: get("cleanup.policy")
                    .is_none_or(|v| v.split(',').any(|p| p.trim() == "delete")),
            },
            compression: match get("compression.type") {
                Some("uncompressed") => Some(0),
                Some("gzip") => Some(1),
                Some("snappy") => Some(2),
                Some("lz4") => Some(3),
                Some("zstd") => Some(4),
                _ => None,
            },
            compaction: get("cleanup.policy")
                .is_some_and(|v| v.split(',').any(|p| p.trim() == "compact"))
                .then(|| {
                    let d = CompactionPolicy::default();
                    CompactionPolicy {
                        min_cleanable_dirty_ratio: get("min.cleanable.dirty.ratio")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(d.min_cleanable_dirty_ratio),
                        min_compaction_lag_ms: get("min.compaction.lag.ms")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(d.min_compaction_lag_ms),
                        max_compaction_lag_ms: get("max.compaction.lag.ms")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(d.max_compaction_lag_ms),
                        delete_retention_ms: get("delete.retention.ms")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(d.delete_retention_ms),
                    }
                }),
        };
        // Kafka rolls a compacted topic's active segment by `max.compaction.lag.ms` too
        // (`LogConfig.maxSegmentMs`), so its records become cleanable in time.
        if let Some(c) = &resolved.compaction {
            resolved.segment_ms = resolved.segment_ms.min(c.max_compaction_lag_ms);
        }
        resolved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_and_bad_values_are_rejected() {
        assert!(validate("no.such.config", Some("1")).is_err());
        assert!(validate("retention.ms", Some("abc")).is_err());
        assert!(validate("message.timestamp.type", Some("Now")).is_err());
        assert_eq!(validate("retention.ms", Some("-1")), Ok(()));
        assert_eq!(validate("cleanup.policy", Some("compact,delete")), Ok(()));
    }

    #[test]
    fn bounds_names_and_parsing_follow_kafka_4() {
        // Lower bounds of LogConfig's validators.
        for (name, min) in [
            ("min.insync.replicas", 1),
            ("flush.messages", 1),
            ("max.compaction.lag.ms", 1),
            ("segment.index.bytes", 4),
            ("segment.ms", 1),
        ] {
            assert!(validate(name, Some(&(min - 1).to_string())).is_err(), "{name}");
            assert_eq!(validate(name, Some(&min.to_string())), Ok(()), "{name}");
        }
        assert_eq!(validate("retention.bytes", Some("-2")), Ok(()));
        // Trimmed, case-insensitive booleans, the empty cleanup policy.
        assert_eq!(validate("retention.ms", Some(" 1000 ")), Ok(()));
        assert_eq!(validate("preallocate", Some("TRUE")), Ok(()));
        assert_eq!(validate("cleanup.policy", Some("")), Ok(()));
        // Gone in 4.0, and new since 3.8.
        assert!(validate("message.downconversion.enable", Some("true")).is_err());
        assert!(validate("message.timestamp.difference.max.ms", Some("1")).is_err());
        assert_eq!(validate("compression.gzip.level", Some("5")), Ok(()));
        assert!(validate("compression.gzip.level", Some("0")).is_err());
        assert_eq!(validate("remote.log.copy.disable", Some("false")), Ok(()));
    }

    #[test]
    fn overrides_win_over_broker_defaults() {
        use clap::Parser;
        let config = Config::parse_from(["shardlog"]);
        let mut o = BTreeMap::new();
        o.insert("max.message.bytes".to_string(), "2048".to_string());
        o.insert("message.timestamp.type".to_string(), "LogAppendTime".to_string());
        let e = EffectiveTopicConfig::resolve(&o, &BrokerDefaults::flags(&config));
        assert_eq!(e.max_message_bytes, 2048);
        assert_eq!(e.segment_bytes, 1 << 30);
        assert!(e.log_append_time);
    }

    #[test]
    fn dynamic_broker_configs_sit_between_topic_overrides_and_flags() {
        use clap::Parser;
        let config = Config::parse_from(["shardlog"]);
        let map = |e: &[(&str, &str)]| -> BTreeMap<String, String> {
            e.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let node = map(&[("log.retention.ms", "1000")]);
        let cluster = map(&[
            ("log.retention.ms", "2000"),
            ("log.segment.bytes", "4096"),
            ("log.cleanup.policy", "compact"),
        ]);
        let broker = BrokerDefaults { config: &config, node: &node, cluster: &cluster };
        let e = EffectiveTopicConfig::resolve(&BTreeMap::new(), &broker);
        assert_eq!((e.retention.retention_ms, e.segment_bytes), (1000, 4096));
        assert!(e.compaction.is_some() && !e.retention.delete);
        let o = map(&[("retention.ms", "5"), ("cleanup.policy", "delete")]);
        let e = EffectiveTopicConfig::resolve(&o, &broker);
        assert_eq!(e.retention.retention_ms, 5);
        assert!(e.compaction.is_none() && e.retention.delete);
        let dynamic = |v: &str, s| (Some(v.to_string()), s);
        assert_eq!(
            default_with_source("retention.ms", &broker),
            dynamic("1000", Source::DynamicBroker)
        );
        assert_eq!(
            default_with_source("segment.bytes", &broker),
            dynamic("4096", Source::DynamicDefaultBroker)
        );
        assert_eq!(
            default_with_source("segment.ms", &broker),
            dynamic("604800000", Source::Default)
        );
    }

    #[test]
    fn a_compacted_topic_rolls_by_max_compaction_lag_ms() {
        use clap::Parser;
        let config = Config::parse_from(["shardlog"]);
        let broker = BrokerDefaults::flags(&config);
        let map = |e: &[(&str, &str)]| -> BTreeMap<String, String> {
            e.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let lag = map(&[("cleanup.policy", "compact"), ("max.compaction.lag.ms", "2000")]);
        assert_eq!(EffectiveTopicConfig::resolve(&lag, &broker).segment_ms, 2000);
        let deleted = map(&[("max.compaction.lag.ms", "2000")]);
        assert_eq!(EffectiveTopicConfig::resolve(&deleted, &broker).segment_ms, 604_800_000);
    }

    #[test]
    fn the_topic_configs_are_kafka_4_4s_with_its_types() {
        let names: Vec<&str> = names().collect();
        assert_eq!(names.len(), 37);
        for n in [
            "errors.deadletterqueue.group.enable",
            "max.decompressed.message.bytes",
            "remote.copy.lag.bytes",
            "remote.copy.lag.ms",
        ] {
            assert!(names.contains(&n), "{n}");
        }
        assert!(!names.contains(&"internal.segment.bytes"));
        assert_eq!(config_type("cleanup.policy"), ConfigType::List);
        assert_eq!(config_type("min.cleanable.dirty.ratio"), ConfigType::Double);
        assert_eq!(config_type("segment.bytes"), ConfigType::Int);
        assert_eq!(config_type("retention.ms"), ConfigType::Long);
        assert_eq!(config_type("errors.deadletterqueue.group.enable"), ConfigType::Boolean);
        assert_eq!(validate("flush.ms", Some("0")), Ok(()));
        assert_eq!(validate("remote.copy.lag.ms", Some("-1")), Ok(()));
        assert!(validate("remote.copy.lag.ms", Some("-2")).is_err());
        assert!(validate("max.decompressed.message.bytes", Some("0")).is_err());
        assert!(validate("max.decompressed.message.bytes", Some("2147483640")).is_err());
    }

    /// Recorded from Kafka 4.4: a topic created with `retention.ms=3600000` and
    /// `max.message.bytes=200000` on a broker that sets neither.
    #[test]
    fn an_override_is_topic_config_followed_by_its_broker_configs_levels() {
        use clap::Parser;
        let config = Config::parse_from(["shardlog"]);
        let broker = BrokerDefaults::flags(&config);
        let o: BTreeMap<String, String> =
            [("retention.ms", "3600000"), ("max.message.bytes", "200000")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into();
        let syn = |n: &str, v: &str, s| Synonym::new(n, Some(v.to_string()), s);
        // log.retention.ms is unset and has no default: only the override is listed.
        assert_eq!(
            describe("retention.ms", &o, &broker),
            Described {
                value: Some("3600000".into()),
                source: Source::Topic,
                synonyms: vec![syn("retention.ms", "3600000", Source::Topic)],
            }
        );
        assert_eq!(
            describe("max.message.bytes", &o, &broker).synonyms,
            vec![
                syn("max.message.bytes", "200000", Source::Topic),
                syn("message.max.bytes", "1048588", Source::Default),
            ]
        );
        let none = BTreeMap::new();
        for (name, value) in [("retention.ms", "604800000"), ("segment.ms", "604800000")] {
            assert_eq!(describe(name, &none, &broker), Described::new(Some(value.into()), vec![]));
        }
        assert_eq!(
            describe("remote.storage.enable", &none, &broker),
            Described::new(Some("false".into()), vec![])
        );
    }

    /// Recorded from Kafka 4.4 with `log.roll.ms=100000000` in server.properties.
    #[test]
    fn a_default_from_a_given_flag_is_static_broker_config() {
        let config = Config::from_args(["shardlog", "--log-segment-ms", "100000000"]);
        let broker = BrokerDefaults::flags(&config);
        let syn = |n: &str, v: &str, s| Synonym::new(n, Some(v.to_string()), s);
        assert_eq!(
            describe("segment.ms", &BTreeMap::new(), &broker),
            Described {
                value: Some("100000000".into()),
                source: Source::StaticBroker,
                synonyms: vec![
                    syn("log.roll.ms", "100000000", Source::StaticBroker),
                    syn("log.roll.hours", "168", Source::Default),
                ],
            }
        );
        assert_eq!(
            default_with_source("segment.ms", &broker),
            (Some("100000000".into()), Source::StaticBroker)
        );
        assert_eq!(default_with_source("segment.bytes", &broker).1, Source::Default);
    }
}
