//! AlterClientQuotas' validation and its effect on the stored quotas, pure (Kafka's
//! `ClientQuotaControlManager.alterClientQuotas`, KIP-546). Every refusal is
//! INVALID_REQUEST with Kafka's message; a refused entity changes nothing, the others
//! of the same request still apply.

use super::entity::{ClientQuotas, EntityName, QuotaEntity, CLIENT_ID, IP, USER};

/// The type of a quota key's value (Kafka's `ConfigDef.Type` of the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// Integral, at most `i64::MAX` (bytes per second).
    Long,
    /// Integral, at most `i32::MAX` (connections per second).
    Int,
    /// Any number above 0 (a percentage, mutations per second).
    Double,
}

/// `producer_byte_rate`: bytes/s of Produce requests a user / client id may send.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// `consumer_byte_rate`: bytes/s of Fetch responses a user / client id may receive.
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// `request_percentage`: percent of one request handler thread (here: of the shard's
/// time) a user / client id may use per quota window (KIP-124).
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// `controller_mutation_rate` (KIP-599): stored and described, not enforced.
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
/// `connection_creation_rate` (KIP-612), for ip entities: stored and described, not
/// enforced.
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// The keys of user and client-id entities (Kafka's `QuotaConfig.userAndClientQuotaConfigs`).
pub const USER_CLIENT_KEYS: &[(&str, KeyType)] = &[
    (PRODUCER_BYTE_RATE, KeyType::Long),
    (CONSUMER_BYTE_RATE, KeyType::Long),
    (REQUEST_PERCENTAGE, KeyType::Double),
    (CONTROLLER_MUTATION_RATE, KeyType::Double),
];

/// The keys of ip entities (Kafka's `QuotaConfig.ipConfigs`).
pub const IP_KEYS: &[(&str, KeyType)] = &[(CONNECTION_CREATION_RATE, KeyType::Int)];

/// One operation on a key: set it to `value`, or remove it.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub key: String,
    pub value: f64,
    pub remove: bool,
}

/// The control shard's answer to AlterClientQuotas: per entity, its components and
/// the error (INVALID_REQUEST or KAFKA_STORAGE_ERROR, with the message), if any.
pub type ControlResult = (WireEntity, Option<(crate::error::ResponseError, String)>);

/// An entity as the request names it: (entity type, name or null for the default).
pub type WireEntity = Vec<(String, Option<String>)>;

/// One entry of an AlterClientQuotas request.
#[derive(Debug, Clone, PartialEq)]
pub struct Alteration {
    pub entity: WireEntity,
    pub ops: Vec<Op>,
}

/// The result of one entity: its components as requested and the INVALID_REQUEST
/// message, `None` on success.
pub type AlterResult = (WireEntity, Option<String>);

/// Applies `alterations` to `quotas` in order. One result per distinct entity (in the
/// order of first appearance), as Kafka answers one per entity: an entity named twice
/// gets "Ignoring duplicate entity" (its first alteration stays applied, as in Kafka);
/// a key named twice in one alteration refuses that alteration the same way.
pub fn alter(quotas: &mut ClientQuotas, alterations: &[Alteration]) -> Vec<AlterResult> {
    let mut results: Vec<AlterResult> = Vec::new();
    for a in alterations {
        let mut key = a.entity.clone();
        key.sort();
        if let Some(i) = results.iter().position(|(e, _)| {
            let mut e = e.clone();
            e.sort();
            e == key
        }) {
            results[i].1 = Some(format!("Ignoring duplicate entity {}", display_wire(&a.entity)));
            continue;
        }
        let duplicate_key =
            a.ops.iter().enumerate().any(|(i, op)| a.ops[..i].iter().any(|o| o.key == op.key));
        let error = if duplicate_key {
            Some(format!("Ignoring duplicate entity {}", display_wire(&a.entity)))
        } else {
            alter_entity(quotas, a).err()
        };
        results.push((a.entity.clone(), error));
    }
    results
}

/// Validates and applies one alteration; nothing changes when it is refused.
fn alter_entity(quotas: &mut ClientQuotas, a: &Alteration) -> Result<(), String> {
    let entity = validate_entity(&a.entity)?;
    let keys = keys_for(&entity)?;
    let mut next = quotas.clone();
    for op in &a.ops {
        if op.remove {
            next.remove(&entity, &op.key);
        } else {
            validate_value(keys, &op.key, op.value)?;
            next.set(&entity, &op.key, op.value);
        }
    }
    *quotas = next;
    Ok(())
}

