//! shard
