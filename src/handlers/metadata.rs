//! Metadata (key 3): this broker's nodes (one, or one per shard with
//! `--shard-ports`: [`crate::net::shard_nodes`]), and the requested topics with their
//! partitions, each led by its shard's node. Unknown topics are auto-created when
//! `--auto-create-topics` and the request allow it (v4+ flag; always before v4).

use std::collections::BTreeSet;

use futures_channel::oneshot;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse};

use super::{Ctx, Outcome, Versions};
use crate::config::Config;
use crate::error::ResponseError;
use crate::metadata::{Catalog, CatalogError, TopicMeta, INTERNAL_TOPICS};
use crate::net::shard_nodes;
use crate::protocol::strings::{sb, topic_name};
use crate::protocol::topic_name::validate_topic_name;
use crate::shard::messages::NewTopic;
use crate::security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 13 };

/// Answers Metadata. A null topic list (v1+) or an empty one (v0) means every
/// topic. Per topic: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION,
/// UNKNOWN_TOPIC_ID (lookup by id, v10+). Topics to auto-create are sent to the
/// control shard first; the answer is built once they exist.
pub async fn handle(ctx: &Ctx, request: MetadataRequest) -> Outcome<MetadataResponse> {
    let v = ctx.api_version;
    let all = match &request.topics {
        None => true,
        Some(t) => t.is_empty() && v == 0,
    };
    // Naming topics by id turns auto-creation off: names are then ignored (Kafka).
    let allow_create = ctx.shard.config.auto_create_topics
        && (v < 4 || request.allow_auto_topic_creation)
        && !by_id(v, &request);
    let mut create_denied = BTreeSet::new();
    let creating = if !all && allow_create {
        auto_create(ctx, &request, &mut create_denied).await
    } else {
        None
    };
    let Some(created) = creating else {
        return Outcome::Ready(answer(ctx, v, &request, all, &create_denied));
    };
    let ctx = ctx.clone();
    Outcome::serial(async move {
        for result in created.await.unwrap_or_default() {
            match result {
                Err(CatalogError::TopicAlreadyExists(_)) | Ok(_) => {}
                Err(e) => tracing::info!(error = e.message(), "auto-creation failed"),
            }
        }
        answer(&ctx, v, &request, all, &create_denied)
    })
}

/// Asks the control shard to create the requested topics that do not exist (and
/// may be created); `None` when there are none.
/// Creates the missing topics named in the request that the connection may DESCRIBE
/// and CREATE (on the cluster or the topic, as Kafka checks); those it may DESCRIBE but
/// not CREATE go to `create_denied` (answered TOPIC_AUTHORIZATION_FAILED).
async fn auto_create(
    ctx: &Ctx,
    request: &MetadataRequest,
    create_denied: &mut BTreeSet<String>,
) -> Option<oneshot::Receiver<Vec<Result<TopicMeta, CatalogError>>>> {
    let catalog = ctx.shard.catalog();
    let missing: BTreeSet<String> = request
        .topics
        .iter()
        .flatten()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .filter(|n| {
            catalog.topic(n).is_none()
                && validate_topic_name(n).is_ok()
                && !INTERNAL_TOPICS.contains(&n.as_str())
                && ctx.authorize(AclOperation::Describe, ResourceType::Topic, n)
        })
        .collect();
    let missing: BTreeSet<String> = if ctx.authorize_cluster(AclOperation::Create) {
        missing
    } else {
        let (allowed, denied) = missing
            .into_iter()
            .partition(|n| ctx.authorize(AclOperation::Create, ResourceType::Topic, n));
        *create_denied = denied;
        allowed
    };
    if missing.is_empty() {
        return None;
    }
    let partitions = ctx.shard.config.default_partitions;
    let topics: Vec<NewTopic> = missing
        .into_iter()
        .map(|name| NewTopic { name, partitions, configs: Default::default(), shards: None })
        .collect();
    let validate_only = false;
    Some(
        ctx.shard
            .ask_control(|reply| ControlRequest::CreateTopics { topics, validate_only, reply })
            .await,
    )
}

/// True when topics are named by id (v12+, at least one non-zero topic id): as in
/// Kafka, only the ids count then, and the names that come with them (empty or null
/// from the Java Admin's `describeTopics(TopicCollection.ofTopicIds(..))`) are ignored.
fn by_id(v: i16, request: &MetadataRequest) -> bool {
    v >= 12 && request.topics.iter().flatten().any(|t| !t.topic_id.is_nil())
}

