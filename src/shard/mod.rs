//! Shards: one per core, each owning a distinct set of partition logs.
//!
//! - [`messages`]: the typed [`ShardMessage`]s (data, control, catalog), the only
//!   things that cross cores.
//! - [`state`]: [`Shard`], the per-core state (catalog copy, logs, mesh senders).
//! - [`serve`]: the loop that executes requests arriving from other shards.
//! - [`control`]: catalog changes and producer-id allocation, run on the control
//!   shard ([`CONTROL_SHARD`]) only.
//! - [`groups`]: the group coordinator runtime of each shard and its internal logs.
//! - [`transactions`]: the transaction coordinator runtime of each shard and its
//!   `__transaction_state` logs; transaction markers go out as `WriteTxnMarkers`.
//! - [`append_barrier`]: group responses wait for the group-state writes started
//!   before them.
//! - [`retention`]: the periodic retention pass over the shard's partitions.
//! - [`producer_expiry`]: forgets idempotent producers idle for `producer.id.expiration.ms`.
//! - [`prefault`]: faults in the batch cache's memory at start-up (`--cache-prefault`),
//!   on a short-lived low-priority thread pinned to the shard's CPU.
//! - [`cleaner`]: the log cleaner (compaction) of the shard's compacted partitions and
//!   offsets logs, in a low-priority task queue.

pub mod append_barrier;
pub mod cleaner;
pub mod control;
pub mod groups;
pub mod internal_logs;
pub mod messages;
pub mod prefault;
pub mod producer_expiry;
pub mod retention;
pub mod serve;
pub mod state;
pub mod transactions;

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub use messages::{ControlRequest, DataRequest, ShardId, ShardMessage, CONTROL_SHARD};
pub use state::Shard;
