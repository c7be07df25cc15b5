//! One file per Kafka API, each the same shape: decode -> validate -> route ->
//! respond. Handlers never touch sockets or files.
//!
//! # The handler shape
//!
//! Every API module has
//! - `pub const VERSIONS: Versions`, the inclusive version range it implements, and
//! - `pub async fn handle(ctx: &Ctx, request: XRequest) -> Outcome<XResponse>`.
//!
//! `handle` is the first phase of a request (Redpanda's "dispatched"): it decodes,
//! validates and *starts* the work, including cross-shard work: a request for another
//! shard is queued on that shard's mesh channel here, in request order, and each shard
//! executes the messages from one peer in the order they were sent
//! (`shard::serve::serve_mesh`), so appends get their offsets in request order. It may
//! await room in a mesh channel, never another shard's answer: what must wait is
//! returned as [`Outcome::Later`], the second phase ("produced"), which the connection
//! awaits in request order while it goes on reading and dispatching pipelined requests.
//! A request whose effect the next ones must see (a catalog change) returns
//! [`Outcome::Serial`] instead: the connection dispatches nothing else until it is done;
//! and those that change the catalog under earlier requests ([`waits_for_earlier`])
//! are dispatched only once every earlier response has been written.
//!
//! # The table
//!
//! The `apis!` macro below is the only list of APIs. It generates both [`REGISTRY`] (what
//! ApiVersions advertises) and the dispatch `match` (what is served), so the two
//! cannot drift, and declares the handler modules. Adding an API is one new file plus
//! one line in that table; an API that needs new work on other shards also needs a
//! message in `shard::messages`, and a group API needs the coordinator to serve it.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::protocol::frame::Request;
use crate::shard::Shard;

mod acl_wire;
mod alter_config_route;
mod authz;
mod group_route;
mod txn_route;

#[cfg(test)]
mod tests;

/// The inclusive version range a handler implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub min: i16,
    pub max: i16,
}

impl Versions {
    /// Whether `version` is within the range.
    pub fn contains(self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }
}

/// What the connection knows about the request being handled. Cloned (cheaply: `Rc`s)
/// into a second phase that must authorize.
#[derive(Clone)]
pub struct Ctx {
    pub shard: Rc<Shard>,
    pub api_version: i16,
    pub client_id: String,
    /// The client's address as text (for group member metadata and logs).
    pub client_host: Rc<str>,
    /// Who the connection authenticated as (`User:ANONYMOUS` on PLAINTEXT).
    pub principal: Rc<crate::security::KafkaPrincipal>,
    /// The listener the connection came in through: its protocol and the address
    /// Metadata, FindCoordinator and DescribeCluster advertise to this client.
    pub listener: Rc<crate::net::listeners::Listener>,
}

/// The second phase of a request. It yields `None` when the shard that owed the
/// answer dropped the request (shutdown): the connection then closes, since a
/// response can no longer be sent in order.
pub type Deferred<R> = Pin<Box<dyn Future<Output = Option<R>>>>;

/// What the first phase of a request produced.
pub enum Outcome<R> {
    /// The response, ready now.
    Ready(R),
    /// The response once the started work completes.
    Later(Deferred<R>),
    /// Like `Later`, but the connection dispatches nothing else until this completes:
    /// for requests whose effect the next requests must see (catalog changes, topic
    /// auto-creation). Kafka processes a connection's requests one at a time; shardlog
    /// overlaps them except across these.
    Serial(Deferred<R>),
    /// No response at all (acks=0 produce). The connection still waits for the work
    /// (the appends) to finish before it forgets the request, so the request's bytes
    /// stay counted in the connection's and the shard's budgets until then
    /// ([`crate::net::limits`]): a fast acks=0 producer is held back like any other.
    /// The work yields the error codes (other than NONE) the response would have
    /// carried: with any, the connection is closed, as Kafka does, so that the client
    /// notices and refreshes its metadata.
    Silent(Pin<Box<dyn Future<Output = Vec<i16>>>>),
}

impl<R: 'static> Outcome<R> {
    /// A second phase that always yields a response.
    pub fn later(response: impl Future<Output = R> + 'static) -> Outcome<R> {
        Outcome::Later(Box::pin(async move { Some(response.await) }))
    }

    /// A second phase that the connection waits for before its next request.
    pub fn serial(response: impl Future<Output = R> + 'static) -> Outcome<R> {
        Outcome::Serial(Box::pin(async move { Some(response.await) }))
    }

    /// The same outcome with the response converted by `f`.
    pub fn map<T: 'static>(self, f: impl FnOnce(R) -> T + 'static) -> Outcome<T> {
        match self {
            Outcome::Ready(r) => Outcome::Ready(f(r)),
            Outcome::Later(later) => Outcome::Later(Box::pin(async move { later.await.map(f) })),
            Outcome::Serial(later) => Outcome::Serial(Box::pin(async move { later.await.map(f) })),
            Outcome::Silent(done) => Outcome::Silent(done),
        }
    }
}

/// Why a request ends the connection (logged by the connection with this reason).
#[derive(Debug)]
pub enum Refusal {
    UnknownApiKey(i16),
    UnsupportedVersion { api: ApiKey, version: i16 },
    MalformedBody { api: ApiKey, version: i16, reason: String },
}

/// A dispatched request: its outcome and how to encode the response.
pub struct Dispatched {
    pub api: ApiKey,
    /// The version the response is encoded in: the request's, except for KIP-511's
    /// fallback (see [`api_versions::fallback`]).
    pub response_version: i16,
    pub outcome: Outcome<ResponseKind>,
}

