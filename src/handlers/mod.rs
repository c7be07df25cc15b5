//! One file per Kafka API, each the same shape: decode -> validate -> route ->
//! respond. Handlers never touch sockets or files.
//!
//! [`REGISTRY`] lists every implemented API with the version range its handler
//! declares; ApiVersions is derived from it, so it never advertises what is not
//! implemented.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::protocol::frame::Request;
use crate::shard::Shard;

pub mod api_versions;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod fetch;
pub mod find_coordinator;
mod group_route;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod produce;
pub mod sync_group;
mod util;

pub use util::now_ms;

/// The inclusive version range a handler implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub min: i16,
    pub max: i16,
}

/// Every implemented API and its versions: the source of the ApiVersions table.
pub const REGISTRY: &[(ApiKey, Versions)] = &[
    (ApiKey::Produce, produce::VERSIONS),
    (ApiKey::Fetch, fetch::VERSIONS),
    (ApiKey::ListOffsets, list_offsets::VERSIONS),
    (ApiKey::Metadata, metadata::VERSIONS),
    (ApiKey::ApiVersions, api_versions::VERSIONS),
    (ApiKey::CreateTopics, create_topics::VERSIONS),
    (ApiKey::DeleteTopics, delete_topics::VERSIONS),
    (ApiKey::InitProducerId, init_producer_id::VERSIONS),
    (ApiKey::DescribeConfigs, describe_configs::VERSIONS),
    (ApiKey::CreatePartitions, create_partitions::VERSIONS),
    (ApiKey::DescribeCluster, describe_cluster::VERSIONS),
    (ApiKey::FindCoordinator, find_coordinator::VERSIONS),
    (ApiKey::JoinGroup, join_group::VERSIONS),
    (ApiKey::SyncGroup, sync_group::VERSIONS),
    (ApiKey::Heartbeat, heartbeat::VERSIONS),
    (ApiKey::LeaveGroup, leave_group::VERSIONS),
    (ApiKey::OffsetCommit, offset_commit::VERSIONS),
    (ApiKey::OffsetFetch, offset_fetch::VERSIONS),
    (ApiKey::ListGroups, list_groups::VERSIONS),
    (ApiKey::DescribeGroups, describe_groups::VERSIONS),
    (ApiKey::DeleteGroups, delete_groups::VERSIONS),
    (ApiKey::OffsetDelete, offset_delete::VERSIONS),
    (ApiKey::ConsumerGroupHeartbeat, consumer_group_heartbeat::VERSIONS),
    (ApiKey::ConsumerGroupDescribe, consumer_group_describe::VERSIONS),
];

/// The versions of `api` this broker implements, if any.
pub fn versions_of(api: ApiKey) -> Option<Versions> {
    REGISTRY.iter().find(|(k, _)| *k == api).map(|(_, v)| *v)
}

/// What the connection knows about the request being handled.
pub struct Ctx {
    pub shard: Rc<Shard>,
    pub api_version: i16,
    pub client_id: String,
    /// The client's address as text (for group member metadata and logs).
    pub client_host: String,
}

/// The second phase of a request whose response is not ready when its dispatch
/// ends (produce waiting for the write, fetch long-polling). `None` = no response
/// (acks=0 produce).
pub type Deferred = Pin<Box<dyn Future<Output = Option<ResponseKind>>>>;

/// What dispatching one request produced.
pub enum Outcome {
    Respond(ResponseKind),
    Later(Deferred),
    /// Send nothing (acks=0 produce).
    Silent,
}

/// Why a request ends the connection (logged by the connection with this reason).
#[derive(Debug)]
pub enum Refusal {
    UnknownApiKey(i16),
    UnsupportedVersion { api: ApiKey, version: i16 },
    MalformedBody { api: ApiKey, version: i16, reason: String },
}

