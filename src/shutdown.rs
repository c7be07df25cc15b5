//! Clean shutdown across shards. The main thread waits for SIGINT/SIGTERM and sets
//! a flag shared by every shard, and wakes each shard's listener, which waits for it
//! ([`Shutdown::requested`]) and tells its connections through a [`LocalStop`]. Each
//! shard stops accepting, lets its connections finish their in-flight requests, then
//! waits until *every* shard has drained before closing its logs, since a draining
//! connection may still append to another shard's partitions.
//!
//! Start-up has its barrier too ([`Startup`]): no shard listens before every shard has
//! recovered its logs, so a client that connects early is refused by the kernel
//! rather than accepted by a shard that then cannot serve its partitions.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_channel::oneshot;

/// The process-wide shutdown state; cheap to clone, shared by all shards.
#[derive(Clone, Default)]
pub struct Shutdown {
    requested: Arc<AtomicBool>,
    /// One per pending [`Shutdown::requested`]: dropped (which wakes its receiver, on
    /// whichever executor awaits it) by [`Shutdown::request`].
    waiters: Arc<Mutex<Vec<oneshot::Sender<()>>>>,
    drained: Arc<AtomicUsize>,
}

impl Shutdown {
    /// Asks every shard to stop, and wakes every [`Shutdown::requested`] (called from
    /// the signal thread, or from a shard that failed to start).
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        // Dropping a sender wakes its receiver (`Canceled`). A waiter that registers
        // after this drain sees the flag, which was set before the lock was taken.
        let waiters = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|e| e.into_inner()));
        drop(waiters);
    }

    /// Whether shutdown was requested.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Resolves once shutdown is requested. Woken by [`Shutdown::request`], with no
    /// timer: an idle shard is not woken to look at the flag. (It was polled every
    /// 50 ms: 20 wake-ups a second per shard.)
    pub async fn requested(self) {
        if self.is_requested() {
            return;
        }
        let (sender, receiver) = oneshot::channel();
        {
            let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            // Waiters dropped before shutdown (a listener's accept that won the race
            // registers a new one each time) leave their sender behind: drop those.
            waiters.retain(|w| !w.is_canceled());
            waiters.push(sender);
        }
        // Registered before this load: a request after it drains the new sender.
        if self.is_requested() {
            return;
        }
        let _ = receiver.await;
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
/// the shard's listener is woken by the flag ([`Shutdown::requested`]) and fires this, and the
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_is_woken_from_another_thread_without_polling() {
        let shutdown = Shutdown::default();
        let waiter = shutdown.clone();
        let executor = std::thread::spawn(move || {
            glommio::LocalExecutorBuilder::default()
                .spawn(move || waiter.requested())
                .unwrap()
                .join()
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(200));
        assert!(!executor.is_finished());
        shutdown.request();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !executor.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(executor.is_finished(), "the waiting executor was not woken in 10 s");
        executor.join().unwrap();
        // Resolves at once when already requested.
        futures_lite::future::block_on(shutdown.clone().requested());
    }

    #[test]
    fn abandoned_waiters_are_dropped_when_a_new_one_registers() {
        let shutdown = Shutdown::default();
        for _ in 0..100 {
            // Polled once (registers its sender), then dropped, as an accept that
            // won the race drops its shutdown future.
            let mut waiter = Box::pin(shutdown.clone().requested());
            assert!(futures_lite::future::block_on(futures_lite::future::poll_once(&mut waiter))
                .is_none());
        }
        assert_eq!(shutdown.waiters.lock().unwrap().len(), 1);
        shutdown.request();
        assert_eq!(shutdown.waiters.lock().unwrap().len(), 0);
    }
}
