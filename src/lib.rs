//! # shardlog
//!
//! A Kafka-compatible message broker: thread-per-core, shared-nothing, on glommio
//! (io_uring). Unmodified Kafka clients connect by changing only `bootstrap.servers`.
//!
//! ## Layout (the codemap)
//!
//! | module | owns |
//! | --- | --- |
//! | [`config`] | the clap `Config`: every flag with its unit, default and `SHARDLOG_*` env fallback |
//! | [`protocol`] | no I/O: frame limits, request header decode, the record batch header view |
//! | [`net`] | per-core listener and `Connection`: frames in, responses out in request order |
//! | [`handlers`] | one file per Kafka API: decode -> validate -> route -> respond; the API registry |
//! | [`shard`] | `ShardTable` (partition -> owning shard) and the typed cross-core messages |
//! | [`log`] | `PartitionLog`: segments, offset and time index, batch cache, recovery, producer state |
//! | [`metadata`] | the topic catalog: names, ids, partitions, configs, placement; persisted |
//! | [`topic_config`] | topic config names, defaults, validation, and the resolved per-topic values |
//! | [`shutdown`] | the SIGINT/SIGTERM flag and the cross-shard drain barrier |
//! | [`coordinator`] | consumer group coordinator and committed offsets |
//!
//! ## Invariants
//!
//! - Only the owning shard reads or writes a partition's log. No `Arc<Mutex<_>>`, no
//!   `RefCell` borrow held across `.await`, on the data path.
//! - Cross-core traffic is only the [`shard`] module's message enums, never closures.
//! - [`protocol`] does no I/O and never imports glommio.
//! - Every type that lives on a shard says in its doc comment which core(s) it lives on.
//! - Responses on one connection leave in the order the requests arrived; `acks=0`
//!   produce gets no response at all.
//! - Every size the network hands us (frame length, array count, string length, batch
//!   length) is checked against a limit before anything is allocated.
//! - Decisions are separated from I/O where cheap: the group coordinator is a state
//!   machine fed with requests and the current time; the batch scan used by recovery
//!   works on a byte slice.

pub mod clock;
pub mod config;
pub mod coordinator;
pub mod error;
pub mod handlers;
pub mod log;
pub mod metadata;
pub mod net;
pub mod protocol;
pub mod shard;
pub mod shutdown;
pub mod topic_config;