/// Runs the first phase of a request: decode, validate and route. Whatever must keep
/// the request order (offset assignment) happens before this returns.
pub async fn dispatch(ctx: Ctx, request: Request) -> Result<Outcome, Refusal> {
    let Some(api) = request.api else {
        return Err(Refusal::UnknownApiKey(request.api_key));
    };
    let version = request.api_version;
    let supported = versions_of(api).is_some_and(|v| v.min <= version && version <= v.max);
    if !supported {
        if api == ApiKey::ApiVersions {
            // KIP-511: answer with UNSUPPORTED_VERSION and our table, in v0 format.
            return Ok(Outcome::Respond(ResponseKind::ApiVersions(api_versions::unsupported())));
        }
        return Err(Refusal::UnsupportedVersion { api, version });
    }
    let mut body = request.body;
    let decoded = RequestKind::decode(api, &mut body, version)
        .map_err(|e| Refusal::MalformedBody { api, version, reason: e.to_string() })?;
    let respond = |r| Ok(Outcome::Respond(r));
    match decoded {
        RequestKind::ApiVersions(r) => {
            respond(ResponseKind::ApiVersions(api_versions::handle(&ctx, r)))
        }
        RequestKind::Metadata(r) => {
            respond(ResponseKind::Metadata(metadata::handle(&ctx, r).await))
        }
        RequestKind::Produce(r) => Ok(produce::handle(&ctx, r).await),
        RequestKind::Fetch(r) => Ok(fetch::handle(ctx, r).await),
        RequestKind::ListOffsets(r) => {
            respond(ResponseKind::ListOffsets(list_offsets::handle(&ctx, r).await))
        }
        RequestKind::CreateTopics(r) => {
            respond(ResponseKind::CreateTopics(create_topics::handle(&ctx, r).await))
        }
        RequestKind::DeleteTopics(r) => {
            respond(ResponseKind::DeleteTopics(delete_topics::handle(&ctx, r).await))
        }
        RequestKind::CreatePartitions(r) => {
            respond(ResponseKind::CreatePartitions(create_partitions::handle(&ctx, r).await))
        }
        RequestKind::InitProducerId(r) => {
            respond(ResponseKind::InitProducerId(init_producer_id::handle(&ctx, r).await))
        }
        RequestKind::DescribeConfigs(r) => {
            respond(ResponseKind::DescribeConfigs(describe_configs::handle(&ctx, r)))
        }
        RequestKind::DescribeCluster(r) => {
            respond(ResponseKind::DescribeCluster(describe_cluster::handle(&ctx, r)))
        }
        RequestKind::FindCoordinator(r) => {
            respond(ResponseKind::FindCoordinator(find_coordinator::handle(&ctx, r)))
        }
        RequestKind::JoinGroup(r) => Ok(join_group::handle(&ctx, r).await),
        RequestKind::SyncGroup(r) => Ok(sync_group::handle(&ctx, r).await),
        RequestKind::Heartbeat(r) => Ok(heartbeat::handle(&ctx, r).await),
        RequestKind::LeaveGroup(r) => Ok(leave_group::handle(&ctx, r).await),
        RequestKind::OffsetCommit(r) => Ok(offset_commit::handle(&ctx, r).await),
        RequestKind::OffsetFetch(r) => Ok(offset_fetch::handle(&ctx, r).await),
        RequestKind::ListGroups(r) => Ok(list_groups::handle(&ctx, r).await),
        RequestKind::DescribeGroups(r) => Ok(describe_groups::handle(&ctx, r).await),
        RequestKind::DeleteGroups(r) => Ok(delete_groups::handle(&ctx, r).await),
        RequestKind::OffsetDelete(r) => Ok(offset_delete::handle(&ctx, r).await),
        RequestKind::ConsumerGroupHeartbeat(r) => {
            Ok(consumer_group_heartbeat::handle(&ctx, r).await)
        }
        RequestKind::ConsumerGroupDescribe(r) => Ok(consumer_group_describe::handle(&ctx, r).await),
        _ => Err(Refusal::UnsupportedVersion { api, version }),
    }
}
