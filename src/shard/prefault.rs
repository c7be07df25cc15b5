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

/// Faults in buffers until the pool holds the budget's worth, or shutdown; returns how
/// many buffers it added.
pub async fn run(shard: Rc<Shard>, stop: Shutdown) -> usize {
    let started = std::time::Instant::now();
    let mut added = 0;
    while !stop.is_requested() && shard.cache.borrow().prefault_one() {
        added += 1;
        glommio::executor().yield_task_queue_now().await;
    }
    let (buffer_bytes, budget) = {
        let cache = shard.cache.borrow();
        (cache.arena_bytes(), cache.budget())
    };
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
