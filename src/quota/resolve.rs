//! Which quota applies to a request, and which rate it is measured in (Kafka's
//! `DefaultQuotaCallback.quotaMetricTags` and `quotaLimit`, KIP-55).
//!
//! For one quota type, the most specific entity that has a value for its key wins, in
//! this order (U the principal's name, C the client id):
//!
//! 1. `/users/U/clients/C`, 2. `/users/U/clients/<default>`, 3. `/users/U`,
//! 4. `/users/<default>/clients/C`, 5. `/users/<default>/clients/<default>`,
//! 6. `/users/<default>`, 7. `/clients/C`, 8. `/clients/<default>`.
//!
//! The rate is kept per *metric entity*, Kafka's metric tags (user, client-id): `(U, C)`
//! for 1, 2, 4, 5; `(U, "")` for 3, 6; `("", C)` otherwise. So every user under a
//! default user quota has a rate of its own, and all the client ids of a user with a
//! user quota share one.

use super::alter::{CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE};
use super::entity::{ClientQuotas, EntityName, QuotaEntity};

/// The quotas shardlog enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaType {
    /// `producer_byte_rate`: bytes of Produce requests per second.
    Produce = 0,
    /// `consumer_byte_rate`: bytes of Fetch responses per second.
    Fetch = 1,
    /// `request_percentage`: percent of the shard's time per second (KIP-124).
    Request = 2,
}

impl QuotaType {
    /// Every enforced quota type, in index order.
    pub const ALL: [QuotaType; 3] = [QuotaType::Produce, QuotaType::Fetch, QuotaType::Request];

    /// The quota key holding this type's limit.
    pub fn key(self) -> &'static str {
        match self {
            QuotaType::Produce => PRODUCER_BYTE_RATE,
            QuotaType::Fetch => CONSUMER_BYTE_RATE,
            QuotaType::Request => REQUEST_PERCENTAGE,
        }
    }

    /// The `type` label of the quota metrics (Kafka's `QuotaType` names).
    pub fn name(self) -> &'static str {
        match self {
            QuotaType::Produce => "produce",
            QuotaType::Fetch => "fetch",
            QuotaType::Request => "request",
        }
    }
}

/// The rate a request is counted in: Kafka's metric tags (user, client-id), either
/// possibly empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetricEntity {
    pub user: String,
    pub client_id: String,
}

/// The quota that applies to a client and the rate it is measured in.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub metric: MetricEntity,
    /// The limit, in the quota type's unit (bytes/s or percent).
    pub limit: f64,
}

/// The quota of type `t` for user `user` (the principal's name) and `client_id`;
/// `None` when no entity has one (unlimited).
pub fn resolve(
    quotas: &ClientQuotas,
    t: QuotaType,
    user: &str,
    client_id: &str,
) -> Option<Resolved> {
    let key = t.key();
    let u = || EntityName::Name(user.to_string());
    let c = || EntityName::Name(client_id.to_string());
    let has = |e: QuotaEntity| quotas.get(&e, key).is_some();
    let (tag_user, tag_client) = if has(QuotaEntity::user_client(u(), c()))
        || has(QuotaEntity::user_client(u(), EntityName::Default))
    {
        (true, true)
    } else if has(QuotaEntity::user(u())) {
        (true, false)
    } else if has(QuotaEntity::user_client(EntityName::Default, c()))
        || has(QuotaEntity::user_client(EntityName::Default, EntityName::Default))
    {
        (true, true)
    } else if has(QuotaEntity::user(EntityName::Default)) {
        (true, false)
    } else {
        (false, true)
    };
    let metric = MetricEntity {
        user: if tag_user { user.to_string() } else { String::new() },
        client_id: if tag_client { client_id.to_string() } else { String::new() },
    };
    let limit = limit_for(quotas, key, &metric)?;
    Some(Resolved { metric, limit })
}

/// Kafka's `DefaultQuotaCallback.quotaLimit`: the quota of a metric entity.
fn limit_for(quotas: &ClientQuotas, key: &str, m: &MetricEntity) -> Option<f64> {
    let u = || EntityName::Name(m.user.clone());
    let c = || EntityName::Name(m.client_id.clone());
    let d = || EntityName::Default;
    let candidates: Vec<QuotaEntity> = match (m.user.is_empty(), m.client_id.is_empty()) {
        (false, false) => vec![
            QuotaEntity::user_client(u(), c()),
            QuotaEntity::user_client(u(), d()),
            QuotaEntity::user_client(d(), c()),
            QuotaEntity::user_client(d(), d()),
        ],
        (false, true) => vec![QuotaEntity::user(u()), QuotaEntity::user(d())],
        (true, false) => vec![QuotaEntity::client(c()), QuotaEntity::client(d())],
        (true, true) => vec![],
    };
    candidates.iter().find_map(|e| quotas.get(e, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> EntityName {
        EntityName::Name(n.into())
    }

    const P: &str = PRODUCER_BYTE_RATE;

    fn at(quotas: &ClientQuotas) -> Option<(String, String, f64)> {
        resolve(quotas, QuotaType::Produce, "alice", "c1")
            .map(|r| (r.metric.user, r.metric.client_id, r.limit))
    }

    fn r(u: &str, c: &str, limit: f64) -> Option<(String, String, f64)> {
        Some((u.into(), c.into(), limit))
    }

    #[test]
    fn the_most_specific_entity_wins_in_kafkas_order() {
        let d = || EntityName::Default;
        // Added from least to most specific: each one takes over.
        let order = [
            (QuotaEntity::client(d()), r("", "c1", 8.0)),
            (QuotaEntity::client(name("c1")), r("", "c1", 7.0)),
            (QuotaEntity::user(d()), r("alice", "", 6.0)),
            (QuotaEntity::user_client(d(), d()), r("alice", "c1", 5.0)),
            (QuotaEntity::user_client(d(), name("c1")), r("alice", "c1", 4.0)),
            (QuotaEntity::user(name("alice")), r("alice", "", 3.0)),
            (QuotaEntity::user_client(name("alice"), d()), r("alice", "c1", 2.0)),
            (QuotaEntity::user_client(name("alice"), name("c1")), r("alice", "c1", 1.0)),
        ];
        let mut q = ClientQuotas::default();
        assert_eq!(at(&q), None);
        for (entity, expected) in order {
            let limit = expected.as_ref().unwrap().2;
            q.set(&entity, P, limit);
            assert_eq!(at(&q), expected, "after adding {entity}");
        }
    }

    #[test]
    fn other_keys_and_other_names_do_not_apply() {
        let mut q = ClientQuotas::default();
        q.set(&QuotaEntity::user(name("alice")), CONSUMER_BYTE_RATE, 10.0);
        q.set(&QuotaEntity::user(name("bob")), P, 10.0);
        q.set(&QuotaEntity::client(name("c2")), P, 10.0);
        assert_eq!(at(&q), None);
        assert_eq!(resolve(&q, QuotaType::Fetch, "alice", "c1").map(|r| r.limit), Some(10.0));
    }

    #[test]
    fn a_user_client_default_falls_back_through_the_metric_entity() {
        // Kafka: the metric entity is (U, C) from /users/<default>/clients/<default>,
        // and its limit is the first of (U,C), (U,<d>), (<d>,C), (<d>,<d>).
        let mut q = ClientQuotas::default();
        q.set(&QuotaEntity::user_client(EntityName::Default, EntityName::Default), P, 5.0);
        q.set(&QuotaEntity::user_client(EntityName::Default, name("c1")), P, 4.0);
        assert_eq!(at(&q), r("alice", "c1", 4.0));
    }
}