/// Generates the API table: `Variant => module` where `Variant` names the API in
/// `ApiKey`, `RequestKind` and `ResponseKind` alike, and `module` is its handler file
/// (declared here too).
macro_rules! apis {
    ($($api:ident => $module:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every implemented API with its versions: the source of the ApiVersions table.
        pub const REGISTRY: &[(ApiKey, Versions)] = &[$((ApiKey::$api, $module::VERSIONS)),*];

        /// Runs the handler of a decoded request; `None` for an API not in the table.
        async fn route(ctx: &Ctx, request: RequestKind) -> Option<Outcome<ResponseKind>> {
            match request {
                $(RequestKind::$api(r) => {
                    Some($module::handle(ctx, r).await.map(ResponseKind::$api))
                })*
                _ => None,
            }
        }

        /// The API of a response (tests).
        #[cfg(test)]
        fn response_api(response: &ResponseKind) -> Option<ApiKey> {
            match response {
                $(ResponseKind::$api(_) => Some(ApiKey::$api),)*
                _ => None,
            }
        }

        /// A request of `api` with every field at its default (tests, and the seeds of
        /// the fuzz targets: `examples/fuzz_seeds.rs`).
        #[doc(hidden)]
        pub fn default_request(api: ApiKey) -> Option<RequestKind> {
            match api {
                $(ApiKey::$api => Some(RequestKind::$api(Default::default())),)*
                _ => None,
            }
        }
    };
}

apis! {
    Produce => produce,
    Fetch => fetch,
    ListOffsets => list_offsets,
    Metadata => metadata,
    OffsetCommit => offset_commit,
    OffsetFetch => offset_fetch,
    FindCoordinator => find_coordinator,
    JoinGroup => join_group,
    Heartbeat => heartbeat,
    LeaveGroup => leave_group,
    SyncGroup => sync_group,
    DescribeGroups => describe_groups,
    ListGroups => list_groups,
    ApiVersions => api_versions,
    CreateTopics => create_topics,
    DeleteTopics => delete_topics,
    DeleteRecords => delete_records,
    OffsetForLeaderEpoch => offset_for_leader_epoch,
    InitProducerId => init_producer_id,
    TxnOffsetCommit => txn_offset_commit,
    DescribeAcls => describe_acls,
    CreateAcls => create_acls,
    DeleteAcls => delete_acls,
    DescribeConfigs => describe_configs,
    AlterConfigs => alter_configs,
    CreatePartitions => create_partitions,
    DeleteGroups => delete_groups,
    OffsetDelete => offset_delete,
    DescribeCluster => describe_cluster,
    ConsumerGroupHeartbeat => consumer_group_heartbeat,
    ConsumerGroupDescribe => consumer_group_describe,
    DescribeQuorum => describe_quorum,
    DescribeLogDirs => describe_log_dirs,
    IncrementalAlterConfigs => incremental_alter_configs,
    AlterPartitionReassignments => alter_partition_reassignments,
    ListPartitionReassignments => list_partition_reassignments,
    ElectLeaders => elect_leaders,
    DescribeTopicPartitions => describe_topic_partitions,
    DescribeProducers => describe_producers,
    AddPartitionsToTxn => add_partitions_to_txn,
    AddOffsetsToTxn => add_offsets_to_txn,
    EndTxn => end_txn,
    WriteTxnMarkers => write_txn_markers,
    DescribeTransactions => describe_transactions,
    ListTransactions => list_transactions,
    SaslHandshake => sasl_handshake,
    SaslAuthenticate => sasl_authenticate,
    DescribeUserScramCredentials => describe_user_scram_credentials,
    AlterUserScramCredentials => alter_user_scram_credentials,
    DescribeClientQuotas => describe_client_quotas,
    AlterClientQuotas => alter_client_quotas,
}

/// APIs that change the catalog under the requests before them on the same connection
/// (a deleted topic would vanish under an earlier Fetch still in its second phase):
/// the connection dispatches one only after every earlier response was written. Their
/// handlers also return [`Outcome::Serial`], so later requests see their effect; with
/// both, they are processed one at a time, as Kafka processes every request.
pub fn waits_for_earlier(api: ApiKey) -> bool {
    matches!(api, ApiKey::CreateTopics | ApiKey::DeleteTopics | ApiKey::CreatePartitions)
}

/// The versions of `api` this broker implements, if any.
pub fn versions_of(api: ApiKey) -> Option<Versions> {
    REGISTRY.iter().find(|(k, _)| *k == api).map(|(_, v)| *v)
}

/// Runs the first phase of a request: decode, validate, start the work. Whatever
/// must keep the request order (an append queued to its owner, or run here when this
/// shard owns the partition) happens before this returns. An unknown API key, an
/// unsupported version (except ApiVersions, KIP-511) or an undecodable body is a
/// [`Refusal`]: the connection closes.
pub async fn dispatch(ctx: &Ctx, request: Request) -> Result<Dispatched, Refusal> {
    let Some(api) = request.api else {
        return Err(Refusal::UnknownApiKey(request.api_key));
    };
    let version = request.api_version;
    if !versions_of(api).is_some_and(|v| v.contains(version)) {
        return match api_versions::fallback(api, version) {
            Some((response_version, response)) => Ok(Dispatched {
                api,
                response_version,
                outcome: Outcome::Ready(ResponseKind::ApiVersions(response)),
            }),
            None => Err(Refusal::UnsupportedVersion { api, version }),
        };
    }
    let mut body = request.body;
    let decoded = RequestKind::decode(api, &mut body, version)
        .map_err(|e| Refusal::MalformedBody { api, version, reason: e.to_string() })?;
    // `route` covers every API of `REGISTRY`, so `None` cannot follow the check above.
    let outcome = route(ctx, decoded).await.ok_or(Refusal::UnsupportedVersion { api, version })?;
    Ok(Dispatched { api, response_version: version, outcome })
}
