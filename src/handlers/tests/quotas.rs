//! AlterClientQuotas and DescribeClientQuotas through the handlers: round trips, the
//! default entities, validate_only, removal, Kafka's errors, and the authorizer.

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::ask_as;
use crate::error::ResponseError;
use crate::shard::testing::{with_shard, with_shard_flags};
use crate::shard::Shard;
use std::rc::Rc;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn entity(parts: &[(&str, Option<&str>)]) -> Vec<EntityData> {
    parts
        .iter()
        .map(|(t, n)| EntityData::default().with_entity_type(s(t)).with_entity_name(n.map(s)))
        .collect()
}

fn set(key: &str, value: f64) -> OpData {
    OpData::default().with_key(s(key)).with_value(value).with_remove(false)
}

/// AlterClientQuotas v1 as `user`: each entry's (error code, error message).
async fn alter(
    shard: &Rc<Shard>,
    user: &str,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let body = RequestKind::AlterClientQuotas(
        AlterClientQuotasRequest::default().with_entries(entries).with_validate_only(validate_only),
    );
    let ResponseKind::AlterClientQuotas(r) =
        ask_as(shard, user, ApiKey::AlterClientQuotas, 1, body).await
    else {
        panic!()
    };
    r.entries
        .iter()
        .map(|e| (e.error_code, e.error_message.as_ref().map(|m| m.to_string())))
        .collect()
}

/// DescribeClientQuotas v1 as `user`: the error code and each entry as
/// "type=name,...: key=value,...".
async fn describe(
    shard: &Rc<Shard>,
    user: &str,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> (i16, Vec<String>) {
    let components = components
        .iter()
        .map(|(t, m, name)| {
            ComponentData::default()
                .with_entity_type(s(t))
                .with_match_type(*m)
                .with_match(name.map(s))
        })
        .collect();
    let body = RequestKind::DescribeClientQuotas(
        DescribeClientQuotasRequest::default().with_components(components).with_strict(strict),
    );
    let ResponseKind::DescribeClientQuotas(r) =
        ask_as(shard, user, ApiKey::DescribeClientQuotas, 1, body).await
    else {
        panic!()
    };
    let entries = r
        .entries
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let entity: Vec<String> = e
                .entity
                .iter()
                .map(|c| {
                    format!("{}={}", c.entity_type, c.entity_name.as_deref().unwrap_or("<default>"))
                })
                .collect();
            let values: Vec<String> =
                e.values.iter().map(|v| format!("{}={}", v.key, v.value)).collect();
            format!("{}: {}", entity.join(","), values.join(","))
        })
        .collect();
    (r.error_code, entries)
}

#[test]
fn alter_then_describe_round_trips_users_clients_and_defaults() {
    with_shard(|shard| async move {
        let entries = vec![
            EntryData::default().with_entity(entity(&[("user", Some("alice"))])).with_ops(vec![
                set("producer_byte_rate", 1024.0),
                set("consumer_byte_rate", 2048.0),
            ]),
            EntryData::default()
                .with_entity(entity(&[("user", None)]))
                .with_ops(vec![set("request_percentage", 50.5)]),
            EntryData::default()
                .with_entity(entity(&[("user", Some("alice")), ("client-id", Some("c1"))]))
                .with_ops(vec![set("producer_byte_rate", 512.0)]),
            EntryData::default()
                .with_entity(entity(&[("client-id", None)]))
                .with_ops(vec![set("consumer_byte_rate", 100.0)]),
            EntryData::default()
                .with_entity(entity(&[("ip", Some("10.0.0.1"))]))
                .with_ops(vec![set("connection_creation_rate", 5.0)]),
        ];
        assert_eq!(alter(&shard, "ANONYMOUS", entries, false).await, vec![(0, None); 5]);
        assert_eq!(
            describe(&shard, "ANONYMOUS", &[("user", 0, Some("alice"))], false).await,
            (
                0,
                vec![
                    "user=alice: consumer_byte_rate=2048,producer_byte_rate=1024".to_string(),
                    "user=alice,client-id=c1: producer_byte_rate=512".to_string(),
                ]
            )
        );
        assert_eq!(
            describe(&shard, "ANONYMOUS", &[("user", 1, None)], true).await,
            (0, vec!["user=<default>: request_percentage=50.5".to_string()])
        );
        assert_eq!(
            describe(&shard, "ANONYMOUS", &[("client-id", 2, None)], true).await,
            (0, vec!["client-id=<default>: consumer_byte_rate=100".to_string()])
        );
        assert_eq!(
            describe(&shard, "ANONYMOUS", &[("ip", 2, None)], false).await,
            (0, vec!["ip=10.0.0.1: connection_creation_rate=5".to_string()])
        );
        assert_eq!(describe(&shard, "ANONYMOUS", &[], false).await.1.len(), 5);

        // Removal, and validate_only changes nothing.
        let remove =
            EntryData::default().with_entity(entity(&[("user", Some("alice"))])).with_ops(vec![
                OpData::default().with_key(s("producer_byte_rate")).with_remove(true),
                set("consumer_byte_rate", 4096.0),
            ]);
        assert_eq!(alter(&shard, "ANONYMOUS", vec![remove], false).await, vec![(0, None)]);
        let dry = EntryData::default()
            .with_entity(entity(&[("user", Some("alice"))]))
            .with_ops(vec![set("consumer_byte_rate", 1.0)]);
        assert_eq!(alter(&shard, "ANONYMOUS", vec![dry], true).await, vec![(0, None)]);
        assert_eq!(
            describe(&shard, "ANONYMOUS", &[("user", 0, Some("alice"))], true).await,
            (0, vec!["user=alice: consumer_byte_rate=4096".to_string()])
        );
    });
}

