//! Metadata (key 3): this broker, and the requested topics with their partitions
//! (this broker leads every partition). Unknown topics are auto-created when
//! `--auto-create-topics` and the request allow it (v4+ flag; always before v4).

use std::collections::BTreeSet;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse};

use super::create_topics::create;
use super::util::{sb, topic_name};
use super::{Ctx, Versions};
use crate::metadata::{Catalog, TopicMeta, INTERNAL_TOPICS};
use crate::protocol::topic_name::validate_topic_name;
use crate::shard::messages::NewTopic;

pub const VERSIONS: Versions = Versions { min: 0, max: 13 };

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const UNKNOWN_TOPIC_ID: i16 = 100;

/// Answers Metadata. A null topic list (v1+) or an empty one (v0) means every
/// topic. Per topic: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION,
/// UNKNOWN_TOPIC_ID (lookup by id, v10+).
pub async fn handle(ctx: &Ctx, request: MetadataRequest) -> MetadataResponse {
    let v = ctx.api_version;
    let all = match &request.topics {
        None => true,
        Some(t) => t.is_empty() && v == 0,
    };
    let allow_create =
        ctx.shard.config.auto_create_topics && (v < 4 || request.allow_auto_topic_creation);

    // Auto-create first, so the answer below sees the new topics.
    if !all && allow_create {
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
            })
            .collect();
        let new: Vec<NewTopic> = missing
            .into_iter()
            .map(|name| NewTopic {
                name,
                partitions: ctx.shard.config.default_partitions,
                configs: Default::default(),
            })
            .collect();
        for (t, r) in create(&ctx.shard, new, false).await {
            if let Err(e) = r {
                if e.code() != 36 {
                    tracing::info!(topic = %t.name, error = e.message(), "auto-creation failed");
                }
            }
        }
    }

    let catalog = ctx.shard.catalog();
    let topics: Vec<MetadataResponseTopic> = if all {
        catalog.topics.values().map(|t| describe(ctx, t)).collect()
    } else {
        request
            .topics
            .iter()
            .flatten()
            .map(|t| match &t.name {
                Some(name) => match catalog.topic(name.as_str()) {
                    Some(meta) => describe(ctx, meta),
                    None => {
                        let code = if validate_topic_name(name.as_str()).is_err() {
                            INVALID_TOPIC_EXCEPTION
                        } else {
                            UNKNOWN_TOPIC_OR_PARTITION
                        };
                        missing(v, Some(name.0.to_string()), t.topic_id, code)
                    }
                },
                None => match catalog.topic_by_id(t.topic_id) {
                    Some(meta) => describe(ctx, meta),
                    None => missing(v, None, t.topic_id, UNKNOWN_TOPIC_ID),
                },
            })
            .collect()
    };

    let (host, port) = ctx.shard.config.advertised();
    let node = BrokerId(ctx.shard.config.node_id);
    let mut response = MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(node)
            .with_host(sb(&host))
            .with_port(port)])
        .with_topics(topics);
    if v >= 1 {
        response.controller_id = node;
    }
    if v >= 2 {
        response.cluster_id = Some(sb(&cluster_id(&catalog)));
    }
    response
}

fn cluster_id(catalog: &Catalog) -> String {
    catalog.cluster_id.clone()
}

fn missing(v: i16, name: Option<String>, id: uuid::Uuid, code: i16) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default().with_error_code(code);
    t.name = Some(topic_name(name.as_deref().unwrap_or("")));
    if v >= 12 && name.is_none() {
        t.name = None;
    }
    if v >= 10 {
        t.topic_id = id;
    }
    t
}

fn describe(ctx: &Ctx, meta: &TopicMeta) -> MetadataResponseTopic {
    let v = ctx.api_version;
    let node = BrokerId(ctx.shard.config.node_id);
    let partitions = (0..meta.partition_shards.len() as i32)
        .map(|p| {
            let mut mp = MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(node)
                .with_replica_nodes(vec![node])
                .with_isr_nodes(vec![node]);
            if v >= 7 {
                mp.leader_epoch = 0;
            }
            mp
        })
        .collect();
    let mut t = MetadataResponseTopic::default().with_partitions(partitions);
    t.name = Some(topic_name(&meta.name));
    if v >= 10 {
        t.topic_id = meta.id;
    }
    t
}