/// The response from this shard's catalog as it is now.
/// The response; with the authorizer on (Kafka's `handleTopicMetadataRequest`): all
/// topics lists only those the connection may DESCRIBE; a named topic it may not
/// DESCRIBE (or, missing, CREATE) is TOPIC_AUTHORIZATION_FAILED with a zero topic id;
/// one asked by id is TOPIC_AUTHORIZATION_FAILED with its id and no name (ids are not
/// secret). Authorized operations (v8+) are the KIP-430 bit sets.
fn answer(
    ctx: &Ctx,
    v: i16,
    request: &MetadataRequest,
    all: bool,
    create_denied: &BTreeSet<String>,
) -> MetadataResponse {
    let shard = &ctx.shard;
    let catalog = shard.catalog();
    let config = &shard.config;
    let may_describe = |name: &str| ctx.authorize(AclOperation::Describe, ResourceType::Topic, name);
    let denied = |name: Option<String>, id| {
        missing(v, name, id, ResponseError::TopicAuthorizationFailed)
    };
    let mut topics: Vec<MetadataResponseTopic> = if all {
        catalog
            .topics
            .values()
            .filter(|t| may_describe(&t.name))
            .map(|t| describe(v, config, t))
            .collect()
    } else if by_id(v, request) {
        let mut seen = BTreeSet::new();
        request
            .topics
            .iter()
            .flatten()
            .filter(|t| !t.topic_id.is_nil() && seen.insert(t.topic_id))
            .map(|t| match catalog.topic_by_id(t.topic_id) {
                Some(meta) if !may_describe(&meta.name) => denied(None, t.topic_id),
                Some(meta) => describe(v, config, meta),
                None => missing(v, None, t.topic_id, ResponseError::UnknownTopicId),
            })
            .collect()
    } else {
        request
            .topics
            .iter()
            .flatten()
            .map(|t| match &t.name {
                Some(name)
                    if !may_describe(name.as_str()) || create_denied.contains(name.as_str()) =>
                {
                    denied(Some(name.0.to_string()), uuid::Uuid::nil())
                }
                Some(name) => match catalog.topic(name.as_str()) {
                    Some(meta) => describe(v, config, meta),
                    None => {
                        let error = if validate_topic_name(name.as_str()).is_err() {
                            ResponseError::InvalidTopicException
                        } else {
                            ResponseError::UnknownTopicOrPartition
                        };
                        missing(v, Some(name.0.to_string()), t.topic_id, error)
                    }
                },
                None => match catalog.topic_by_id(t.topic_id) {
                    Some(meta) if !may_describe(&meta.name) => denied(None, t.topic_id),
                    Some(meta) => describe(v, config, meta),
                    None => missing(v, None, t.topic_id, ResponseError::UnknownTopicId),
                },
            })
            .collect()
    };

    let authorizing = shard.authorizer.is_some() && v >= 8;
    if authorizing && request.include_topic_authorized_operations {
        for t in topics.iter_mut().filter(|t| t.error_code != ResponseError::TopicAuthorizationFailed.code()) {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            t.topic_authorized_operations = ctx.authorized_operations(ResourceType::Topic, &name);
        }
    }
    let brokers = shard_nodes::brokers(config, &ctx.listener)
        .into_iter()
        .map(|b| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(b.node_id))
                .with_host(sb(&b.host))
                .with_port(b.port)
        })
        .collect();
    let mut response = MetadataResponse::default().with_brokers(brokers).with_topics(topics);
    if v >= 1 {
        response.controller_id = BrokerId(config.node_id);
    }
    if v >= 2 {
        response.cluster_id = Some(sb(&cluster_id(&catalog)));
    }
    if authorizing && v <= 10 && request.include_cluster_authorized_operations {
        response.cluster_authorized_operations =
            if ctx.authorize_cluster(AclOperation::Describe) {
                ctx.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
            } else {
                0
            };
    }
    response
}

fn cluster_id(catalog: &Catalog) -> String {
    catalog.cluster_id.clone()
}

fn missing(
    v: i16,
    name: Option<String>,
    id: uuid::Uuid,
    error: ResponseError,
) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default().with_error_code(error.code());
    t.name = Some(topic_name(name.as_deref().unwrap_or("")));
    if v >= 12 && name.is_none() {
        t.name = None;
    }
    if v >= 10 {
        t.topic_id = id;
    }
    t
}

/// `meta`'s partitions, each led by the node of the shard that owns it
/// ([`shard_nodes::node_of`]), its only replica.
fn describe(v: i16, config: &Config, meta: &TopicMeta) -> MetadataResponseTopic {
    let partitions = (0..meta.partition_shards.len() as i32)
        .map(|p| {
            let node = BrokerId(shard_nodes::node_of(config, meta.partition_shards[p as usize]));
            let mut mp = MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(node)
                .with_replica_nodes(vec![node])
                .with_isr_nodes(vec![node]);
            if v >= 7 {
                mp.leader_epoch = crate::metadata::PARTITION_LEADER_EPOCH;
            }
            mp
        })
        .collect();
    let mut t = MetadataResponseTopic::default()
        .with_partitions(partitions)
        .with_is_internal(crate::metadata::is_internal(&meta.name));
    t.name = Some(topic_name(&meta.name));
    if v >= 10 {
        t.topic_id = meta.id;
    }
    t
}
