//! Shards: one per core, each owning a distinct set of partition logs.
//!
//! - [`messages`]: the typed [`ShardRequest`] enum, the only thing that crosses cores.
//! - [`state`]: [`Shard`], the per-core state (catalog copy, logs, mesh senders).
//! - [`serve`]: the loop that executes requests arriving from other shards.
//! - [`control`]: catalog changes and producer-id allocation, run on shard 0 only.
//! - [`groups`]: the group coordinator runtime of each shard and its internal logs.

pub mod control;
pub mod groups;
pub mod messages;
pub mod serve;
pub mod state;

pub use messages::{ShardId, ShardRequest};
pub use state::Shard;
