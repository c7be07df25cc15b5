//! Orders group responses after the group-state writes started before them.
//!
//! The group coordinator changes its memory at once and hands back the records to
//! persist; a response that shows a change (a SyncGroup assignment, a committed
//! offset) must not leave before the record is written, or a crash right after could
//! forget what a client was told. Within one request that order is easy; across
//! requests it is this barrier: every write gets a sequence number when it starts, and
//! a response waits until every write started before it has finished (writes to
//! different offsets partitions may finish out of order).
//!
//! Lives on: one shard, inside its `GroupHost`.

use std::cell::RefCell;
use std::collections::BTreeSet;

use futures_channel::oneshot;

/// Sequence numbers of the group-state writes of one shard: started, and finished.
#[derive(Default)]
pub struct AppendBarrier {
    inner: RefCell<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Writes started so far; the last one has this number (numbers start at 1).
    started: u64,
    /// Every write numbered up to this one, inclusive, has finished.
    finished_upto: u64,
    /// Finished writes above `finished_upto + 1` (an earlier one is still running).
    finished_ahead: BTreeSet<u64>,
    /// Responses waiting: (the writes they need, inclusive, their wake-up).
    waiters: Vec<(u64, oneshot::Sender<()>)>,
}

impl AppendBarrier {
    /// Numbers a write that starts now.
    pub fn start(&self) -> u64 {
        let mut inner = self.inner.borrow_mut();
        inner.started += 1;
        inner.started
    }

    /// Records that write `seq` finished (written or failed: either way nobody waits on
    /// it any longer) and wakes the responses that no longer wait for anything.
    pub fn finish(&self, seq: u64) {
        let woken = {
            let mut guard = self.inner.borrow_mut();
            let inner = &mut *guard;
            if seq <= inner.finished_upto {
                return;
            }
            inner.finished_ahead.insert(seq);
            while inner.finished_ahead.remove(&(inner.finished_upto + 1)) {
                inner.finished_upto += 1;
            }
            let upto = inner.finished_upto;
            let (ready, waiting): (Vec<_>, Vec<_>) =
                inner.waiters.drain(..).partition(|(need, _)| *need <= upto);
            inner.waiters = waiting;
            ready
        };
        for (_, tx) in woken {
            let _ = tx.send(());
        }
    }

    /// What a response created now must wait for: `None` if every write started so far
    /// has finished, else a receiver that resolves once they have.
    pub fn wait_for_started(&self) -> Option<oneshot::Receiver<()>> {
        let mut inner = self.inner.borrow_mut();
        let need = inner.started;
        if need <= inner.finished_upto {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        inner.waiters.push((need, tx));
        Some(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(rx: &mut oneshot::Receiver<()>) -> bool {
        matches!(rx.try_recv(), Ok(Some(())))
    }

    #[test]
    fn a_response_waits_for_every_write_started_before_it() {
        let b = AppendBarrier::default();
        assert!(b.wait_for_started().is_none());
        let w1 = b.start();
        let w2 = b.start();
        let mut after_both = b.wait_for_started().unwrap();
        let w3 = b.start();
        let mut after_three = b.wait_for_started().unwrap();
        // The second finishes first: nothing is durable up to it yet.
        b.finish(w2);
        assert!(!resolved(&mut after_both));
        b.finish(w1);
        assert!(resolved(&mut after_both));
        assert!(!resolved(&mut after_three));
        b.finish(w3);
        assert!(resolved(&mut after_three));
        assert!(b.wait_for_started().is_none());
    }

    #[test]
    fn writes_started_after_a_response_do_not_hold_it() {
        let b = AppendBarrier::default();
        let w1 = b.start();
        let mut response = b.wait_for_started().unwrap();
        let w2 = b.start();
        b.finish(w1);
        assert!(resolved(&mut response));
        // A finish reported twice changes nothing.
        b.finish(w1);
        b.finish(w2);
        assert!(b.wait_for_started().is_none());
    }
}
