//! Faulting in the shard's batch cache memory at start-up (`--cache-prefault`): a
//! short-lived thread per shard, pinned to the shard's CPU and at the lowest priority
//! (nice 19), that fills the shard's buffer pool with buffers of a read-ahead window's size
//! (see [`crate::log::cache::ShardCache::prefault_buffer_bytes`]) until they total the
//! cache budget (see [`crate::log::arena::ArenaPool::prefault_one`]), then exits. Not a
//! task on the shard's executor: a task that is always runnable keeps the executor from
//! polling for I/O until it is preempted, which delayed every request during the
//! prefault (a produce took up to 200 ms on a loaded machine); the kernel's scheduler
//! instead runs the shard's thread whenever it is woken. Stops at shutdown.

use std::rc::Rc;

use super::state::Shard;
use crate::shutdown::Shutdown;

/// Starts the prefault thread of this shard (unless `--cache-prefault false`, or the
/// cache can hold no data: a budget or partition cap of 0). Called on the shard's own
/// thread: the pool and the CPU are this thread's.
pub fn spawn(shard: Rc<Shard>, stop: Shutdown) {
    if !shard.config.cache_prefault {
        return;
    }
    let (buffer_bytes, budget, pool) = {
        let cache = shard.cache.borrow();
        if !cache.may_prefault() {
            return;
        }
        (cache.prefault_buffer_bytes(), cache.budget(), crate::log::arena::shard_pool())
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
    let cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
    let id = shard.id;
    let started = std::time::Instant::now();
    let run = move || {
        if let Some(cpus) = cpus {
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &cpus);
        }
        // SAFETY: setpriority only changes this thread's (who 0 = the caller) nice value.
        unsafe { nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, 19) };
        let mut added = 0;
        while !stop.is_requested() && (added + 1) * buffer_bytes <= limit {
            if !pool.prefault_one(buffer_bytes) {
                break;
            }
            added += 1;
        }
        tracing::info!(
            shard = id,
            buffers = added,
            buffer_bytes,
            budget,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "batch cache memory faulted in"
        );
    };
    if let Err(e) = std::thread::Builder::new().name(format!("prefault-{id}")).spawn(run) {
        tracing::warn!(shard = id, error = %e, "starting the cache prefault failed");
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
