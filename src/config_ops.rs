//! What AlterConfigs (key 33: replace the whole set) and IncrementalAlterConfigs (key
//! 44, KIP-339: SET, DELETE, APPEND, SUBTRACT) do to a topic's config overrides, as
//! Kafka's `ConfigAdminManager` and `LogConfig.validate` decide: a pure function from
//! the overrides in force and the request to the new overrides, or the error the
//! resource gets. The control shard applies it to the authoritative catalog
//! (`shard::control`), so concurrent changes never lose each other's updates.

use std::collections::{BTreeMap, HashSet};

use crate::metadata::CatalogError;
use crate::topic_config;

/// One IncrementalAlterConfigs operation (wire `config_operation`: 0 SET, 1 DELETE,
/// 2 APPEND, 3 SUBTRACT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpType {
    Set,
    Delete,
    Append,
    Subtract,
}

impl OpType {
    /// The operation of a wire code; None for an unknown one (INVALID_REQUEST).
    pub fn from_code(code: i8) -> Option<OpType> {
        match code {
            0 => Some(OpType::Set),
            1 => Some(OpType::Delete),
            2 => Some(OpType::Append),
            3 => Some(OpType::Subtract),
            _ => None,
        }
    }
}

/// A change to one topic's overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigChange {
    /// IncrementalAlterConfigs: `(name, operation, value)` in request order.
    Incremental(Vec<(String, OpType, Option<String>)>),
    /// AlterConfigs: the new complete set of overrides, `(name, value)`.
    Replace(Vec<(String, Option<String>)>),
}

/// Topic configs of Kafka's LIST type, the only ones APPEND and SUBTRACT apply to.
const LIST_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
];

/// The overrides `current` becomes under `change`. Errors, as Kafka gives them:
/// INVALID_REQUEST for a name given twice or a null value outside DELETE;
/// INVALID_CONFIG for an unknown name, APPEND/SUBTRACT on a config that is not a list,
/// or a value `topic_config::validate` refuses (checked on the result, so a DELETE
/// never fails on a bad value it removes).
pub fn apply(
    current: &BTreeMap<String, String>,
    change: &ConfigChange,
) -> Result<BTreeMap<String, String>, CatalogError> {
    apply_to(&TOPIC, current, change)
}

/// What a kind of resource accepts: its config names, their validation, defaults and
/// list configs.
pub struct Schema {
    /// Whether a name is known (IncrementalAlterConfigs refuses others up front).
    pub known: fn(&str) -> bool,
    /// Checks one final value (Kafka error for the whole resource if it fails).
    pub validate: fn(&str, Option<&str>) -> Result<(), CatalogError>,
    /// The value APPEND / SUBTRACT start from when nothing is set.
    pub default: fn(&str) -> Option<String>,
    /// Whether APPEND / SUBTRACT apply.
    pub is_list: fn(&str) -> bool,
    /// "topic" or "broker", for messages.
    pub kind: &'static str,
}

/// Topic configs.
pub const TOPIC: Schema = Schema {
    known: |n| topic_config::names().any(|k| k == n),
    validate: |n, v| topic_config::validate(n, v).map_err(CatalogError::InvalidConfig),
    default: topic_config::static_default,
    is_list: |n| LIST_CONFIGS.contains(&n),
    kind: "topic",
};

/// Dynamic broker configs ([`crate::broker_config`]).
pub const BROKER: Schema = Schema {
    known: |n| crate::broker_config::is_dynamic(n) || crate::broker_config::is_read_only(n),
    validate: crate::broker_config::validate,
    default: |n| crate::broker_config::topic_synonym(n).and_then(topic_config::static_default),
    is_list: crate::broker_config::is_list,
    kind: "broker",
};

/// [`apply`] for the resource kind `schema` describes.
pub fn apply_to(
    schema: &Schema,
    current: &BTreeMap<String, String>,
    change: &ConfigChange,
) -> Result<BTreeMap<String, String>, CatalogError> {
    let names: Vec<&str> = match change {
        ConfigChange::Incremental(ops) => ops.iter().map(|(n, _, _)| n.as_str()).collect(),
        ConfigChange::Replace(entries) => entries.iter().map(|(n, _)| n.as_str()).collect(),
    };
    let mut seen = HashSet::new();
    if !names.iter().all(|n| seen.insert(*n)) {
        return Err(CatalogError::InvalidRequest("Error due to duplicate config keys".into()));
    }
    let null =
        |name: &str| CatalogError::InvalidRequest(format!("Null value not supported for : {name}"));
    let mut next = match change {
        ConfigChange::Replace(_) => BTreeMap::new(),
        ConfigChange::Incremental(_) => current.clone(),
    };
    match change {
        ConfigChange::Replace(entries) => {
            for (name, value) in entries {
                let value = value.as_ref().ok_or_else(|| null(name))?;
                next.insert(name.clone(), value.clone());
            }
        }
        ConfigChange::Incremental(ops) => {
            for (name, op, value) in ops {
                if !(schema.known)(name) {
                    return Err(CatalogError::InvalidConfig(format!(
                        "Unknown {} config name: {name}",
                        schema.kind
                    )));
                }
                if *op == OpType::Delete {
                    next.remove(name);
                    continue;
                }
                let value = value.as_ref().ok_or_else(|| null(name))?;
                if *op == OpType::Set {
                    next.insert(name.clone(), value.clone());
                    continue;
                }
                if !(schema.is_list)(name) {
                    let verb = if *op == OpType::Append { "append" } else { "subtract" };
                    return Err(CatalogError::InvalidConfig(format!(
                        "Config value {verb} is not allowed for config key: {name}"
                    )));
                }
                // The list in force: the override, else the default.
                let old =
                    next.get(name).cloned().or_else(|| (schema.default)(name)).unwrap_or_default();
                let mut list: Vec<String> = split(&old);
                if *op == OpType::Append {
                    for v in split(value) {
                        if !list.contains(&v) {
                            list.push(v);
                        }
                    }
                } else {
                    let gone = split(value);
                    list.retain(|v| !gone.contains(v));
                }
                next.insert(name.clone(), list.join(","));
            }
        }
    }
    for (name, value) in &next {
        (schema.validate)(name, Some(value))?;
    }
    Ok(next)
}