/// The entity of a request's components (Kafka's `validateEntity`): INVALID_REQUEST for
/// no component, a type named twice, a type other than `user`, `client-id`, `ip`, or
/// an empty name.
pub fn validate_entity(components: &WireEntity) -> Result<QuotaEntity, String> {
    if components.is_empty() {
        return Err("Invalid empty client quota entity".to_string());
    }
    let mut entity = QuotaEntity::default();
    for (entity_type, name) in components {
        let slot = match entity_type.as_str() {
            USER => &mut entity.user,
            CLIENT_ID => &mut entity.client_id,
            IP => &mut entity.ip,
            other => return Err(format!("Unhandled client quota entity type: {other}")),
        };
        if slot.is_some() {
            return Err(format!(
                "Invalid client quota entity, duplicate entity entry {entity_type}"
            ));
        }
        if name.as_deref() == Some("") {
            return Err(format!("Empty {entity_type} not supported"));
        }
        *slot = Some(EntityName::from_wire(name.as_deref()));
    }
    Ok(entity)
}

/// The keys an entity may have (Kafka's `configKeysForEntityType`): ip alone, or
/// user and/or client id. An ip must be an IP address (Kafka also accepts a host name
/// it can resolve; shardlog does not resolve names).
pub fn keys_for(entity: &QuotaEntity) -> Result<&'static [(&'static str, KeyType)], String> {
    match &entity.ip {
        Some(_) if entity.user.is_some() || entity.client_id.is_some() => Err(
            // Kafka's message, missing space included.
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                .to_string(),
        ),
        Some(EntityName::Name(ip)) if ip.parse::<std::net::IpAddr>().is_err() => {
            Err(format!("{ip} is not a valid IP or resolvable host."))
        }
        Some(_) => Ok(IP_KEYS),
        None if entity.user.is_some() || entity.client_id.is_some() => Ok(USER_CLIENT_KEYS),
        None => Err("Invalid empty client quota entity".to_string()),
    }
}

/// Kafka's `validateQuotaKeyValue`: the key must be one of `keys`, the value above 0,
/// integral (within 1e-6) and in range for LONG / INT keys. Not finite values are
/// refused too (Kafka lets NaN and infinity through for DOUBLE keys; the catalog's
/// JSON cannot hold them).
pub fn validate_value(keys: &[(&str, KeyType)], key: &str, value: f64) -> Result<(), String> {
    let Some(&(_, key_type)) = keys.iter().find(|(k, _)| *k == key) else {
        return Err(format!("Invalid configuration key {key}"));
    };
    if value <= 0.0 || value.is_nan() {
        return Err(format!("Quota {key} must be greater than 0"));
    }
    let too_large = match key_type {
        KeyType::Double if value.is_infinite() => {
            return Err(format!("Quota {key} must be a finite number"))
        }
        KeyType::Double => return Ok(()),
        KeyType::Int => (value > i32::MAX as f64).then_some("an INT"),
        KeyType::Long => (value > i64::MAX as f64).then_some("a LONG"),
    };
    if let Some(what) = too_large {
        return Err(format!("Proposed value for {key} is too large for {what}."));
    }
    if (value % 1.0).abs() > 1e-6 {
        return Err(format!("{key} cannot be a fractional value."));
    }
    Ok(())
}

