//! What AlterConfigs (key 33) and IncrementalAlterConfigs (key 44) share: sorting each
//! resource into a topic change for the control shard or an answer given here, and
//! collecting the answers in request order.
//!
//! Topics (resource type 2) and the broker's dynamic configs (type 4: this node's id,
//! or "" for the cluster default; [`crate::broker_config`]) change in the catalog
//! (`shard::control`), persisted and applied live by every shard. Another broker id,
//! other resource types, and every copy of a resource the request names twice get
//! INVALID_REQUEST.

use kafka_protocol::protocol::StrBytes;

use super::{Ctx, Deferred};
use crate::config_ops::ConfigChange;
use crate::error::ResponseError;
use crate::metadata::CatalogError;
use crate::shard::messages::ConfigTarget;
use crate::shard::ControlRequest;

/// Kafka's `ConfigResource.Type` codes that shardlog serves (kafka-protocol keeps them as
/// plain `i8`s); DescribeConfigs uses them too.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

/// One resource of the request.
pub struct Resource {
    pub resource_type: i8,
    pub name: StrBytes,
    /// The change, or the error decoding it already gave (e.g. an unknown operation).
    pub change: Result<ConfigChange, CatalogError>,
}

/// One resource's answer: `(resource_type, name, error, message)`.
pub type Answer = (i8, StrBytes, Option<ResponseError>, Option<String>);

/// Starts the topic changes on the control shard; the second phase yields one answer
/// per resource, in request order.
pub async fn route(
    ctx: &Ctx,
    resources: Vec<Resource>,
    validate_only: bool,
) -> Deferred<Vec<Answer>> {
    let node = ctx.shard.config.node_id.to_string();
    let mut count = std::collections::HashMap::new();
    for r in &resources {
        *count.entry((r.resource_type, r.name.as_str())).or_insert(0) += 1;
    }
    let mut local: Vec<Option<Result<(), CatalogError>>> = Vec::with_capacity(resources.len());
    let mut changes = Vec::new();
    for r in &resources {
        let duplicate = count[&(r.resource_type, r.name.as_str())] > 1;
        let answer = match (&r.change, r.resource_type) {
            // Kafka refuses every copy of a resource named twice, applying none.
            _ if duplicate => Some(Err(CatalogError::InvalidRequest("Duplicate resource.".into()))),
            // Kafka: ALTER_CONFIGS on the topic, or on the cluster for broker configs.
            (_, RESOURCE_TOPIC)
                if !ctx.authorize(
                    crate::security::acl::AclOperation::AlterConfigs,
                    crate::security::acl::ResourceType::Topic,
                    &r.name,
                ) =>
            {
                Some(Err(CatalogError::TopicAuthorizationFailed("Authorization failed.".into())))
            }
            (_, RESOURCE_BROKER)
                if !ctx.authorize_cluster(crate::security::acl::AclOperation::AlterConfigs) =>
            {
                Some(Err(CatalogError::ClusterAuthorizationFailed("Authorization failed.".into())))
            }
            (Err(e), _) => Some(Err(e.clone())),
            (Ok(change), RESOURCE_TOPIC) => {
                changes.push((ConfigTarget::Topic(r.name.to_string()), change.clone()));
                None
            }
            (Ok(change), RESOURCE_BROKER) => match r.name.as_str() {
                "" => {
                    changes.push((ConfigTarget::BrokerDefault, change.clone()));
                    None
                }
                name if crate::net::shard_nodes::names_a_node(&ctx.shard.config, name) => {
                    changes.push((ConfigTarget::Broker, change.clone()));
                    None
                }
                name => Some(Err(CatalogError::InvalidRequest(format!(
                    "Unexpected broker id, expected {node} or empty string, but received {name}"
                )))),
            },
            (Ok(_), t) => Some(Err(CatalogError::InvalidRequest(format!(
                "Unsupported resource type {t} for config changes"
            )))),
        };
        local.push(answer);
    }
    let pending = if changes.is_empty() {
        None
    } else {
        Some(
            ctx.shard
                .ask_control(|reply| ControlRequest::AlterConfigs { changes, validate_only, reply })
                .await,
        )
    };
    Box::pin(async move {
        let mut topic_answers = match pending {
            Some(rx) => rx.await.ok()?,
            None => Vec::new(),
        }
        .into_iter();
        let answers = resources
            .into_iter()
            .zip(local)
            .map(|(r, answer)| {
                let result = match answer {
                    Some(a) => a,
                    None => topic_answers.next().unwrap_or(Err(CatalogError::Storage(
                        "the control shard did not answer".into(),
                    ))),
                };
                match result {
                    Ok(()) => (r.resource_type, r.name, None, None),
                    Err(e) => {
                        (r.resource_type, r.name, Some(e.error()), Some(e.message().to_string()))
                    }
                }
            })
            .collect();
        Some(answers)
    })
}