#[test]
fn invalid_alterations_and_filters_get_kafkas_errors() {
    with_shard(|shard| async move {
        let invalid = ResponseError::InvalidRequest.code();
        let entries = vec![
            EntryData::default()
                .with_entity(entity(&[("user", Some("a"))]))
                .with_ops(vec![set("producer_byte_rate", 10.5)]),
            EntryData::default()
                .with_entity(entity(&[("user", Some("b"))]))
                .with_ops(vec![set("bogus", 1.0)]),
            EntryData::default()
                .with_entity(entity(&[("user", Some("c")), ("ip", None)]))
                .with_ops(vec![set("producer_byte_rate", 1.0)]),
            EntryData::default()
                .with_entity(entity(&[("client-id", Some("ok"))]))
                .with_ops(vec![set("producer_byte_rate", 1.0)]),
        ];
        assert_eq!(
            alter(&shard, "ANONYMOUS", entries, false).await,
            vec![
                (invalid, Some("producer_byte_rate cannot be a fractional value.".into())),
                (invalid, Some("Invalid configuration key bogus".into())),
                (
                    invalid,
                    Some(
                        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                            .into()
                    )
                ),
                (0, None),
            ]
        );
        assert_eq!(shard.catalog().client_quotas.iter().count(), 1, "only the valid one applied");
        assert_eq!(
            describe(&shard, "ANONYMOUS", &[("user", 0, None)], false).await,
            (invalid, vec![])
        );
        assert_eq!(
            describe(&shard, "ANONYMOUS", &[("group", 2, None)], false).await,
            (ResponseError::UnsupportedVersion.code(), vec![])
        );
    });
}

#[test]
fn the_authorizer_guards_both_apis_on_the_cluster() {
    with_shard_flags(&["--authorizer", "--super-users", "User:admin"], |shard| async move {
        let entry = || {
            EntryData::default()
                .with_entity(entity(&[("user", Some("bob"))]))
                .with_ops(vec![set("producer_byte_rate", 1.0)])
        };
        let denied = ResponseError::ClusterAuthorizationFailed.code();
        assert_eq!(
            alter(&shard, "bob", vec![entry()], false).await,
            vec![(denied, Some("Request is not authorized.".into()))]
        );
        assert!(shard.catalog().client_quotas.is_empty());
        assert_eq!(describe(&shard, "bob", &[], false).await, (denied, vec![]));
        assert_eq!(alter(&shard, "admin", vec![entry()], false).await, vec![(0, None)]);
        assert_eq!(
            describe(&shard, "admin", &[], false).await,
            (0, vec!["user=bob: producer_byte_rate=1".to_string()])
        );
    });
}