/// The items of a list config value (trimmed, empty ones dropped).
fn split(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn inc(ops: &[(&str, OpType, Option<&str>)]) -> ConfigChange {
        ConfigChange::Incremental(
            ops.iter().map(|(n, o, v)| (n.to_string(), *o, v.map(str::to_string))).collect(),
        )
    }

    fn code(r: Result<BTreeMap<String, String>, CatalogError>) -> i16 {
        r.unwrap_err().error().code()
    }

    #[test]
    fn set_and_delete_change_only_the_named_configs() {
        let cur = map(&[("retention.ms", "3600000"), ("max.message.bytes", "2000")]);
        let next = apply(
            &cur,
            &inc(&[
                ("retention.ms", OpType::Set, Some("7200000")),
                ("max.message.bytes", OpType::Delete, None),
                ("segment.ms", OpType::Delete, None),
            ]),
        )
        .unwrap();
        assert_eq!(next, map(&[("retention.ms", "7200000")]));
    }

    #[test]
    fn append_and_subtract_work_on_lists_from_their_default() {
        let next =
            apply(&map(&[]), &inc(&[("cleanup.policy", OpType::Append, Some("compact"))])).unwrap();
        assert_eq!(next, map(&[("cleanup.policy", "delete,compact")]));
        let next =
            apply(&next, &inc(&[("cleanup.policy", OpType::Append, Some("compact,delete"))]))
                .unwrap();
        assert_eq!(next, map(&[("cleanup.policy", "delete,compact")]));
        let next =
            apply(&next, &inc(&[("cleanup.policy", OpType::Subtract, Some("delete"))])).unwrap();
        assert_eq!(next, map(&[("cleanup.policy", "compact")]));
        let throttled = "leader.replication.throttled.replicas";
        let next = apply(&map(&[]), &inc(&[(throttled, OpType::Append, Some("0:0,1:0"))])).unwrap();
        assert_eq!(next, map(&[(throttled, "0:0,1:0")]));
    }

    #[test]
    fn errors_are_kafkas() {
        let none = map(&[]);
        // INVALID_REQUEST (42): duplicate names, a null value outside DELETE.
        let dup = inc(&[
            ("retention.ms", OpType::Set, Some("1")),
            ("retention.ms", OpType::Delete, None),
        ]);
        assert_eq!(code(apply(&none, &dup)), 42);
        assert_eq!(code(apply(&none, &inc(&[("retention.ms", OpType::Set, None)]))), 42);
        assert_eq!(
            code(apply(&none, &ConfigChange::Replace(vec![("retention.ms".into(), None)]))),
            42
        );
        // INVALID_CONFIG (40): unknown names, bad values, APPEND on a non-list.
        assert_eq!(code(apply(&none, &inc(&[("retention.hours", OpType::Delete, None)]))), 40);
        assert_eq!(code(apply(&none, &inc(&[("segment.bytes", OpType::Set, Some("100"))]))), 40);
        assert_eq!(code(apply(&none, &inc(&[("retention.ms", OpType::Append, Some("5"))]))), 40);
        assert_eq!(code(apply(&none, &inc(&[("cleanup.policy", OpType::Append, Some("x"))]))), 40);
        let replace = ConfigChange::Replace(vec![("nope".into(), Some("1".into()))]);
        assert_eq!(code(apply(&none, &replace)), 40);
    }

    #[test]
    fn replace_drops_every_override_it_does_not_name() {
        let cur = map(&[("retention.ms", "3600000"), ("max.message.bytes", "2000")]);
        let change = ConfigChange::Replace(vec![("segment.ms".into(), Some("60000".into()))]);
        assert_eq!(apply(&cur, &change).unwrap(), map(&[("segment.ms", "60000")]));
    }
}
