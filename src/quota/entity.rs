//! Client quota entities and the stored quotas (KIP-546's `ClientQuotaEntity`, Kafka's
//! `ClientQuotaControlManager.clientQuotaData`).
//!
//! An entity names who a quota applies to: a user, a client id, both, or an IP; each
//! component is either a name or the *default* (a null name on the wire, `<default>`
//! in `kafka-configs.sh`). The store maps each entity to its quota values by key
//! (`producer_byte_rate`, ...). It lives in the catalog ([`crate::metadata::Catalog`])
//! and is persisted there as a list of `{entity, values}` records:
//!
//! | field | JSON | meaning |
//! | --- | --- | --- |
//! | `entity.user` | absent, `"Default"` or `{"Name": "alice"}` | the user component |
//! | `entity.client_id` | same | the client-id component |
//! | `entity.ip` | same | the ip component |
//! | `values` | `{"producer_byte_rate": 262144.0, ...}` | quota key -> value (f64) |

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Kafka's entity type names (`ClientQuotaEntity.USER`, `CLIENT_ID`, `IP`).
pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

/// One component's name: a specific name, or the default entity (null on the wire).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EntityName {
    Default,
    Name(String),
}

impl EntityName {
    /// From the wire: `None` is the default entity.
    pub fn from_wire(name: Option<&str>) -> EntityName {
        match name {
            None => EntityName::Default,
            Some(n) => EntityName::Name(n.to_string()),
        }
    }

    /// To the wire: the default entity is `None`.
    pub fn as_wire(&self) -> Option<&str> {
        match self {
            EntityName::Default => None,
            EntityName::Name(n) => Some(n),
        }
    }
}

/// A validated quota entity: user and/or client id, or ip alone
/// ([`super::alter::validate_entity`] enforces the combinations).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QuotaEntity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<EntityName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<EntityName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<EntityName>,
}

impl QuotaEntity {
    /// The entity of `user` (a name or the default) alone.
    pub fn user(name: EntityName) -> Self {
        QuotaEntity { user: Some(name), ..Default::default() }
    }

    /// The entity of `client_id` alone.
    pub fn client(name: EntityName) -> Self {
        QuotaEntity { client_id: Some(name), ..Default::default() }
    }

    /// The entity of a user and a client id.
    pub fn user_client(user: EntityName, client: EntityName) -> Self {
        QuotaEntity { user: Some(user), client_id: Some(client), ip: None }
    }

    /// The entity's components as (type, name) in the order user, client-id, ip.
    pub fn components(&self) -> impl Iterator<Item = (&'static str, &EntityName)> {
        [(USER, &self.user), (CLIENT_ID, &self.client_id), (IP, &self.ip)]
            .into_iter()
            .filter_map(|(t, n)| n.as_ref().map(|n| (t, n)))
    }

    /// The component of `entity_type`, if the entity has one.
    pub fn component(&self, entity_type: &str) -> Option<&EntityName> {
        match entity_type {
            USER => self.user.as_ref(),
            CLIENT_ID => self.client_id.as_ref(),
            IP => self.ip.as_ref(),
            _ => None,
        }
    }
}

/// Kafka's `ClientQuotaEntity.toString` (`ClientQuotaEntity(entries={user=alice})`),
/// used in error messages; components in the order user, client-id, ip.
impl fmt::Display for QuotaEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientQuotaEntity(entries={{")?;
        for (i, (t, n)) in self.components().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{t}={}", n.as_wire().unwrap_or("null"))?;
        }
        write!(f, "}})")
    }
}

/// A quota value: a finite number above 0 ([`super::alter`] refuses others), compared
/// bit for bit so that the catalog stays `Eq`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QuotaValue(pub f64);

impl PartialEq for QuotaValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for QuotaValue {}

/// One stored entity with its values (the persisted form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaRecord {
    pub entity: QuotaEntity,
    pub values: BTreeMap<String, QuotaValue>,
}

/// Every stored client quota: entity -> key -> value. An entity with no value left is
/// removed. Part of the catalog, so every shard holds a read-only copy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<QuotaRecord>", into = "Vec<QuotaRecord>")]
pub struct ClientQuotas(BTreeMap<QuotaEntity, BTreeMap<String, QuotaValue>>);

impl From<Vec<QuotaRecord>> for ClientQuotas {
    fn from(records: Vec<QuotaRecord>) -> Self {
        ClientQuotas(
            records
                .into_iter()
                .filter(|r| !r.values.is_empty())
                .map(|r| (r.entity, r.values))
                .collect(),
        )
    }
}

impl From<ClientQuotas> for Vec<QuotaRecord> {
    fn from(q: ClientQuotas) -> Self {
        q.0.into_iter().map(|(entity, values)| QuotaRecord { entity, values }).collect()
    }
}

impl ClientQuotas {
    /// No quota at all: the data path skips quota accounting (one check per request).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key` for exactly `entity`.
    pub fn get(&self, entity: &QuotaEntity, key: &str) -> Option<f64> {
        self.0.get(entity).and_then(|v| v.get(key)).map(|v| v.0)
    }

    /// Every value of exactly `entity`.
    pub fn values(&self, entity: &QuotaEntity) -> Option<&BTreeMap<String, QuotaValue>> {
        self.0.get(entity)
    }

    /// Sets `key` of `entity` to `value`.
    pub fn set(&mut self, entity: &QuotaEntity, key: &str, value: f64) {
        self.0.entry(entity.clone()).or_default().insert(key.to_string(), QuotaValue(value));
    }

    /// Removes `key` of `entity` (the entity goes when it has no value left).
    pub fn remove(&mut self, entity: &QuotaEntity, key: &str) {
        if let Some(values) = self.0.get_mut(entity) {
            values.remove(key);
            if values.is_empty() {
                self.0.remove(entity);
            }
        }
    }

    /// Every entity with its values, in the entities' order.
    pub fn iter(&self) -> impl Iterator<Item = (&QuotaEntity, &BTreeMap<String, QuotaValue>)> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> EntityName {
        EntityName::Name(n.to_string())
    }

    #[test]
    fn entity_displays_as_kafka_client_quota_entity() {
        let e = QuotaEntity::user_client(name("alice"), EntityName::Default);
        assert_eq!(e.to_string(), "ClientQuotaEntity(entries={user=alice, client-id=null})");
        assert_eq!(QuotaEntity::default().to_string(), "ClientQuotaEntity(entries={})");
    }

    #[test]
    fn removing_the_last_value_removes_the_entity() {
        let mut q = ClientQuotas::default();
        let e = QuotaEntity::user(name("alice"));
        q.set(&e, "producer_byte_rate", 1024.0);
        q.set(&e, "consumer_byte_rate", 2048.0);
        q.remove(&e, "producer_byte_rate");
        assert_eq!(q.get(&e, "consumer_byte_rate"), Some(2048.0));
        q.remove(&e, "consumer_byte_rate");
        assert!(q.is_empty());
    }

    #[test]
    fn store_round_trips_through_json() {
        let mut q = ClientQuotas::default();
        q.set(&QuotaEntity::user(EntityName::Default), "producer_byte_rate", 1024.0);
        q.set(&QuotaEntity::client(name("c1")), "request_percentage", 12.5);
        let json = serde_json::to_string(&q).unwrap();
        assert_eq!(
            json,
            r#"[{"entity":{"client_id":{"Name":"c1"}},"values":{"request_percentage":12.5}},{"entity":{"user":"Default"},"values":{"producer_byte_rate":1024.0}}]"#
        );
        let back: ClientQuotas = serde_json::from_str(&json).unwrap();
        assert_eq!(back, q);
    }
}
