//! Faulting in the shard's batch cache memory at start-up (`--cache-prefault`): a
//! background task, in a task queue of its own with a small share of the core, that
//! fills the shard's buffer pool with arena buffers until they total the cache budget
//! (see [`crate::log::arena::ArenaPool::prefault_one`]). Each buffer (4 MiB by default)
//! is one step of about a millisecond; the task yields its queue after each, so requests
//! arriving meanwhile are served first, and it stops at shutdown.

use std::rc::Rc;

use glommio::{Latency, Shares};

use super::state::Shard;
use crate::shutdown::Shutdown;

/// The task's share of the core against the default queue's 1000.
const PREFAULT_SHARES: usize = 50;

/// Starts the prefault task of this shard (unless `--cache-prefault false`).
pub fn spawn(shard: Rc<Shard>, stop: Shutdown) {
    if !shard.config.cache_prefault {
        return;
    }
    let tq = glommio::executor().create_task_queue(
        Shares::Static(PREFAULT_SHARES),
        Latency::NotImportant,
        "cache-prefault",
    );
    match glommio::spawn_local_into(run(shard, stop), tq) {
        Ok(t) => {
            t.detach();
        }
        Err(e) => tracing::warn!(error = %e, "starting the cache prefault failed"),
    }
}

/// Bytes one shard faults in ahead of use: its cache budget, but at most its share
/// (over `shards`) of half the memory available (`MemAvailable`, `None`: unknown) when
/// it starts. A budget beyond what the machine can hold then fails as it did before
/// the prefault, when data fills it, instead of making the kernel kill the broker at
/// start-up; and brokers started side by side leave each other room.
pub fn prefault_bytes(budget: usize, shards: usize, available: Option<usize>) -> usize {
    available.map_or(budget, |a| budget.min(a / 2 / shards.max(1)))
}

/// Faults in buffers until the pool holds the budget's worth (at most
/// [`prefault_bytes`]), or shutdown; returns how many buffers it added.
pub async fn run(shard: Rc<Shard>, stop: Shutdown) -> usize {
    let started = std::time::Instant::now();
    let (buffer_bytes, budget) = {
        let cache = shard.cache.borrow();
        (cache.arena_bytes(), cache.budget())
    };
    let limit = prefault_bytes(budget, shard.nr_shards, crate::config::available_memory());
    if limit < budget {
        tracing::warn!(
            shard = shard.id,
            budget,
            limit,
            "batch cache budget exceeds this shard's share of half the available memory; \
             faulting in only that much ahead of use"
        );
    }
    let mut added = 0;
    while !stop.is_requested()
        && (added + 1) * buffer_bytes <= limit
        && shard.cache.borrow().prefault_one()
    {
        added += 1;
        glommio::executor().yield_task_queue_now().await;
    }
    tracing::info!(
        shard = shard.id,
        buffers = added,
        buffer_bytes,
        budget,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "batch cache memory faulted in"
    );
    added
}

#[cfg(test)]
mod tests {
    use super::prefault_bytes;

    #[test]
    fn the_budget_unless_beyond_a_share_of_half_the_available_memory() {
        const GIB: usize = 1 << 30;
        assert_eq!(prefault_bytes(GIB / 2, 2, Some(20 * GIB)), GIB / 2);
        assert_eq!(prefault_bytes(GIB / 2, 2, None), GIB / 2, "unknown: the budget");
        // 3 GiB available, 2 shards: 768 MiB each at most.
        assert_eq!(prefault_bytes(4 * GIB, 2, Some(3 * GIB)), 768 << 20);
        assert_eq!(prefault_bytes(GIB, 0, Some(GIB)), GIB / 2, "no shard count: one");
        assert_eq!(prefault_bytes(GIB, 4, Some(0)), 0);
    }
}
