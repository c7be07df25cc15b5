//! Clean shutdown across shards. The main thread waits for SIGINT/SIGTERM and sets
//! a flag shared by every shard; each shard notices it (polled every
//! [`POLL_MS`] ms by its listener, which tells its connections through a
//! [`LocalStop`]), stops accepting, lets its connections finish their in-flight
//! requests, then waits until *every* shard has drained before closing its logs,
//! since a draining connection may still append to another shard's partitions.
//!
//! Start-up has its barrier too ([`Startup`]): no shard listens before every shard has
//! recovered its logs, so a client that connects early is refused by the kernel
//! rather than accepted by a shard that then cannot serve its partitions.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a shard looks at the shutdown flag, in ms.
pub const POLL_MS: u64 = 50;

/// The process-wide shutdown state; cheap to clone, shared by all shards.
#[derive(Clone, Default)]
pub struct Shutdown {
    requested: Arc<AtomicBool>,
    drained: Arc<AtomicUsize>,
}

impl Shutdown {
    /// Asks every shard to stop (called from the signal thread).
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
    }

    /// Whether shutdown was requested.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Resolves once shutdown is requested.
    pub async fn requested(self) {
        while !self.is_requested() {
            glommio::timer::sleep(Duration::from_millis(POLL_MS)).await;
        }
    }

    /// Records that a shard that failed to start will have no connection (so the others
    /// need not wait for it).
    pub fn count_drained(&self) {
        self.drained.fetch_add(1, Ordering::SeqCst);
    }

    /// Records that this shard has no connection left, then resolves once all
    /// `nr_shards` shards have.
    pub async fn drained(&self, nr_shards: usize) {
        self.drained.fetch_add(1, Ordering::SeqCst);
        while self.drained.load(Ordering::SeqCst) < nr_shards {
            glommio::timer::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// One shard's signal of the shutdown flag, for its many waiters (every connection):
/// the shard's listener notices the flag (it polls it anyway) and fires this, and the
/// waiters sleep on it without a timer each. Polling the flag from every connection
/// cost 20 wake-ups a second per connection: 5,000 idle connections took half a core.
/// Fetch long polls wait on it too, so that they answer at once instead of holding
/// the drain until their `max_wait_ms`.
#[derive(Clone)]
pub struct LocalStop(std::rc::Rc<(glommio::sync::Semaphore, std::cell::Cell<bool>)>);

impl Default for LocalStop {
    fn default() -> Self {
        LocalStop(std::rc::Rc::new((glommio::sync::Semaphore::new(0), std::cell::Cell::new(false))))
    }
}

impl LocalStop {
    /// Wakes every waiter of [`LocalStop::requested`], now and later.
    pub fn fire(&self) {
        self.0 .1.set(true);
        self.0 .0.close();
    }

    /// Whether [`LocalStop::fire`] was called.
    pub fn is_fired(&self) -> bool {
        self.0 .1.get()
    }

    /// Resolves once [`LocalStop::fire`] was called.
    pub async fn requested(&self) {
        // No permit is ever given: this returns (with an error) once closed.
        let _ = self.0 .0.acquire(1).await;
    }
}

/// The cross-shard start barrier; cheap to clone, shared by all shards.
#[derive(Clone, Default)]
pub struct Startup {
    ready: Arc<AtomicUsize>,
}

impl Startup {
    /// Records that this shard has recovered and serves its mesh, then resolves once
    /// all `nr_shards` shards have (`true`), or once shutdown is requested, e.g.
    /// because a shard failed to start (`false`).
    pub async fn ready(&self, nr_shards: usize, shutdown: &Shutdown) -> bool {
        self.ready.fetch_add(1, Ordering::SeqCst);
        loop {
            if shutdown.is_requested() {
                return false;
            }
            if self.ready.load(Ordering::SeqCst) >= nr_shards {
                return true;
            }
            glommio::timer::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Whether all `nr_shards` shards have recovered and serve their mesh.
    pub fn all_ready(&self, nr_shards: usize) -> bool {
        self.ready.load(Ordering::SeqCst) >= nr_shards
    }
}
