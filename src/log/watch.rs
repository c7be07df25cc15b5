//! Single-threaded wake-up primitives of a [`super::PartitionLog`] (shard-local, `!Send`):
//! [`HwWatch`] publishes the high watermark to appenders and Fetch long-polls, [`Notify`]
//! wakes the writer task.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// The high watermark plus the wakers waiting for it to move (or for the log to fail or
/// close). Lives on the partition's owning shard.
#[derive(Debug, Default)]
pub struct HwWatch {
    hw: Cell<i64>,
    /// Bumped on every wake-all; a waiter registered in an older generation re-registers.
    generation: Cell<u64>,
    /// Set when the log failed or closed: every waiter resolves.
    stopped: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl HwWatch {
    /// A watch starting at `hw`.
    pub fn new(hw: i64) -> Self {
        let w = HwWatch::default();
        w.hw.set(hw);
        w
    }

    /// Current high watermark (exclusive).
    pub fn get(&self) -> i64 {
        self.hw.get()
    }

    /// True once [`Self::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stopped.get()
    }

    /// Moves the high watermark and wakes every waiter.
    pub fn advance(&self, hw: i64) {
        self.hw.set(hw);
        self.wake_all();
    }

    /// Resolves every current and future waiter (log failed or closed).
    pub fn stop(&self) {
        self.stopped.set(true);
        self.wake_all();
    }

    fn wake_all(&self) {
        self.generation.set(self.generation.get() + 1);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for w in wakers {
            w.wake();
        }
    }

    /// Future resolving once `hw > offset` or the watch is stopped. Cancel-safe: dropping
    /// it only leaves a stale waker, discarded at the next wake-all.
    pub fn wait_above(self: &Rc<Self>, offset: i64) -> WaitAbove {
        WaitAbove { watch: self.clone(), offset, registered: None }
    }
}

/// See [`HwWatch::wait_above`].
#[derive(Debug)]
pub struct WaitAbove {
    watch: Rc<HwWatch>,
    offset: i64,
    registered: Option<u64>,
}

impl Future for WaitAbove {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let w = &self.watch;
        if w.hw.get() > self.offset || w.stopped.get() {
            return Poll::Ready(());
        }
        // Register the waker of *this* poll: the future may have moved to another task
        // since its last poll (the shard polls an append once, then hands it to a
        // spawned task), and a stale waker would leave it asleep forever.
        let gen = w.generation.get();
        let mut wakers = w.wakers.borrow_mut();
        if self.registered != Some(gen) || !wakers.iter().any(|k| k.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        drop(wakers);
        self.registered = Some(gen);
        Poll::Pending
    }
}

/// A one-consumer wake-up flag (like tokio's `Notify` with a single waiter). Lives on
/// one shard (the waker and the waiter are tasks of the same executor).
#[derive(Debug, Default)]
pub struct Notify {
    flag: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Notify {
    /// Sets the flag and wakes the waiter.
    pub fn notify(&self) {
        self.flag.set(true);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// Resolves once the flag is set, clearing it.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.flag.replace(false) {
                Poll::Ready(())
            } else {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}
