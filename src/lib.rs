//! # shardlog
//!
//! A Kafka-compatible message broker: thread-per-core, shared-nothing, on glommio
//! (io_uring). Unmodified Kafka clients connect by changing only `bootstrap.servers`.
//!
//! ## Layout (the codemap)
//!
//! | module | owns |
//! | --- | --- |
//! | [`config`] | the clap `Config`: every flag with unit, default, `SHARDLOG_*` env |
//! | [`protocol`] | no I/O: frames, headers, record batch view and scan, the records inside a batch (decode, rebuild a subset: compaction), bounded decompression, transaction markers (control batches), strings |
//! | [`net`] | listeners in Kafka's syntax (`listeners`: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); per-core accept loops, one per listener; `connection::serve`: the TLS handshake on SSL listeners (`tls`: a rustls connection driven by the connection's own tasks), frames in (`recv`: a non-blocking `recv`, and a readiness wait when it finds nothing; through the SASL exchange on SASL listeners; muted while the client is throttled by a quota), responses out in order (each counted against the client's quotas, its throttle written in); `limits`: connection counts, queued request bytes, idle timeout; `shard_nodes`: each shard as a broker node of its own (`--shard-ports`); `port_sharers`: other processes listening on a port with SO_REUSEPORT (read from /proc/net/tcp), refused at start |
//! | [`handlers`] | one file per Kafka API, one two-phase shape; the `apis!` table; `authz`: the one authorization helper every handler calls (`Ctx::authorize`) |
//! | [`security`] | the Kafka principal a connection acts as (`User:ANONYMOUS` on PLAINTEXT); `tls`: the keystore, truststore and client authentication read into one rustls `ServerConfig`, and a client certificate's principal (`x500`: the subject in Java's RFC 2253 form); the SASL exchange of a connection (KIP-152, KIP-368 re-authentication), PLAIN (RFC 4616) and its users file, SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and the stored credentials; `acl`: Kafka's ACL model (bindings, filters) and the authorizer's decision (StandardAuthorizer), pure |
//! | [`shard`] | per-core `Shard`; `ShardMessage`s; control plane; group runtime; transaction coordinator runtime (`__transaction_state` logs, markers); the internal topics' logs (`InternalLogs`: created on first write, reopened after a failed one); retention pass; producer-id expiration; log cleaner task |
//! | [`log`] | `PartitionLog`: segments (background read-ahead, zero fill ahead of small writes, retention and the retiring of deleted segments off the shard, roll by age, the DeleteRecords start checkpoint, compaction), indexes, the aborted-transaction index and last stable offset, batch cache and its pooled arenas and read buffers, writes gathered from the arenas, recovery and recovery points, producers |
//! | [`coordinator`] | the consumer group coordinator, a pure state machine; its records in Kafka's `__consumer_offsets` schemas; KIP-848 topic regexes; transactional offsets (TxnOffsetCommit, pending until a transaction marker) |
//! | [`txn`] | the transaction coordinator (KIP-98, KIP-360, KIP-890), a pure state machine: InitProducerId, AddPartitionsToTxn / AddOffsetsToTxn and the KIP-890 verification, EndTxn and its markers, timeouts, transactional id expiration, Describe/ListTransactions; its records in Kafka's `__transaction_state` schemas |
//! | [`metadata`] | the topic catalog: names, ids, partitions, placement, the internal topic `__consumer_offsets` and how groups map to it, the SCRAM credentials, the ACLs, the client quotas; persisted |
//! | [`quota`] | client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546): entities and the stored quotas, AlterClientQuotas' validation and DescribeClientQuotas' filters (pure), which quota applies to a client, the windowed rate and throttle time (pure), a shard's rates (`ShardQuotas`), `throttle_time_ms` in responses |
//! | [`metrics`] | per-shard counters and latency histograms (thread-local, no atomics), the snapshot a scrape gathers over the mesh, the Prometheus text exposition and the `--metrics-listen` HTTP endpoint (`/metrics`, `/healthz`, `/readyz`) |
//! | [`top`] | `shardlog top`: a live terminal view of a broker read from its metrics endpoint (rates between two scrapes) |
//! | [`topic_config`] | topic config names, defaults, validation, resolved values |
//! | [`broker_config`] | the broker configs shardlog describes (Kafka name, type, default, flag), which can change (KIP-226), validation, the layered broker defaults and their synonyms |
//! | [`config_meta`] | DescribeConfigs' words for a config: source, type, synonyms |
//! | [`config_docs`] | the documentation text of every described topic and broker config |
//! | [`config_ops`] | what AlterConfigs / IncrementalAlterConfigs do to a topic's overrides (pure) |
//! | [`error`] | Kafka error codes (`ResponseError`) and internal errors' mapping |
//! | [`clock`] | the wall clock in ms |
//! | [`shutdown`] | the SIGINT/SIGTERM flag, the cross-shard start and drain barriers |
//! | [`crash`] | the panic hook: log the request being served, abort |
//! | [`watchdog`] | per-shard heartbeats and the thread that reports (and past a limit aborts on) a shard that stopped running its tasks |
//!
//! `ARCHITECTURE.md` follows a Produce and a Fetch through these modules.
//!
//! ## Invariants
//!
//! - Only the owning shard reads or writes a partition's log. No `Arc<Mutex<_>>`, no
//!   `RefCell` borrow held across `.await`, on the data path.
//! - Cross-core traffic is only [`shard::ShardMessage`], never closures; control
//!   requests can only be addressed to the control shard.
//! - [`protocol`] does no I/O and never imports glommio.
//! - Every type that lives on a shard says in its doc comment which core(s) it lives on.
//! - Responses on one connection leave in the order the requests arrived; `acks=0`
//!   produce gets no response at all.
//! - Every size the network hands us (frame length, array count, string length, batch
//!   length) is checked against a limit before anything is allocated.
//! - Kafka error codes come only from [`error`] (`ResponseError`), never as numbers.
//! - Decisions are separated from I/O where cheap: the group and transaction
//!   coordinators are state machines fed with requests and the current time; the batch
//!   scan used by recovery works on a byte slice.

pub mod broker_config;
pub mod clock;
pub mod config;
pub mod config_docs;
pub mod config_meta;
pub mod config_ops;
pub mod coordinator;
pub mod crash;
pub mod error;
pub mod handlers;
pub mod log;
pub mod metadata;
pub mod metrics;
pub mod net;
pub mod protocol;
pub mod quota;
pub mod security;
pub mod shard;
pub mod shutdown;
pub mod top;
pub mod topic_config;
pub mod txn;
pub mod watchdog;
