//! [`ShardSnapshot`]: what one shard reports to a scrape, made on that shard.

use std::rc::Rc;

use super::shard::Counters;
use crate::coordinator::GroupSummary;
use crate::shard::transactions::TxnSummary;
use crate::shard::Shard;

/// One shard's counters plus the gauges read at scrape time. Made on the shard it
/// describes and sent (it is `Send`) to the shard serving the scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardSnapshot {
    /// The shard described (its index in the mesh).
    pub shard: usize,
    /// Its counters since start.
    pub counters: Counters,
    /// Data partitions this shard owns with an open log.
    pub partitions: u64,
    /// Owned partitions whose log could not be opened (served as KAFKA_STORAGE_ERROR).
    pub offline_partitions: u64,
    /// Bytes of record batches in those logs (data partitions only).
    pub log_bytes: u64,
    /// Segment files of those logs.
    pub segments: u64,
    /// Bytes of batches in the shard's batch cache.
    pub cache_used_bytes: u64,
    /// The shard's share of `--cache-bytes`, bytes.
    pub cache_budget_bytes: u64,
    /// Bytes of idle buffers the shard's pool holds for its cache (faulted in, reused
    /// before anything new is allocated; see `log::arena::ArenaPool`).
    pub cache_idle_bytes: u64,
    /// Buffers of an arena's or read window's size the shard's pool allocated since
    /// start because no idle one fitted (page faults on the data path; see
    /// `log::arena::ArenaPool::allocated`).
    pub cache_allocated_buffers: u64,
    /// The groups this shard coordinates.
    pub groups: Vec<GroupSummary>,
    /// The transactional ids this shard coordinates, by state, and its counters.
    pub transactions: TxnSummary,
    /// `(topic, partition, high watermark)` of the data partitions this shard owns,
    /// for consumer lag.
    pub high_watermarks: Vec<(String, i32, i64)>,
}

/// Reads this shard's counters and gauges (on `shard`'s own core).
pub fn take(shard: &Rc<Shard>) -> ShardSnapshot {
    let counters = super::read(|m| {
        m.take_executor_stats();
        m.counters()
    });
    let logs = shard.owned_logs();
    let (cache_used_bytes, cache_budget_bytes, cache_idle_bytes, cache_allocated_buffers) = {
        let cache = shard.cache.borrow();
        let idle = cache.idle_bytes() as u64;
        (cache.used() as u64, cache.budget() as u64, idle, cache.allocated_buffers())
    };
    ShardSnapshot {
        shard: shard.id,
        counters,
        partitions: logs.len() as u64,
        offline_partitions: shard.open_failures().len() as u64,
        log_bytes: logs.iter().map(|(_, l)| l.log.size_bytes()).sum(),
        segments: logs.iter().map(|(_, l)| l.log.segment_count() as u64).sum(),
        cache_used_bytes,
        cache_budget_bytes,
        cache_idle_bytes,
        cache_allocated_buffers,
        groups: shard.groups.summaries(),
        transactions: shard.txns.summary(),
        high_watermarks: logs
            .iter()
            .map(|((topic, p), owned)| (topic.clone(), *p, owned.log.high_watermark()))
            .collect(),
    }
}