/// A request's entity as Kafka prints a `ClientQuotaEntity` (in request order).
fn display_wire(entity: &WireEntity) -> String {
    let parts: Vec<String> =
        entity.iter().map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null"))).collect();
    format!("ClientQuotaEntity(entries={{{}}})", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(parts: &[(&str, Option<&str>)]) -> WireEntity {
        parts.iter().map(|(t, n)| (t.to_string(), n.map(str::to_string))).collect()
    }

    fn set(key: &str, value: f64) -> Op {
        Op { key: key.to_string(), value, remove: false }
    }

    fn one(entity: WireEntity, ops: Vec<Op>) -> (ClientQuotas, Option<String>) {
        let mut q = ClientQuotas::default();
        let mut results = alter(&mut q, &[Alteration { entity, ops }]);
        assert_eq!(results.len(), 1);
        (q, results.remove(0).1)
    }

    fn error(entity: WireEntity, ops: Vec<Op>) -> String {
        let (q, e) = one(entity, ops);
        assert!(q.is_empty(), "a refused alteration changes nothing");
        e.expect("refused")
    }

    #[test]
    fn sets_and_removes_user_and_client_quotas() {
        let alice = wire(&[("user", Some("alice"))]);
        let (mut q, e) = one(alice.clone(), vec![set(PRODUCER_BYTE_RATE, 1024.0)]);
        assert_eq!(e, None);
        let entity = QuotaEntity::user(EntityName::Name("alice".into()));
        assert_eq!(q.get(&entity, PRODUCER_BYTE_RATE), Some(1024.0));
        let remove = Op { key: PRODUCER_BYTE_RATE.into(), value: 0.0, remove: true };
        assert_eq!(alter(&mut q, &[Alteration { entity: alice, ops: vec![remove] }])[0].1, None);
        assert!(q.is_empty());
        // Removing a key that is not there is fine.
        let (q, e) = one(
            wire(&[("client-id", None)]),
            vec![Op { key: "request_percentage".into(), value: 0.0, remove: true }],
        );
        assert_eq!((q.is_empty(), e), (true, None));
    }

    #[test]
    fn refuses_bad_entities_with_kafka_messages() {
        let ok = || vec![set(PRODUCER_BYTE_RATE, 1.0)];
        assert_eq!(error(vec![], ok()), "Invalid empty client quota entity");
        assert_eq!(
            error(wire(&[("topic", Some("t"))]), ok()),
            "Unhandled client quota entity type: topic"
        );
        assert_eq!(error(wire(&[("user", Some(""))]), ok()), "Empty user not supported");
        assert_eq!(
            error(wire(&[("user", Some("a")), ("user", Some("b"))]), ok()),
            "Invalid client quota entity, duplicate entity entry user"
        );
        assert_eq!(
            error(wire(&[("user", Some("a")), ("ip", Some("1.2.3.4"))]), ok()),
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        );
        assert_eq!(
            error(wire(&[("ip", Some("not an ip"))]), vec![set(CONNECTION_CREATION_RATE, 1.0)]),
            "not an ip is not a valid IP or resolvable host."
        );
    }

    #[test]
    fn refuses_bad_keys_and_values_with_kafka_messages() {
        let user = || wire(&[("user", Some("alice"))]);
        assert_eq!(error(user(), vec![set("bogus", 1.0)]), "Invalid configuration key bogus");
        assert_eq!(
            error(user(), vec![set(CONNECTION_CREATION_RATE, 1.0)]),
            "Invalid configuration key connection_creation_rate"
        );
        assert_eq!(
            error(wire(&[("ip", None)]), vec![set(PRODUCER_BYTE_RATE, 1.0)]),
            "Invalid configuration key producer_byte_rate"
        );
        assert_eq!(
            error(user(), vec![set(PRODUCER_BYTE_RATE, 0.0)]),
            "Quota producer_byte_rate must be greater than 0"
        );
        assert_eq!(
            error(user(), vec![set(CONSUMER_BYTE_RATE, 10.5)]),
            "consumer_byte_rate cannot be a fractional value."
        );
        assert_eq!(
            error(user(), vec![set(PRODUCER_BYTE_RATE, 1e19)]),
            "Proposed value for producer_byte_rate is too large for a LONG."
        );
        assert_eq!(
            error(wire(&[("ip", Some("::1"))]), vec![set(CONNECTION_CREATION_RATE, 3e9)]),
            "Proposed value for connection_creation_rate is too large for an INT."
        );
        // A refused key leaves the entity's other keys of the same alteration unset.
        assert_eq!(
            error(user(), vec![set(PRODUCER_BYTE_RATE, 5.0), set(CONSUMER_BYTE_RATE, -1.0)]),
            "Quota consumer_byte_rate must be greater than 0"
        );
        let (q, e) = one(user(), vec![set(REQUEST_PERCENTAGE, 12.5)]);
        assert_eq!(e, None);
        assert_eq!(
            q.get(&QuotaEntity::user(EntityName::Name("alice".into())), REQUEST_PERCENTAGE),
            Some(12.5)
        );
    }

    #[test]
    fn duplicates_are_ignored_as_kafka_does() {
        let mut q = ClientQuotas::default();
        let e = wire(&[("user", Some("a")), ("client-id", Some("c"))]);
        let swapped = wire(&[("client-id", Some("c")), ("user", Some("a"))]);
        let results = alter(
            &mut q,
            &[
                Alteration { entity: e.clone(), ops: vec![set(PRODUCER_BYTE_RATE, 1.0)] },
                Alteration { entity: swapped.clone(), ops: vec![set(PRODUCER_BYTE_RATE, 2.0)] },
                Alteration {
                    entity: wire(&[("user", Some("b"))]),
                    ops: vec![set(PRODUCER_BYTE_RATE, 1.0), set(PRODUCER_BYTE_RATE, 2.0)],
                },
            ],
        );
        assert_eq!(
            results,
            vec![
                (
                    e,
                    Some(
                        "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c, user=a})"
                            .to_string()
                    )
                ),
                (
                    wire(&[("user", Some("b"))]),
                    Some("Ignoring duplicate entity ClientQuotaEntity(entries={user=b})".to_string())
                ),
            ]
        );
        let ac =
            QuotaEntity::user_client(EntityName::Name("a".into()), EntityName::Name("c".into()));
        assert_eq!(q.get(&ac, PRODUCER_BYTE_RATE), Some(1.0));
        assert_eq!(q.values(&QuotaEntity::user(EntityName::Name("b".into()))), None);
    }
}
