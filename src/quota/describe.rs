//! DescribeClientQuotas' filter, pure (Kafka's `ClientQuotasImage.describe`, KIP-546).

use std::collections::BTreeMap;

use super::entity::{ClientQuotas, EntityName, QuotaEntity, CLIENT_ID, IP, USER};
use crate::error::ResponseError;

/// Kafka's `ComponentData.match_type` values.
pub const MATCH_TYPE_EXACT: i8 = 0;
pub const MATCH_TYPE_DEFAULT: i8 = 1;
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

/// One filter component as requested: entity type, match type, match string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub entity_type: String,
    pub match_type: i8,
    pub matched: Option<String>,
}

/// A validated filter: types that must have exactly this name (or the default), and
/// types that must merely be present.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    exact: Vec<(&'static str, EntityName)>,
    specified: Vec<&'static str>,
    strict: bool,
}

/// Validates a request's components (Kafka's checks, in its order): INVALID_REQUEST
/// for an empty type, a type named twice, a match string where none belongs (or
/// missing for EXACT), an unknown match type, ip combined with user or client-id;
/// UNSUPPORTED_VERSION for an entity type other than `user`, `client-id`, `ip`.
pub fn filter(components: &[Component], strict: bool) -> Result<Filter, (ResponseError, String)> {
    let invalid = |m: String| (ResponseError::InvalidRequest, m);
    let mut f = Filter { strict, ..Default::default() };
    for c in components {
        let t = c.entity_type.as_str();
        if t.is_empty() {
            return Err(invalid("Invalid empty entity type.".to_string()));
        }
        if f.exact.iter().any(|(e, _)| *e == t) || f.specified.contains(&t) {
            return Err(invalid(format!(
                "Entity type {t} cannot appear more than once in the filter."
            )));
        }
        let t: &'static str = match t {
            USER => USER,
            CLIENT_ID => CLIENT_ID,
            IP => IP,
            other => {
                return Err((
                    ResponseError::UnsupportedVersion,
                    format!("Unsupported entity type {other}"),
                ))
            }
        };
        match (c.match_type, &c.matched) {
            (MATCH_TYPE_EXACT, None) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.".to_string(),
                ))
            }
            (MATCH_TYPE_EXACT, Some(m)) => f.exact.push((t, EntityName::Name(m.clone()))),
            (MATCH_TYPE_DEFAULT, Some(_)) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                        .to_string(),
                ))
            }
            (MATCH_TYPE_DEFAULT, None) => f.exact.push((t, EntityName::Default)),
            (MATCH_TYPE_SPECIFIED, Some(_)) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .to_string(),
                ))
            }
            (MATCH_TYPE_SPECIFIED, None) => f.specified.push(t),
            (other, _) => return Err(invalid(format!("Unknown match type {other}"))),
        }
    }
    let has = |t: &str| f.exact.iter().any(|(e, _)| *e == t) || f.specified.contains(&t);
    if has(IP) && (has(USER) || has(CLIENT_ID)) {
        return Err(invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component."
                .to_string(),
        ));
    }
    Ok(f)
}

impl Filter {
    /// Whether `entity` matches: every exact component equal, every specified type
    /// present, and with `strict` no other component.
    pub fn matches(&self, entity: &QuotaEntity) -> bool {
        if self.strict && entity.components().count() != self.exact.len() + self.specified.len() {
            return false;
        }
        self.exact.iter().all(|(t, n)| entity.component(t) == Some(n))
            && self.specified.iter().all(|t| entity.component(t).is_some())
    }
}

/// The matching entities with their values (key -> value), in the store's order.
pub fn describe<'a>(
    quotas: &'a ClientQuotas,
    filter: &Filter,
) -> Vec<(&'a QuotaEntity, BTreeMap<&'a str, f64>)> {
    quotas
        .iter()
        .filter(|(e, _)| filter.matches(e))
        .map(|(e, values)| (e, values.iter().map(|(k, v)| (k.as_str(), v.0)).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(t: &str, match_type: i8, m: Option<&str>) -> Component {
        Component { entity_type: t.into(), match_type, matched: m.map(Into::into) }
    }

    fn name(n: &str) -> EntityName {
        EntityName::Name(n.into())
    }

    fn store() -> ClientQuotas {
        let mut q = ClientQuotas::default();
        for e in [
            QuotaEntity::user(name("alice")),
            QuotaEntity::user(EntityName::Default),
            QuotaEntity::user_client(name("alice"), name("c1")),
            QuotaEntity::client(name("c1")),
            QuotaEntity::client(EntityName::Default),
        ] {
            q.set(&e, "producer_byte_rate", 100.0);
        }
        q.set(
            &QuotaEntity { ip: Some(EntityName::Default), ..Default::default() },
            "connection_creation_rate",
            5.0,
        );
        q
    }

    fn matched(components: &[Component], strict: bool) -> Vec<String> {
        let q = store();
        let f = filter(components, strict).expect("valid filter");
        describe(&q, &f).into_iter().map(|(e, _)| e.to_string()).collect()
    }

    #[test]
    fn exact_default_and_specified_match_as_kafka() {
        let user_alice = c(USER, MATCH_TYPE_EXACT, Some("alice"));
        assert_eq!(
            matched(std::slice::from_ref(&user_alice), false),
            vec![
                "ClientQuotaEntity(entries={user=alice})",
                "ClientQuotaEntity(entries={user=alice, client-id=c1})"
            ]
        );
        assert_eq!(matched(&[user_alice], true), vec!["ClientQuotaEntity(entries={user=alice})"]);
        assert_eq!(
            matched(&[c(USER, MATCH_TYPE_DEFAULT, None)], true),
            vec!["ClientQuotaEntity(entries={user=null})"]
        );
        assert_eq!(
            matched(&[c(CLIENT_ID, MATCH_TYPE_SPECIFIED, None)], true),
            vec![
                "ClientQuotaEntity(entries={client-id=null})",
                "ClientQuotaEntity(entries={client-id=c1})"
            ]
        );
        assert_eq!(matched(&[], false).len(), 6, "no component matches everything");
        assert_eq!(matched(&[], true).len(), 0, "strict with no component matches nothing");
    }

    #[test]
    fn invalid_filters_get_kafka_errors() {
        let err = |cs: &[Component]| filter(cs, false).unwrap_err();
        assert_eq!(
            err(&[c(USER, MATCH_TYPE_EXACT, None)]),
            (
                ResponseError::InvalidRequest,
                "Request specified MATCH_TYPE_EXACT, but set match string to null.".into()
            )
        );
        assert_eq!(
            err(&[c(USER, 3, None)]),
            (ResponseError::InvalidRequest, "Unknown match type 3".into())
        );
        assert_eq!(
            err(&[c("topic", 0, Some("x"))]),
            (ResponseError::UnsupportedVersion, "Unsupported entity type topic".into())
        );
        assert_eq!(
            err(&[c(USER, 2, None), c(USER, 1, None)]),
            (
                ResponseError::InvalidRequest,
                "Entity type user cannot appear more than once in the filter.".into()
            )
        );
        assert_eq!(err(&[c(IP, 2, None), c(USER, 2, None)]).0, ResponseError::InvalidRequest);
        assert_eq!(err(&[c("", 2, None)]).1, "Invalid empty entity type.");
    }
}
